import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { EndpointAnswer } from '../authorization-endpoint/ask.js';
import { askForVerdict, type EndpointSettings, type EndpointVerdict, withVerdict } from '../authorization-endpoint/verdict.js';
import type { Actor, Services } from '../context.js';
import { newId } from '../db/ids.js';
import { isUniqueViolation } from '../db/index.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { fingerprint, type RequestKey } from '../idempotency/keys.js';
import type { AuthorizeInput } from '../ledger/authorization-input.js';
import { authorize, endpointRequest } from '../ledger/authorize.js';
import { runPrecheck, runVerb } from '../runner.js';
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
  endpoint: EndpointSettings,
  key: AuthorizeKey,
  input: AuthorizeInput,
): Promise<TradeRecord> {
  const actor = { kind: 'merchant', appId: merchantId, origin: key.origin ?? 'unknown' } as const;
  const run = (verdict: NonNullable<AuthorizeInput['endpoint']>) =>
    runVerb(svc, authorize, {
      input: { ...input, endpoint: verdict },
      actor,
      merchantId,
      once: key,
    });
  const now = svc.clock();
  const tradeId = newId('trd');
  const deadline = now + endpoint.timeoutMs;
  const fp = fingerprint({ ...key, merchantId });
  const claimRow = (w: Kysely<DB>) =>
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
  const claimed = { merchantId, randomStr: key.randomStr, tradeId, deadline, actor };
  // Until the request is sent, on PostgreSQL, the claim and the rules' reads run on one connection
  // of the urgent lane (Database.urgent): under load, the pool's queue (its connections held by
  // transactions waiting for a merchant's funding row) is where the deadline went, and each statement
  // joined that queue again (docs/operations.md, "The authorization endpoint under load"). Without
  // the lane (SQLite), the claim is a statement of the runner and the reads a pre-check's (the read batch).
  const lane = svc.database.urgent?.();
  const claimThenCheck = async (claimIt: () => Promise<unknown>, db?: Kysely<DB>) => {
    try {
      await claimIt();
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      return null;
    }
    const checking = svc.clock();
    svc.metrics.endpointPhase('claim', (checking - now) / 1000);
    try {
      const request = await precheck(checking, db);
      if (request) svc.metrics.endpointPhase('rules', (svc.clock() - checking) / 1000);
      return { request, failed: null };
    } catch (err) {
      // The claim is released below, once this connection is back in the pool.
      return { request: null, failed: { err } };
    }
  };
  // The rules' reads without locks, as the verb would make them (a pre-check: src/runner.ts).
  const precheck = (at: number, db?: Kysely<DB>) =>
    runPrecheck(svc, (ctx) => endpointRequest({ ...ctx, merchantId }, input, tradeId), {
      actor,
      merchantId,
      now: at,
      ...(db ? { db } : {}),
    });
  const first = lane
    ? await lane.connection().execute((db) => claimThenCheck(() => claimRow(db), db))
    : await claimThenCheck(() => runVerb(svc, ({ ctx }) => claimRow(ctx.tx), { input: null, actor, merchantId, statement: true }));
  if (first === null) {
    const answered = await awaitFirst(svc, merchantId, endpoint, key, fp, run);
    // The claim is gone (reaped with its key): this request is new after all.
    return answered ?? authorizeWithEndpoint(svc, merchantId, endpoint, key, input);
  }

  try {
    if (first.failed) throw first.failed.err;
    // The rules are checked without locks, and the endpoint asked only about what they would approve.
    return await withVerdict(async (attempt): Promise<NonNullable<AuthorizeInput['endpoint']>> => {
      const request = attempt === 1 ? first.request : await precheck(svc.clock());
      return request ? ask(svc, endpoint, request, claimed) : { asked: false, tradeId };
    }, run);
  } catch (err) {
    await releaseClaim(svc, claimed);
    throw err;
  }
}

/**
 * A request that failed without an answer stored for its randomStr (a bad field, a database fault)
 * leaves no claim: its retry is a new request, not one to wait for. A stored answer keeps the claim.
 */
async function releaseClaim(svc: Services, claim: { merchantId: string; randomStr: string; actor: Actor }): Promise<void> {
  try {
    const answered = await svc.database.read((db) =>
      db
        .selectFrom('idempotency_keys')
        .select('random_str')
        .where('merchant_id', '=', claim.merchantId)
        .where('random_str', '=', claim.randomStr)
        .executeTakeFirst(),
    );
    if (answered) return;
    await runVerb(
      svc,
      ({ ctx }) =>
        ctx.tx
          .deleteFrom('authorization_requests')
          .where('merchant_id', '=', claim.merchantId)
          .where('random_str', '=', claim.randomStr)
          .execute(),
      { input: null, actor: claim.actor, merchantId: claim.merchantId, statement: true },
    );
  } catch {
    // The database is failing: the claim stays, and a retry waits for its deadline and goes on.
  }
}

/** Asks the endpoint about `request` and records its answer with the claim (for a retry that comes after a crash). */
function ask(
  svc: Services,
  endpoint: EndpointSettings,
  request: Record<string, unknown>,
  {
    merchantId,
    randomStr,
    tradeId,
    deadline,
    actor,
  }: { merchantId: string; randomStr: string; tradeId: string; deadline: number; actor: Actor },
): Promise<EndpointVerdict> {
  // The deadline counts from the request's arrival: time spent waiting for locks is the endpoint's
  // time too, and past it the endpoint is not asked at all (its answer could not count).
  const record = (answer: EndpointAnswer) =>
    runVerb(
      svc,
      ({ ctx }) =>
        ctx.tx
          .updateTable('authorization_requests')
          .set({ outcome: answer.outcome, reason: answer.reason, endpoint_ms: answer.latencyMs })
          .where('merchant_id', '=', merchantId)
          .where('random_str', '=', randomStr)
          .execute(),
      { input: null, actor, merchantId, statement: true },
    );
  return askForVerdict(svc, endpoint, { merchantId, tradeId, request, deadline, now: svc.clock(), lateMs: endpoint.timeoutMs, record });
}

/**
 * A retry of a request whose randomStr is claimed: waits for the first request's stored answer (then
 * replays it) or its deadline and a grace period (then applies what the endpoint said, if it was
 * recorded, or a timeout).
 */
async function awaitFirst(
  svc: Services,
  merchantId: string,
  endpoint: EndpointSettings,
  key: AuthorizeKey,
  fp: string,
  run: (verdict: NonNullable<AuthorizeInput['endpoint']>) => Promise<TradeRecord>,
): Promise<TradeRecord | null> {
  for (let first = true; ; first = false) {
    const [claim, answered] = await svc.database.read((db) =>
      Promise.all([
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
      ]),
    );
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
