import { DomainError } from '../errors.js';
import type { LedgerCtx } from '../ledger/context.js';
import { heldAuthorization } from '../ledger/held-part.js';
import { lockedTrade } from '../ledger/locks.js';
import { clear, refund } from '../ledger/settle.js';
import { toMajor } from '../money/currency.js';
import { claim, type LinkAnswer, type LinkRecord } from './link.js';

/**
 * Financial advices of the card network link (0220, decisions §12.4): the clearing of an approved
 * 0100, and a refund of a cleared payment, each named by field 90, by the sandbox's `clear` and
 * `refund` verbs, and claimed once with the answer. A clearing above what is held, of an
 * authorization that holds nothing any more, or with no original, is a forced post (§12.7): not yet
 * supported, answered `12` with nothing written.
 */

export interface LinkFinancialInput {
  record: LinkRecord;
  /** The authorization (clearing) or payment (refund) field 90 names. */
  tradeId: string;
  cardId: string;
  /** Field 4, in minor units of the original's transaction currency. */
  amount: number;
}

/** Field 4 in the original's transaction currency → minor units of the card's, at the original's own ratio. */
const inCardCurrency = (amount: number, trade: { amount: number; txn_amount: number }) =>
  trade.txn_amount === trade.amount || trade.txn_amount === 0 ? amount : Math.round((amount * trade.amount) / trade.txn_amount);

/**
 * A post the rules would refuse (above the hold, nothing held any more): a forced post (§12.7), not
 * yet supported. Thrown to roll back, so that nothing is stored: the transport answers `12`, and a
 * retransmission once forced posts exist is posted.
 */
export class ForcedPostNotSupported extends Error {
  override name = 'ForcedPostNotSupported';
}

/** Refusals of the verbs before any write, as field 39. */
function refusal(err: unknown): LinkAnswer {
  if (err instanceof DomainError && err.kind === 'tradeState') throw new ForcedPostNotSupported();
  if (err instanceof DomainError && err.kind === 'incorrectAmount') return { code: '13' };
  throw err;
}

/** An 0220 clearing an approved 0100: the payment of field 4 (at most what is held), the rest of the hold released. */
export async function linkClear({ ctx, input }: { ctx: LedgerCtx; input: LinkFinancialInput }): Promise<LinkAnswer> {
  let answer: LinkAnswer;
  try {
    const { auth, card } = await heldAuthorization(ctx, { tradeId: input.tradeId }, 'cleared');
    const amount = inCardCurrency(input.amount, auth);
    if (amount <= 0) answer = { code: '13' };
    else if (amount > auth.held) throw new ForcedPostNotSupported();
    else {
      const payment = await clear({ ctx, input: { tradeId: input.tradeId, amount: toMajor(amount, card.currency) } });
      answer = { code: '00', authCode: payment.authCode, tradeId: payment.tradeId };
    }
  } catch (err) {
    if (err instanceof ForcedPostNotSupported) throw err;
    answer = refusal(err);
  }
  await claim(ctx, input.record, input.cardId, answer);
  return answer;
}

/** An 0220 with processing code 20: a refund of field 4 of the payment field 90's clearing produced. */
export async function linkRefund({ ctx, input }: { ctx: LedgerCtx; input: LinkFinancialInput }): Promise<LinkAnswer> {
  let answer: LinkAnswer;
  try {
    const { trade, card } = await lockedTrade(ctx, input.tradeId);
    const amount = inCardCurrency(input.amount, trade);
    if (amount <= 0) answer = { code: '13' };
    else {
      const record = await refund({ ctx, input: { tradeId: input.tradeId, amount: toMajor(amount, card.currency) } });
      answer = { code: '00', authCode: record.authCode, tradeId: record.tradeId };
    }
  } catch (err) {
    answer = refusal(err);
  }
  await claim(ctx, input.record, input.cardId, answer);
  return answer;
}
