import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { askEndpoint, endpointResult } from '../authorization-endpoint/ask.js';
import type { MerchantCtx, Services } from '../context.js';
import { newId } from '../db/ids.js';
import { isUniqueViolation } from '../db/index.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { fingerprint, type RequestKey } from '../idempotency/keys.js';
import { type AuthorizeInput, authorize, EndpointNotAsked, type EndpointVerdict, endpointRequest } from '../ledger/authorize.js';
import type { AuthorizationEndpoint } from '../merchants/directory.js';
import { runVerb } from '../runner.js';
import type { TradeRecord } from '../trades/record.js';

/** How long past its deadline a retry waits for the first request's decision before it applies the default itself. */
const GRACE_MS = 2000;
const POLL_MS = 25;

export interface AuthorizeKey extends Omit<RequestKey, 'merchantId'> {
  onReplay?: () => void;
  /** The request's address: the typed actor's origin (a security freeze's audit record names it). */
  origin?: string;
}

/**
 * An authorization for a merchant with a real-time endpoint (decisions §11):
 *
 * 1. The request's randomStr is claimed (`authorization_requests`) with the id the authorization
 *    will have. A retry that finds the claim taken, on any instance, does not ask again: it waits
 *    for the first request's answer and replays it, or, if none comes by the deadline and a grace
 *    period (the first request's process died), applies the endpoint's recorded answer or the
 *    merchant's default as a timeout: one decision either way.
 * 2. The program's rules are checked without locks; the endpoint is asked only if they approve.
 * 3. The endpoint is asked outside any transaction: a slow merchant holds no lock.
 * 4. The authorization verb runs once (by randomStr) with the answer, deciding again under the
 *    card's lock: the rules first, then the endpoint's answer (or the default when it gave none).
 */
export async function authorizeWithEndpoint(
  svc: Services,
  merchantId: string,
  endpoint: AuthorizationEndpoint,
  key: AuthorizeKey,
  input: AuthorizeInput,
): Promise<TradeRecord> {
  const run = (verdict: NonNullable<AuthorizeInput['endpoint']>) =>
    runVerb(svc, authorize, {
      input: { ...input, endpoint: verdict },
      actor: { kind: 'merchant', appId: merchantId, origin: key.origin ?? 'unknown' },
      merchantId,
      once: key,
    });
  const now = svc.clock();
  const tradeId = newId('trd');
  const deadline = now + endpoint.timeoutMs;
  const fp = fingerprint({ ...key, merchantId });
  const claim = (w: Kysely<DB>) =>
    w
      .insertInto('authorization_requests')
      .values({
        merchant_id: merchantId,
        random_str: key.randomStr,
        trade_id: tradeId,
        fingerprint: fp,
        outcome: null,
        reason: null,
        endpoint_ms: null,
        deadline_at: deadline,
        created_at: now,
      })
      .execute();
  const claimed = { merchantId, randomStr: key.randomStr, tradeId, deadline };
  // Until the request is sent, on PostgreSQL, the claim and the rules' reads run on one connection
  // of the urgent lane (Database.urgent): under load, the pool's queue (its connections held by
  // transactions waiting for a merchant's funding row) is where the deadline went, and each statement
  // joined that queue again (docs/operations.md, "The authorization endpoint under load").
  const lane = svc.database.urgent?.();
  const beforeAsk = <T>(fn: (db: Kysely<DB>) => Promise<T>): Promise<T> => (lane ? lane.connection().execute(fn) : fn(svc.database.db));
  const first = await beforeAsk(async (db) => {
    try {
      await (lane ? claim(db) : svc.database.write(claim));
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      return null;
    }
    const checking = svc.clock();
    svc.metrics.endpointPhase('claim', (checking - now) / 1000);
    try {
      const request = await endpointRequest(readCtx(svc, merchantId, checking, db), input, tradeId);
      if (request) svc.metrics.endpointPhase('rules', (svc.clock() - checking) / 1000);
      return { request, failed: null };
    } catch (err) {
      // The claim is released below, once this connection is back in the pool.
      return { request: null, failed: { err } };
    }
  });
  if (first === null) {
    const answered = await awaitFirst(svc, merchantId, endpoint, key, fp, run);
    // The claim is gone (reaped with its key): this request is new after all.
    return answered ?? authorizeWithEndpoint(svc, merchantId, endpoint, key, input);
  }

  try {
    if (first.failed) throw first.failed.err;
    // The rules are checked without locks, and the endpoint asked only about what they would approve;
    // if they approve under the lock what they declined unlocked (the card changed meanwhile), the
    // verb says so and the endpoint has its say (rare: a state that flips three times is an error).
    for (let attempt = 1; ; attempt++) {
      const request =
        attempt === 1 ? first.request : await endpointRequest(readCtx(svc, merchantId, svc.clock(), svc.database.db), input, tradeId);
      const verdict: NonNullable<AuthorizeInput['endpoint']> = request
        ? await ask(svc, endpoint, request, claimed)
        : { asked: false, tradeId };
      try {
        return await run(verdict);
      } catch (err) {
        if (!(err instanceof EndpointNotAsked) || attempt === 3) throw err;
      }
    }
  } catch (err) {
    await releaseClaim(svc, claimed);
    throw err;
  }
}

