import type { Static } from 'typebox';
import type { EndpointVerdict, NotAsked } from '../authorization-endpoint/verdict.js';
import type { CardRow } from '../cards/model.js';
import type { CardVerification } from '../cards/verification.js';
import { checkMerchantCountry } from '../codes/countries.js';
import { merchantRemark } from '../codes/merchant-remark.js';
import type { Part, PartRows } from '../db/one-statement.js';
import type { AuthorizationsTable } from '../db/schema.js';
import { invalid } from '../errors.js';
import { exponent, toMinor } from '../money/currency.js';
import { feeFor } from '../money/fees.js';
import type { OperationInput } from '../operation-input.js';
import type { TokenReference } from '../tokens/authorization.js';
import { convertedTxnAmount } from './amounts.js';
import { resolveBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import type { AuthorizeBody } from './schemas.js';

/*
 * An authorization as it is asked (its input, the sandbox's body or the link's message), priced
 * (its amounts, fee and day) and recorded (its `authorizations` row): what the authorization verb
 * (./authorize.ts) and a forced post (./forced.ts) share.
 */

/**
 * An authorization's body (AuthorizeBody: the card, the amount in its currency, the transaction's
 * currency and amount, the acceptor as the network sends it) without the signed envelope, and:
 */
export type AuthorizeInput = OperationInput<Static<typeof AuthorizeBody>> & {
  /**
   * What the merchant's authorization endpoint said (src/sandbox/authorize-with-endpoint.ts), and the id it was
   * told the authorization has; absent when the merchant has no endpoint. `asked: false`: it has
   * one, not asked because the program's rules declined when it was checked.
   */
  endpoint?: EndpointVerdict | NotAsked | undefined;
  /**
   * The card data as the card network link found it (src/card-network/card-data.ts, with the PAN at
   * hand). Without it, the body's `cvv2` and `expiry` (the sandbox's) are checked here, when sent.
   */
  verification?: CardVerification | undefined;
  /** The link's credential-on-file entry mode (field 22 `10x`): exempt from 3-D Secure (decisions §14.5). */
  credentialOnFile?: boolean | undefined;
  /** The link's wallet token, field 48 subelements 33 and 34 (decisions §15.5); the sandbox names it by `tokenId`. */
  tokenReference?: Extract<TokenReference, { tokenReferenceId: string }> | undefined;
  /**
   * What the caller writes with an approval, once its trade has an id and a code: parts of the
   * approval's statement (on PostgreSQL bookAtOnce's one statement), and the check of their rows,
   * which may refuse the approval (all of it rolled back). The link's claim of its message, with its
   * answer (src/card-network/authorize.ts): one round trip fewer an authorization.
   */
  withApproval?: ((trade: ApprovedTrade) => ApprovalWrites) | undefined;
};

/** An approval's trade as withApproval is given it. */
export interface ApprovedTrade {
  id: string;
  auth_code: string;
}

/** What withApproval writes: parts of the approval's statement, and the check of their rows. */
export interface ApprovalWrites {
  parts: Part[];
  check: (rows: PartRows) => void;
}

/** An authorization's amounts and day, worked out from the request and the card. */
export interface Priced {
  amount: number;
  currencyTxn: string;
  txnAmount: number;
  fee: number;
  businessDate: string;
}

export function price(ctx: LedgerCtx, card: CardRow, input: AuthorizeInput): Priced {
  const amount = toMinor(input.amount, card.currency);
  const currencyTxn = input.currencyTxn ?? card.currency;
  exponent(currencyTxn, 'currencyTxn');
  if (currencyTxn === card.currency && input.txnAmount !== undefined && toMinor(input.txnAmount, currencyTxn, 'txnAmount') !== amount) {
    throw invalid('txnAmount', 'must equal amount when currencyTxn is the card’s currency');
  }
  const txnAmount =
    input.txnAmount !== undefined
      ? toMinor(input.txnAmount, currencyTxn, 'txnAmount')
      : convertedTxnAmount(amount, card.currency, currencyTxn, ctx.svc.config.program.fxRates);
  const businessDate = resolveBusinessDate(input.businessDate, ctx.now);
  const fee =
    feeFor(ctx.svc.config.program.fees, 'authorization', amount) +
    (currencyTxn === card.currency ? 0 : feeFor(ctx.svc.config.program.fees, 'authorizationFx', amount));
  checkMerchantCountry(input.merchantCountry);
  return { amount, currencyTxn, txnAmount, fee, businessDate };
}

export type Decision = Pick<AuthorizationsTable, 'approved' | 'decline_reason' | 'decline_code' | 'message'>;

/** The remark as sent, else the acceptor's name and city (as the link's field 43 gives it), else empty. */
export function remarkOf(input: AuthorizeInput): string {
  return input.remark ?? merchantRemark(input);
}

/** The `authorizations` row of a decision: the acceptor as sent, the amounts as priced. */
export function authorizationRow(
  card: CardRow,
  priced: Priced,
  input: AuthorizeInput,
  id: string,
  now: number,
  decision: Decision,
  tokenId: string | null = null,
) {
  return {
    id,
    merchant_id: card.merchant_id,
    card_id: card.id,
    currency: card.currency,
    amount: priced.amount,
    currency_txn: priced.currencyTxn,
    txn_amount: priced.txnAmount,
    mcc: input.mcc ?? null,
    merchant_name: input.merchantName ?? null,
    merchant_city: input.merchantCity ?? null,
    merchant_country: input.merchantCountry ?? null,
    channel: input.channel ?? null,
    ...decision,
    remark: remarkOf(input),
    business_date: priced.businessDate,
    created_at: now,
    endpoint_outcome: input.endpoint?.asked ? input.endpoint.outcome : null,
    endpoint_ms: input.endpoint?.asked ? input.endpoint.latencyMs : null,
    token_id: tokenId,
  };
}
