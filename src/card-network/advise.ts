import type { Services } from '../context.js';
import { ResponseCode } from '../iso8583/response-codes.js';
import type { AuthorizeInput } from '../ledger/authorization-input.js';
import type { LedgerCtx } from '../ledger/context.js';
import { forcedAuthorize } from '../ledger/forced.js';
import { isSuspended } from '../ledger/suspense.js';
import { runVerb } from '../runner.js';
import { authorizeInput } from './authorize.js';
import { adviceMessage, claim, type LinkAnswer, type LinkRecord } from './identity.js';
import { onceByIdentity } from './once.js';

/**
 * An authorization advice (0120, or its repeat 0121; decisions §12.4, §12.7): the network stood in
 * and approved, so it is posted whatever the card's status, controls or balance (a forced post). The
 * card by its PAN (`14` when none); expiry and CVV2 are not checked (the network did), the merchant's
 * endpoint is not asked. Under the class authorization, so a clearing (0220) or reversal (0400/0420)
 * names it in field 90 as it would an 0100.
 */
export async function adviceAnswer(svc: Services, mti: string, fields: Map<number, string>): Promise<LinkAnswer> {
  const pan = fields.get(2);
  const processing = fields.get(3);
  const acquirer = fields.get(32);
  const transmitted = fields.get(7);
  if (!pan || !processing || !acquirer || !transmitted || !fields.has(49) || !fields.has(4)) return { code: ResponseCode.formatError };
  const kind = processing.slice(0, 2);
  if ((kind !== '00' && kind !== '01') || processing.slice(2) !== '0000') return { code: ResponseCode.invalidTransaction };
  return onceByIdentity(
    svc,
    // The card by its PAN, in the stored answer's read.
    { msgClass: 'authorization', mti, fields, what: 'authorization advice', look: { pan, use: async (_db, card) => card } },
    async (record, card) => {
      if (!card) return { code: ResponseCode.noSuchCard };
      const input = authorizeInput(svc, fields, card);
      if ('code' in input) return input;
      return {
        verb: () =>
          runVerb(svc, linkAdvice, {
            input: { record, authorize: input },
            actor: { kind: 'network', peer: acquirer },
            merchantId: card.merchant_id,
          }),
      };
    },
  );
}

/**
 * An authorization advice (0120, decisions §12.4, §12.7): the network stood in and approved, so it is
 * posted, a forced authorization (src/ledger/forced.ts) whatever the card's status, controls or
 * balance, and claimed with its answer in one transaction. Its hold is cleared, reversed or
 * expired as an 0100's.
 */
async function linkAdvice({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: { record: LinkRecord; authorize: AuthorizeInput };
}): Promise<LinkAnswer> {
  const trade = await forcedAuthorize({ ctx, input: { ...input.authorize, message: adviceMessage(input.record) } });
  const answer: LinkAnswer = isSuspended(trade)
    ? { code: ResponseCode.approved, forced: true, exceptionId: trade.exceptionId }
    : { code: ResponseCode.approved, authCode: trade.authCode, tradeId: trade.tradeId, forced: true };
  await claim(ctx, input.record, input.authorize.cardId, answer);
  return answer;
}
