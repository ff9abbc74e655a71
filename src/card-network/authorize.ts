import { askForVerdict, type EndpointVerdict, type NotAsked, withVerdict } from '../authorization-endpoint/verdict.js';
import type { CardRow } from '../cards/model.js';
import { resetVerificationFailures, verifiedBoth } from '../cards/verification.js';
import type { Services } from '../context.js';
import { newId } from '../db/ids.js';
import { CommittedFailure, DomainError } from '../errors.js';
import { balanceField } from '../iso8583/field54.js';
import { ResponseCode } from '../iso8583/response-codes.js';
import type { ApprovedTrade, AuthorizeInput } from '../ledger/authorization-input.js';
import { authorize, declineInquiry, endpointRequest } from '../ledger/authorize.js';
import { balanceInquiry } from '../ledger/balance-inquiry.js';
import type { LedgerCtx } from '../ledger/context.js';
import { lockCard } from '../ledger/locks.js';
import { clear } from '../ledger/settle.js';
import { runPrecheck, runVerb } from '../runner.js';
import { DeclineReason, type DeclineReasonValue } from '../trades/types.js';
import { acceptorOf, acceptorRemark, channelOf, currencyCode, linkAmounts } from './amounts.js';
import { cardVerification, subelements } from './card-data.js';
import { DeadlinePassed, type DecisionGate } from './decision-gate.js';
import { claim, claimWrites, type LinkAnswer, type LinkRecord } from './identity.js';
import { onceByIdentity, type Step } from './once.js';

/**
 * The authorization request (0100, its repeat 0101) and the financial request of a single message
 * (0200, 0201), decisions §12.4–12.8: the handler the link's dispatch calls, and its verb.
 */

/** What the endpoint is left of the deadline at least, and what the decision keeps for itself after it. */
const DECISION_MARGIN_MS = 150;

/** Processing codes of an 0100 (decisions §12.4): purchase, cash, balance inquiry. */
const AUTH_PROCESSING = new Set(['00', '01', '31']);

/**
 * Field 22's PAN entry modes (its first two digits) the link knows (docs/network.md, field 22):
 * key-entered, magnetic stripe, contactless, credential on file, e-commerce, full stripe. Which
 * card checks apply hangs on it (card present or not, §12.13), so an 0100/0200 without it, or with
 * a mode not listed, is `30`: leaving it out or sending an unknown one must not skip the CVV2 and
 * expiry checks (issue 39's attack pass, F2).
 */
const ENTRY_MODES = new Set(['01', '05', '07', '10', '81', '90']);

/** The authorization's input from the message and its card. */
export function authorizeInput(svc: Services, fields: Map<number, string>, card: CardRow): AuthorizeInput | { code: string } {
  const amounts = linkAmounts(fields, card, svc.config.network, svc.config.program.fxRates);
  if ('code' in amounts) return amounts;
  const remark = acceptorRemark(fields);
  const channel = channelOf(fields);
  return {
    cardId: card.id,
    ...amounts,
    ...(fields.has(18) ? { mcc: fields.get(18) as string } : {}),
    ...acceptorOf(fields),
    ...(channel ? { channel } : {}),
    ...(remark ? { remark } : {}),
    ...authenticationOf(fields),
    ...tokenOf(fields),
  };
}

/** A wallet token (decisions §15.5): field 48's subelement 33 (tokenReferenceId) and 34 (tokenRequestorId), checked by the authorization verb. */
function tokenOf(fields: Map<number, string>): Pick<AuthorizeInput, 'tokenReference'> {
  const f48 = fields.get(48);
  const sub = f48 === undefined ? null : subelements(f48);
  const tokenReferenceId = sub?.get('33');
  if (tokenReferenceId === undefined) return {};
  const tokenRequestorId = sub?.get('34');
  return { tokenReference: { tokenReferenceId, ...(tokenRequestorId !== undefined ? { tokenRequestorId } : {}) } };
}

/**
 * 3-D Secure (decisions §14.5): field 48's subelement 42 (ECI) and 43 (the authentication value),
 * checked by the authorization verb; and whether field 22 says credential on file (`10x`, exempt).
 * Field 48 was read before (cardVerification: `30` when it does not parse).
 */
function authenticationOf(fields: Map<number, string>): Pick<AuthorizeInput, 'eci' | 'authenticationValue' | 'credentialOnFile'> {
  const f48 = fields.get(48);
  const sub = f48 === undefined ? null : subelements(f48);
  const eci = sub?.get('42');
  const value = sub?.get('43');
  return {
    ...(eci !== undefined ? { eci } : {}),
    ...(value !== undefined ? { authenticationValue: value } : {}),
    ...(fields.get(22)?.startsWith('10') ? { credentialOnFile: true } : {}),
  };
}

