import { askEndpoint, endpointResult } from '../callbacks/authorization-request.js';
import type { CardRow } from '../cards/model.js';
import type { MerchantCtx, Services } from '../context.js';
import { newId } from '../db/ids.js';
import { DomainError } from '../errors.js';
import { ResponseCode } from '../iso8583/response-codes.js';
import { type AuthorizeInput, EndpointNotAsked, type EndpointVerdict, endpointRequest } from '../ledger/authorize.js';
import {
  DeadlinePassed,
  type DecisionGate,
  type LinkAnswer,
  type LinkIdentity,
  LinkReplay,
  linkAdvice,
  linkAuthorize,
  linkIdentity,
  storedAnswer,
} from '../network/link.js';
import { runVerb } from '../runner.js';
import { acceptorOf, acceptorRemark, channelOf, currencyCode, linkAmounts } from './amounts.js';
import { cardByPan, cardVerification, contentHash, storedCopy, subelements } from './card-data.js';

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

/**
 * Response code of a failure of the decision that committed nothing (decisions §12.5): the verbs'
 * refusals before any write, a database that cannot be reached (91), anything else 96.
 */
export function failureCode(err: unknown): string {
  if (err instanceof DeadlinePassed) return ResponseCode.notInTime;
  if (!(err instanceof DomainError)) return ResponseCode.systemError;
  switch (err.kind) {
    case 'incorrectAmount':
      return ResponseCode.invalidAmount;
    case 'unsupportedCurrency':
      return ResponseCode.invalidTransaction;
    case 'validation':
      return ResponseCode.formatError;
    case 'cardNotFound':
      return ResponseCode.noSuchCard;
    case 'cardStatus':
      return ResponseCode.restrictedCard;
    case 'unavailable':
      return ResponseCode.notInTime;
    default:
      return ResponseCode.systemError;
  }
}

