import type { Kysely } from 'kysely';
import type { Services, VerbCtx } from '../context.js';
import type { SecretBox } from '../crypto/secretbox.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { closeBreakers } from './breaker.js';
import type { Resolver } from './deliver.js';
import { openPayload } from './outbox.js';
import { shownPayload } from './shown-payload.js';
import { CallbackWorker, type WorkerJob } from './worker.js';

/**
 * Starts a delivery worker for this process, with the jobs it is handed to run on each poll (the
 * sandbox's automatic KYC reviewer and dispute decisions: `periodicJobs(svc).worker`, src/jobs/periodic.ts).
 */
export function startWorker(svc: Services, opts: { jobs?: WorkerJob[]; resolver?: Resolver } = {}): CallbackWorker {
  const worker = new CallbackWorker(svc, opts);
  svc.notifier.poke = () => worker.poke();
  worker.start();
  return worker;
}

export interface CallbackSummary {
  eventId: string;
  /** What was sent, as an operator may see it (src/callbacks/shown-payload.ts): secrets and codes redacted, card numbers masked. */
  payload: unknown;
  merchantId: string;
  type: string;
  sequence: number;
  url: string;
  status: string;
  attempts: number;
  nextAttemptAt: string | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

export interface CallbackFilter {
  status?: 'pending' | 'delivered' | 'failed' | undefined;
  merchantId?: string | undefined;
  limit?: number | undefined;
}

/** The newest events first (a read: no transaction of its own). */
export async function listCallbacks(db: Kysely<DB>, filter: CallbackFilter, box: SecretBox): Promise<CallbackSummary[]> {
  let q = db
    .selectFrom('callback_events')
    .selectAll()
    .orderBy('created_at', 'desc')
    .limit(filter.limit ?? 50);
  if (filter.status) q = q.where('status', '=', filter.status);
  if (filter.merchantId) q = q.where('merchant_id', '=', filter.merchantId);
  const rows = await q.execute();
  const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());
  return rows.map((r) => ({
    eventId: r.id,
    payload: shownPayload(openPayload(box, r)),
    merchantId: r.merchant_id,
    type: r.type,
    sequence: Number(r.sequence),
    url: r.url,
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: r.status === 'pending' ? iso(r.next_attempt_at) : null,
    lastError: r.last_error,
    createdAt: iso(r.created_at) ?? '',
    deliveredAt: iso(r.delivered_at),
  }));
}

/**
 * Sends events again now: named ones (whatever their status, e.g. to replay a delivered event to a
 * receiver that lost it), or every failed one. Their eventId stays the same, so receivers that
 * already have them drop the copy. An event past its 72 hours gets this one attempt. Their
 * endpoints' circuit breakers close, so the attempt is not deferred. Returns how many were queued.
 */
export async function retryCallbacks({
  ctx,
  input,
}: {
  ctx: VerbCtx;
  input: { eventIds?: string[]; allFailed?: boolean; merchantId?: string };
}): Promise<number> {
  if (!input.allFailed && !input.eventIds?.length) throw new DomainError('validation', 'eventIds: name events, or ask for all failed ones');
  const { tx } = ctx;
  let q = tx.updateTable('callback_events').set({ status: 'pending', next_attempt_at: ctx.now, lease_owner: null, lease_until: null });
  if (input.allFailed) q = q.where('status', '=', 'failed');
  else {
    // Every named event must exist (for this merchant), or nothing is queued.
    let known = tx
      .selectFrom('callback_events')
      .select('id')
      .where('id', 'in', input.eventIds ?? []);
    if (input.merchantId) known = known.where('merchant_id', '=', input.merchantId);
    const found = new Set((await known.execute()).map((r) => r.id));
    const missing = (input.eventIds ?? []).filter((id) => !found.has(id));
    if (missing.length) throw new DomainError('validation', `eventIds: no such event: ${missing.join(', ')}`);
    q = q.where('id', 'in', input.eventIds ?? []);
  }
  if (input.merchantId) q = q.where('merchant_id', '=', input.merchantId);
  // The operator expects an attempt now: the breakers of the endpoints concerned close.
  let ends = tx.selectFrom('callback_events').select(['merchant_id', 'endpoint']).distinct();
  ends = input.allFailed ? ends.where('status', '=', 'failed') : ends.where('id', 'in', input.eventIds ?? []);
  if (input.merchantId) ends = ends.where('merchant_id', '=', input.merchantId);
  const endpoints = await ends.execute();
  const n = Number((await q.executeTakeFirst()).numUpdatedRows);
  await closeBreakers(tx, endpoints);
  // Queued events are the worker's to send now.
  if (n > 0) ctx.wake.worker = true;
  return n;
}