/** The merchant's real-time endpoint's verdict, asked with what is left of the deadline (decisions §12.8), or undefined without one. */
async function endpointVerdict(
  svc: Services,
  card: CardRow,
  input: AuthorizeInput,
  deadline: number,
  acquirer: string,
): Promise<EndpointVerdict | NotAsked | undefined> {
  const merchant = await svc.merchants.get(card.merchant_id);
  const endpoint = merchant?.authorizationEndpoint;
  if (!endpoint) return undefined;
  const tradeId = newId('trd');
  const now = svc.clock();
  // The rules' reads before the ask go through the urgent lane on PostgreSQL (Database.urgent), as
  // the sandbox's flow does: the pool's queue under load is where an endpoint's deadline went.
  const lane = svc.database.urgent?.();
  const request = await runPrecheck(svc, (ctx) => endpointRequest({ ...ctx, merchantId: card.merchant_id }, input, tradeId), {
    actor: { kind: 'network', peer: acquirer },
    merchantId: card.merchant_id,
    now,
    ...(lane ? { db: lane } : {}),
  });
  if (!request) return { asked: false, tradeId };
  svc.metrics.endpointPhase('rules', (svc.clock() - now) / 1000);
  return askForVerdict(svc, endpoint, {
    merchantId: card.merchant_id,
    tradeId,
    request,
    deadline: deadline - DECISION_MARGIN_MS,
    now,
    lateMs: 0,
  });
}

/**
 * An 0100 or 0200 (or its repeat 0101, 0201), decided (decisions §12.4–12.8), once by its identity
 * (./once.ts): the card by its PAN, expiry and CVV2, then the sandbox's decision path (linkAuthorize
 * → src/ledger/authorize.ts), the merchant's endpoint asked with what is left of the deadline. The
 * answer's code and, on approval, field 38 and (balance inquiry) field 54. Retransmissions get the
 * stored answer; a copy still being decided here joins that decision.
 */
export async function authorizationAnswer(
  svc: Services,
  mti: string,
  fields: Map<number, string>,
  arrived: number,
  gate: DecisionGate,
): Promise<LinkAnswer> {
  const deadline = arrived + svc.config.network.deadlineMs;
  const pan = fields.get(2);
  const processing = fields.get(3);
  const acquirer = fields.get(32);
  const transmitted = fields.get(7);
  if (!pan || !processing || !acquirer || !transmitted || !fields.has(49)) return { code: ResponseCode.formatError };
  const kind = processing.slice(0, 2);
  if (!AUTH_PROCESSING.has(kind) || processing.slice(2) !== '0000') return { code: ResponseCode.invalidTransaction };
  if (kind !== '31' && !fields.has(4)) return { code: ResponseCode.formatError };
  if (!ENTRY_MODES.has(fields.get(22)?.slice(0, 2) ?? '')) return { code: ResponseCode.formatError };

  // An 0200 (single message) is decided as an 0100, and on approval cleared at once.
  const financial = mti.startsWith('02');
  return onceByIdentity(
    svc,
    {
      msgClass: financial ? 'financial' : 'authorization',
      mti,
      fields,
      what: 'authorization',
      gate,
      // The card and its data, checked here with the PAN at hand, in the stored answer's read;
      // decided (a mismatch declined and counted) under the card's lock.
      look: { pan, use: async (db, card) => ({ card, verification: await cardVerification(svc, db, card, pan, fields, arrived) }) },
    },
    async (record, found): Promise<Step> => {
      if (!found) return { code: ResponseCode.noSuchCard };
      const { card, verification } = found;
      if ('code' in verification) return verification;
      const priced: AuthorizeInput | { code: string } = kind === '31' ? { cardId: card.id, amount: 0 } : authorizeInput(svc, fields, card);
      if ('code' in priced) return priced;
      const input: AuthorizeInput = { ...priced, verification };
      const run = (verdict: AuthorizeInput['endpoint']) =>
        runVerb(svc, linkAuthorize, {
          input: {
            record,
            kind: kind === '31' ? 'balance' : financial ? 'financial' : 'authorize',
            authorize: { ...input, ...(verdict ? { endpoint: verdict } : {}) },
            deadline: deadline - DECISION_MARGIN_MS / 3,
            gate,
            currencyCode: currencyCode(card, svc.config.network),
          },
          // Typed: a security freeze's audit record names the network (src/cards/verification.ts).
          actor: { kind: 'network', peer: fields.get(32) as string },
          merchantId: card.merchant_id,
        });
      return {
        verb: () =>
          withVerdict(() => (kind === '31' ? Promise.resolve(undefined) : endpointVerdict(svc, card, input, deadline, acquirer)), run),
      };
    },
  );
}