/** The authorization's input from the message and its card. */
function authorizeInput(svc: Services, fields: Map<number, string>, card: CardRow): AuthorizeInput | { code: string } {
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

/** The merchant's real-time endpoint's verdict, asked with what is left of the deadline (decisions §12.8), or null without one. */
async function endpointVerdict(
  svc: Services,
  card: CardRow,
  input: AuthorizeInput,
  deadline: number,
): Promise<EndpointVerdict | { asked: false; tradeId: string } | undefined> {
  const merchant = await svc.merchants.get(card.merchant_id);
  const endpoint = merchant?.authorizationEndpoint;
  if (!endpoint) return undefined;
  const tradeId = newId('trd');
  const now = svc.clock();
  // The rules' reads before the ask go through the urgent lane on PostgreSQL (Database.urgent), as
  // the sandbox's flow does: the pool's queue under load is where an endpoint's deadline went.
  const lane = svc.database.urgent?.();
  const ctx: MerchantCtx = {
    svc,
    tx: lane ?? svc.database.db,
    now,
    merchantId: card.merchant_id,
    actor: 'network',
    wake: { worker: false },
    afterCommit: () => {},
  };
  const request = await endpointRequest(ctx, input, tradeId);
  if (!request) return { asked: false, tradeId };
  svc.metrics.endpointPhase('rules', (svc.clock() - now) / 1000);
  svc.metrics.endpointAsked();
  const left = deadline - svc.clock() - DECISION_MARGIN_MS;
  if (left <= 0) {
    svc.metrics.endpointResult('timeout_before_sending');
    return { asked: true, tradeId, outcome: 'timeout', reason: null, latencyMs: 0, fallback: endpoint.fallback };
  }
  const answer = await askEndpoint({
    url: endpoint.url,
    webhookSecret: endpoint.webhookSecret,
    id: tradeId,
    payload: request,
    timeoutMs: Math.min(endpoint.timeoutMs, left),
    env: svc.config.env,
    now,
  });
  if (answer.sentMs !== null) svc.metrics.endpointPhase('connect', answer.sentMs / 1000);
  svc.metrics.endpointResult(endpointResult(answer));
  if (answer.problem)
    svc.log.warn({ merchantId: card.merchant_id, tradeId, outcome: answer.outcome, problem: answer.problem }, 'authorization endpoint');
  return { asked: true, tradeId, outcome: answer.outcome, reason: answer.reason, latencyMs: answer.latencyMs, fallback: endpoint.fallback };
}

/**
 * An 0100 or 0200 (or its repeat 0101, 0201), decided (decisions §12.4–12.8): the card by its PAN, expiry and
 * CVV2, then the sandbox's decision path (src/network/link.ts → authorize), the merchant's
 * endpoint asked with what is left of the deadline. The answer's code and, on approval, field 38
 * and (balance inquiry) field 54. Retransmissions get the stored answer.
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
  const stan = fields.get(11) as string;
  if (!pan || !processing || !acquirer || !transmitted || !fields.has(49)) return { code: ResponseCode.formatError };
  const kind = processing.slice(0, 2);
  if (!AUTH_PROCESSING.has(kind) || processing.slice(2) !== '0000') return { code: ResponseCode.invalidTransaction };
  if (kind !== '31' && !fields.has(4)) return { code: ResponseCode.formatError };
  if (!ENTRY_MODES.has(fields.get(22)?.slice(0, 2) ?? '')) return { code: ResponseCode.formatError };

  // An 0200 (single message) is decided as an 0100, and on approval cleared at once.
  const financial = mti.startsWith('02');
  const identity = linkIdentity(financial ? 'financial' : 'authorization', acquirer, stan, transmitted);
  const hash = await contentHash(svc, fields);
  const stored = await storedAnswer(svc.database.db, identity, hash);
  if (stored) return stored;
  // A copy of a message still being decided here joins its decision: the merchant's endpoint is
  // asked once. (Across instances the claim decides: src/network/link.ts.)
  const key = `${identity.msgClass}\n${identity.acquirer}\n${identity.stan}\n${identity.transmitted}\n${hash}`;
  const pending = deciding(svc);
  const running = pending.get(key);
  if (running) {
    gate.join(running.gate);
    return running.answer;
  }
  const answer = decide(svc, { mti, fields, arrived, deadline, pan, kind, financial, identity, hash, gate });
  pending.set(key, { answer, gate });
  return answer.finally(() => pending.delete(key));
}

/** Decisions in progress in this process, by identity and content, with their gates. */
type Deciding = Map<string, { answer: Promise<LinkAnswer>; gate: DecisionGate }>;
const inProgress = new WeakMap<Services, Deciding>();
function deciding(svc: Services): Deciding {
  const map = inProgress.get(svc) ?? (new Map() as Deciding);
  inProgress.set(svc, map);
  return map;
}

interface Pending {
  mti: string;
  fields: Map<number, string>;
  arrived: number;
  deadline: number;
  pan: string;
  kind: string;
  financial: boolean;
  identity: LinkIdentity;
  hash: string;
  gate: DecisionGate;
}

/** The decision of a message not decided before (authorizationAnswer). */
async function decide(svc: Services, m: Pending): Promise<LinkAnswer> {
  const { mti, fields, arrived, deadline, pan, kind, financial, identity, hash, gate } = m;
  const { stan } = identity;
  const acquirer = fields.get(32) as string;
  const card = await cardByPan(svc, pan);
  if (!card) return { code: ResponseCode.noSuchCard };
  // Checked here, with the PAN at hand; decided (a mismatch declined and counted) under the card's lock.
  const verification = await cardVerification(svc, card, pan, fields, arrived);
  if ('code' in verification) return verification;

  const priced: AuthorizeInput | { code: string } = kind === '31' ? { cardId: card.id, amount: 0 } : authorizeInput(svc, fields, card);
  if ('code' in priced) return priced;
  const input: AuthorizeInput = { ...priced, verification };
  const record = { identity, contentHash: hash, mti, request: storedCopy(fields) };
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
      actor: { kind: 'network', peer: acquirer },
      merchantId: card.merchant_id,
    });
  try {
    for (let attempt = 1; ; attempt++) {
      const verdict = kind === '31' ? undefined : await endpointVerdict(svc, card, input, deadline);
      try {
        return await run(verdict);
      } catch (err) {
        if (!(err instanceof EndpointNotAsked) || attempt === 3) throw err;
      }
    }
  } catch (err) {
    if (err instanceof LinkReplay) return (await storedAnswer(svc.database.db, identity, hash)) ?? { code: ResponseCode.systemError };
    const code = failureCode(err);
    if (code === ResponseCode.systemError)
      svc.log.error({ err: { name: (err as Error).name, message: (err as Error).message }, stan }, 'network link: authorization failed');
    return { code };
  }
}

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
  const stan = fields.get(11) as string;
  if (!pan || !processing || !acquirer || !transmitted || !fields.has(49) || !fields.has(4)) return { code: ResponseCode.formatError };
  const kind = processing.slice(0, 2);
  if ((kind !== '00' && kind !== '01') || processing.slice(2) !== '0000') return { code: ResponseCode.invalidTransaction };
  const identity = linkIdentity('authorization', acquirer, stan, transmitted);
  const hash = await contentHash(svc, fields);
  const stored = await storedAnswer(svc.database.db, identity, hash);
  if (stored) return stored;
  const card = await cardByPan(svc, pan);
  if (!card) return { code: ResponseCode.noSuchCard };
  const input = authorizeInput(svc, fields, card);
  if ('code' in input) return input;
  try {
    return await runVerb(svc, linkAdvice, {
      input: { record: { identity, contentHash: hash, mti, request: storedCopy(fields) }, authorize: input },
      actor: `network:${acquirer}`,
      merchantId: card.merchant_id,
    });
  } catch (err) {
    if (err instanceof LinkReplay) return (await storedAnswer(svc.database.db, identity, hash)) ?? { code: ResponseCode.systemError };
    const code = failureCode(err);
    if (code === ResponseCode.systemError)
      svc.log.error(
        { err: { name: (err as Error).name, message: (err as Error).message }, stan },
        'network link: authorization advice failed',
      );
    return { code };
  }
}
