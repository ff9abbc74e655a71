import type { MerchantCtx } from '../context.js';

/**
 * What every ledger verb is given: a merchant's verb context (the program's fees, rates and BINs
 * are `ctx.svc.config.program`).
 */
export type LedgerCtx = MerchantCtx;