/** Field 39 for a decline reason of the sandbox's (decisions §12.5); a card status decline by the card's status. */
export function declineCode(reason: DeclineReasonValue | undefined, cardStatus: string): string {
  switch (reason) {
    case DeclineReason.cardInactive:
      return cardStatus === 'closed' ? ResponseCode.cardClosed : ResponseCode.restrictedCard;
    case DeclineReason.insufficientFunds:
      return ResponseCode.insufficientFunds;
    case DeclineReason.spendingLimit:
      return ResponseCode.exceedsAmountLimit;
    case DeclineReason.mccNotAllowed:
    case DeclineReason.mccBlocked:
    case DeclineReason.countryNotAllowed:
    case DeclineReason.countryBlocked:
    case DeclineReason.channelNotAllowed:
    case DeclineReason.walletNotAllowed:
      return ResponseCode.notPermitted;
    case DeclineReason.expiryMismatch:
      return ResponseCode.expiredCard;
    case DeclineReason.cvv2Mismatch:
      return ResponseCode.cvv2Mismatch;
    case DeclineReason.authenticationRequired:
      // Additional customer authentication required (decisions §14.5); authentication_failed is a 05.
      return ResponseCode.authenticationRequired;
    default:
      return ResponseCode.doNotHonor;
  }
}

export interface LinkAuthorizeInput {
  record: LinkRecord;
  /** `authorize`: processing codes 00 and 01; `balance`: 31; `financial`: an 0200's 00 and 01, authorized and cleared at once. */
  kind: 'authorize' | 'balance' | 'financial';
  authorize: AuthorizeInput;
  /** When the answer is due (epoch ms): a decision not made by then is rolled back. */
  deadline: number;
  /** Where the decision and the deadline's 91 meet: one of them, never both. */
  gate: DecisionGate;
}

/**
 * An 0100 (decisions §12.4): the sandbox's `authorize` (or `balanceInquiry` for processing 31), and
 * the message's claim with its answer, in one transaction. A decline is committed and answered
 * with its code; a retransmission finds the claim (LinkReplay) and is answered as the first was.
 */
export async function linkAuthorize({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: LinkAuthorizeInput & { currencyCode: string };
}): Promise<LinkAnswer> {
  const cardId = input.authorize.cardId;
  let answer: LinkAnswer;
  // A balance inquiry's card data is checked as an authorization's (it would tell a CVV2 too).
  const declined = input.kind === 'balance' ? await declineInquiry(ctx, input.authorize) : null;
  if (declined) answer = { code: declineCode(declined.reason, 'active'), tradeId: declined.tradeId };
  else if (input.kind === 'balance') {
    try {
      const trade = await balanceInquiry({ ctx, input: { cardId } });
      const card = await lockCard(ctx, cardId);
      if (verifiedBoth(input.authorize.verification) && card.verification_failures !== null)
        await resetVerificationFailures(ctx.tx, cardId);
      answer = {
        code: ResponseCode.approved,
        authCode: trade.authCode,
        tradeId: trade.tradeId,
        balance: balanceField(card.available_balance, input.currencyCode),
      };
    } catch (err) {
      if (!(err instanceof DomainError) || err.kind !== 'cardStatus') throw err;
      // Refused before anything was written: the status decides the code.
      answer = { code: declineCode(DeclineReason.cardInactive, (await lockCard(ctx, cardId)).status) };
    }
  } else {
    // An authorization's approval claims the message in its own statement (one round trip fewer on
    // PostgreSQL): the gate is entered before it, the answer being then decided.
    let claimed = false;
    const withApproval =
      input.kind === 'authorize'
        ? (t: ApprovedTrade) => {
            if (!input.gate.enter(ctx.svc.clock(), input.deadline)) throw new DeadlinePassed();
            claimed = true;
            return claimWrites(ctx, input.record, cardId, { code: ResponseCode.approved, authCode: t.auth_code, tradeId: t.id });
          }
        : undefined;
    try {
      const trade = await authorize({ ctx, input: { ...input.authorize, withApproval } });
      if (claimed) return { code: ResponseCode.approved, authCode: trade.authCode, tradeId: trade.tradeId };
      // A single message (0200): the payment at once, in the same transaction.
      const done = input.kind === 'financial' ? await clear({ ctx, input: { tradeId: trade.tradeId } }) : trade;
      answer = { code: ResponseCode.approved, authCode: done.authCode, tradeId: done.tradeId };
    } catch (err) {
      if (!(err instanceof CommittedFailure)) throw err;
      const detail = err.error.detail as { tradeId?: string; declineReason?: DeclineReasonValue } | undefined;
      answer = { code: declineCode(detail?.declineReason, (await lockCard(ctx, cardId)).status), tradeId: detail?.tradeId };
    }
  }
  if (!input.gate.enter(ctx.svc.clock(), input.deadline)) throw new DeadlinePassed();
  await claim(ctx, input.record, cardId, answer);
  return answer;
}