/**
 * A request that failed without an answer stored for its randomStr (a bad field, a database fault)
 * leaves no claim: its retry is a new request, not one to wait for. A stored answer keeps the claim.
 */
async function releaseClaim(svc: Services, claim: { merchantId: string; randomStr: string }): Promise<void> {
  try {
    const answered = await svc.database.db
      .selectFrom('idempotency_keys')
      .select('random_str')
      .where('merchant_id', '=', claim.merchantId)
      .where('random_str', '=', claim.randomStr)
      .executeTakeFirst();
    if (answered) return;
    await svc.database.write((w) =>
      w
        .deleteFrom('authorization_requests')
        .where('merchant_id', '=', claim.merchantId)
        .where('random_str', '=', claim.randomStr)
        .execute(),
    );
  } catch {
    // The database is failing: the claim stays, and a retry waits for its deadline and goes on.
  }
}

/** A context for reads outside a transaction: the pre-check of the rules. */
function readCtx(svc: Services, merchantId: string, now: number, db: Kysely<DB>): MerchantCtx {
  return { svc, tx: db, now, merchantId, actor: `merchant:${merchantId}`, wake: { worker: false }, afterCommit: () => {} };
}

/** Asks the endpoint about `request` and records its answer with the claim (for a retry that comes after a crash). */
async function ask(
  svc: Services,
  endpoint: AuthorizationEndpoint,
  request: Record<string, unknown>,
  { merchantId, randomStr, tradeId, deadline }: { merchantId: string; randomStr: string; tradeId: string; deadline: number },
): Promise<EndpointVerdict> {
  const now = svc.clock();
  svc.metrics.endpointAsked();
  // The deadline counts from the request's arrival: time spent waiting for locks is the endpoint's
  // time too, and past it the endpoint is not asked at all (its answer could not count).
  if (now >= deadline) {
    svc.metrics.endpointResult('timeout_before_sending');
    return { asked: true, tradeId, outcome: 'timeout', reason: null, latencyMs: endpoint.timeoutMs, fallback: endpoint.fallback };
  }
  const answer = await askEndpoint({
    url: endpoint.url,
    webhookSecret: endpoint.webhookSecret,
    id: tradeId,
    payload: request,
    timeoutMs: Math.max(1, deadline - now),
    env: svc.config.env,
    now,
  });
  if (answer.sentMs !== null) svc.metrics.endpointPhase('connect', answer.sentMs / 1000);
  svc.metrics.endpointResult(endpointResult(answer));
  if (answer.problem) svc.log.warn({ merchantId, tradeId, outcome: answer.outcome, problem: answer.problem }, 'authorization endpoint');
  await svc.database.write((w) =>
    w
      .updateTable('authorization_requests')
      .set({ outcome: answer.outcome, reason: answer.reason, endpoint_ms: answer.latencyMs })
      .where('merchant_id', '=', merchantId)
      .where('random_str', '=', randomStr)
      .execute(),
  );
  return { asked: true, tradeId, outcome: answer.outcome, reason: answer.reason, latencyMs: answer.latencyMs, fallback: endpoint.fallback };
}

/**
 * A retry of a request whose randomStr is claimed: waits for the first request's stored answer (then
 * replays it) or its deadline and a grace period (then applies what the endpoint said, if it was
 * recorded, or a timeout).
 */
async function awaitFirst(
  svc: Services,
  merchantId: string,
  endpoint: AuthorizationEndpoint,
  key: AuthorizeKey,
  fp: string,
  run: (verdict: NonNullable<AuthorizeInput['endpoint']>) => Promise<TradeRecord>,
): Promise<TradeRecord | null> {
  const db = svc.database.db;
  for (let first = true; ; first = false) {
    const [claim, answered] = await Promise.all([
      db
        .selectFrom('authorization_requests')
        .selectAll()
        .where('merchant_id', '=', merchantId)
        .where('random_str', '=', key.randomStr)
        .executeTakeFirst(),
      db
        .selectFrom('idempotency_keys')
        .select('response_status')
        .where('merchant_id', '=', merchantId)
        .where('random_str', '=', key.randomStr)
        .executeTakeFirst(),
    ]);
    if (!claim && !answered) return null;
    // Another request with this randomStr: refused at once, never decided on the first one's claim.
    if (first && claim && claim.fingerprint !== fp)
      throw new DomainError('duplicateRequest', 'randomStr: already used for a different request');
    // The first request has committed (or the key is another request's): the verb's key check
    // replays its answer (or says 1008) before anything is decided.
    if (answered || !claim) return run({ asked: false, tradeId: claim?.trade_id ?? newId('trd') });
    if (svc.clock() > Number(claim.deadline_at) + GRACE_MS) {
      const outcome = claim.outcome ?? 'timeout';
      return run({
        asked: true,
        tradeId: claim.trade_id,
        outcome,
        reason: claim.reason,
        latencyMs: claim.endpoint_ms ?? endpoint.timeoutMs,
        fallback: endpoint.fallback,
      });
    }
    await sleep(POLL_MS);
  }
}
