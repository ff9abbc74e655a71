import type { MerchantCtx } from '../context.js';

/**
 * What every ledger verb is given: a merchant's verb context (the program's fees, rates and BINs
 * are `ctx.svc.config.program`).
 */
export type LedgerCtx = MerchantCtx;

/** The input of the verbs that move an amount on one card (withdraw, transfer, adjust, fee). */
export interface CardAmount {
  cardId: string;
  amount: number;
  remark?: string | undefined;
  businessDate?: string | undefined;
}
