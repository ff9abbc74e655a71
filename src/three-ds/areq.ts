import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { type Actor, type Services, system, type VerbCtx } from '../context.js';
import { databaseFault } from '../db/faults.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import type { RequestKey } from '../idempotency/keys.js';
import { runPrecheck, runVerb } from '../runner.js';
import { authenticate } from './authenticate.js';
import { EXEMPTION } from './card-state.js';
import { decide } from './decide.js';
import { askDecision, type DecisionVerdict } from './decision-endpoint.js';
import { type ARes, ERROR_CODES, ERROR_DESCRIPTIONS, type Erro, type ErrorCode } from './emv-messages.js';
import { cardByPanHash } from './statements.js';
import { type CheckedAReq, echoedIds, validateAReq } from './validate.js';

/** What an AReq got: the ARes, or an Erro. */
export type AcsAnswer = { kind: 'ARes'; message: ARes } | { kind: 'Erro'; message: Erro };

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** An Erro about a message (errorComponent A: the ACS found it); errorDetail names the elements, comma-separated as EMVCo does. */
export function erro(message: unknown, errorCode: ErrorCode, elements: string[], acsTransId?: string): Erro {
  const ids = echoedIds(message);
  return {
    messageType: 'Erro',
    messageVersion: ids.messageVersion ?? '2.2.0',
    threeDSServerTransID: ids.threeDSServerTransID ?? NIL_UUID,
    ...(ids.dsTransID ? { dsTransID: ids.dsTransID } : {}),
    ...(acsTransId ? { acsTransID: acsTransId } : {}),
    errorCode,
    errorComponent: 'A',
    errorDescription: ERROR_DESCRIPTIONS[errorCode],
    errorDetail: elements.join(',').slice(0, 2048),
    errorMessageType: 'AReq',
  };
}

/**
 * The card a number is, found by its keyed hash (as the card network link finds it: the number itself
 * is never looked up or kept), with whether its merchant has a decision endpoint.
 */
async function cardByAcctNumber(
  svc: Services,
  db: Kysely<DB>,
  pan: string,
): Promise<{ id: string; merchant_id: string; decision_url: string | null } | null> {
  const hash = await svc.vault.hash(db, pan);
  const row = (await cardByPanHash.execute(db, { hash })).rows[0];
  return row ?? null;
}

/** Where the challenge of the merchant's cardholders runs: its first mapped host over HTTPS, else the public URL (as the card page). */
async function challengeUrl(svc: Services, merchantId: string): Promise<string> {
  const mapped = await svc.domains.primaryHost(merchantId);
  const port = svc.config.httpsPort;
  const base = mapped ? `https://${mapped.host}${mapped.tls && port !== null && port !== 443 ? `:${port}` : ''}` : svc.config.publicUrl;
  return `${base}/3ds/challenge`;
}

/**
 * When the card's merchant has a decision endpoint and the program's checks would not refuse the
 * AReq (a pre-check without locks, decisions §14.3.1–3), asks the endpoint (1 s) and gives its
 * verdict; otherwise null, and the program decides. Outside any transaction.
 */
async function endpointVerdict(svc: Services, areq: CheckedAReq, cardId: string, merchantId: string, acsTransId: string) {
  const merchant = await svc.database.read((db) =>
    db.selectFrom('merchants').select(['three_ds_decision_url', 'webhook_secret_enc']).where('id', '=', merchantId).executeTakeFirst(),
  );
  if (!merchant?.three_ds_decision_url) return null;
  const pre = await runPrecheck(svc, (ctx) => decide(ctx, { areq, cardId, verdict: null }, 'precheck'), { actor: system('ds') });
  if (pre.outcome.kind !== 'ask' || !pre.facts) return null;
  const { card, purchase } = pre.facts;
  const webhookSecret = svc.box.open(merchant.webhook_secret_enc, `webhook-secret:${merchantId}`);
  return askDecision(svc, { url: merchant.three_ds_decision_url, webhookSecret }, acsTransId, {
    cardId: card.id,
    holderId: card.holder_id,
    amount: purchase.amount === null ? null : purchase.amount / 10 ** (purchase.exponent ?? 2),
    currency: purchase.currency,
    merchantName: areq.merchantName ?? null,
    mcc: areq.mcc ?? null,
    merchantCountryCode: areq.merchantCountryCode ?? null,
    deviceChannel: areq.deviceChannel,
    messageCategory: areq.messageCategory,
    threeDSRequestorChallengeInd: areq.threeDSRequestorChallengeInd ?? null,
    exemptionEligible: purchase.eur !== null && purchase.eur <= EXEMPTION.maxAmount,
    occurredAt: new Date(svc.clock()).toISOString(),
  });
}

/**
 * The ACS's one path for an AReq, whoever carries it (the listener for the DS, the sandbox's
 * authenticate, `cardprogram threeds areq` through the listener): checked element by element
 * (Erro 101/102/201/202/203), the card found by the number's keyed hash, the merchant's decision
 * endpoint asked when it applies, then decided and recorded in one transaction (./authenticate.ts).
 * A database that cannot answer gives Erro 404 (the transient failure of decisions §14.1) and
 * nothing is written. Throws only a DomainError of a signed caller's run (the sandbox's 1008).
 */
export async function processAReq(
  svc: Services,
  message: unknown,
  opts: { actor: Actor | string; once?: Omit<RequestKey, 'merchantId'> & { onReplay?: () => void }; merchantId?: string },
): Promise<AcsAnswer> {
  const started = performance.now();
  const checked = validateAReq(message, svc.config.env, publicOrigin(svc.config.publicUrl));
  if ('refusal' in checked) {
    svc.metrics.threeDsError(checked.refusal.errorCode);
    return { kind: 'Erro', message: erro(message, checked.refusal.errorCode, checked.refusal.elements) };
  }
  const areq = checked.areq;
  const acsTransId = randomUUID();
  try {
    const card = await svc.database.read((db) => cardByAcctNumber(svc, db, areq.acctNumber));
    let verdict: DecisionVerdict | null = null;
    let acsUrl: string | null = null;
    if (card) {
      acsUrl = await challengeUrl(svc, card.merchant_id);
      // Most merchants have no decision endpoint: then nothing more is read before the decision.
      if (card.decision_url !== null) verdict = await endpointVerdict(svc, areq, card.id, card.merchant_id, acsTransId);
    }
    const result = await runVerb(svc, authenticate, {
      input: { acsTransId, areq, cardId: card?.id ?? null, verdict, acsUrl },
      actor: opts.actor,
      ...(opts.merchantId ? { merchantId: opts.merchantId } : {}),
      ...(opts.once ? { once: opts.once } : {}),
    });
    svc.metrics.threeDsAuthentication(result.transStatus, result.reason ?? '', (performance.now() - started) / 1000);
    return { kind: 'ARes', message: result.ares };
  } catch (err) {
    // A signed caller's own refusal (the sandbox's randomStr reused with another body: 1008) is its to answer.
    if (err instanceof DomainError) throw err;
    const fault = databaseFault(err);
    if (fault) svc.log.warn({ acsTransId, reason: fault.reason }, '3-D Secure: the database could not answer an AReq (Erro 404)');
    else
      svc.log.error(
        { acsTransId, err: { name: (err as Error)?.name, message: (err as Error)?.message } },
        '3-D Secure: an AReq failed (Erro 404)',
      );
    svc.metrics.threeDsError(ERROR_CODES.transientFailure);
    return { kind: 'Erro', message: erro(message, ERROR_CODES.transientFailure, ['ACS'], acsTransId) };
  }
}

/** The origin of the service's public URL (validated at start), for the sandbox's own notificationURL. */
function publicOrigin(publicUrl: string): string | undefined {
  try {
    return new URL(publicUrl).origin;
  } catch {
    return undefined;
  }
}
