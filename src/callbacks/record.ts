import type { Services } from '../context.js';
import { newId } from '../db/ids.js';
import { type BreakerSettings, giveUpExpired, healthy, type Observation, recordObservations } from './breaker.js';
import type { Claimed } from './claim.js';
import type { DeliveryResult } from './deliver.js';

/** When the attempt after `attempts` failed ones is due, or null when the event has run out of time. */
export function nextAttemptAt(
  createdAt: number,
  attempts: number,
  now: number,
  schedule: readonly number[],
  maxAgeMs: number,
): number | null {
  const delay = schedule[Math.min(attempts - 1, schedule.length - 1)] ?? 0;
  const next = now + delay;
  return next - createdAt > maxAgeMs ? null : next;
}

/** One attempt, ended. */
export interface Outcome {
  event: Claimed;
  result: DeliveryResult;
  started: number;
}

/** An endpoint's breaker as a record left it. */
export interface EndpointAfter {
  merchantId: string;
  endpoint: string;
  open: boolean;
  /** Consecutive attempts without an answer. */
  failures: number;
}

const keyOf = (e: { merchant_id: string; endpoint: string }) => `${e.merchant_id} ${e.endpoint}`;

/** The breaker's last error says when an answer was slow: what made a refusal count. */
function slowNote(error: string | null, result: DeliveryResult, slowMs: number): string | null {
  return error !== null && result.status !== null && result.durationMs >= slowMs ? `${error} after ${result.durationMs} ms` : error;
}

/**
 * Records attempts, the events' new state and their endpoints' breakers in one transaction, and
 * returns the breakers as it left them. Not
 * waiting for the disk is safe here: if a crash loses the record, the event is still pending and
 * is sent again (at least once), with the same eventId.
 */
export async function recordOutcomes(
  svc: Services,
  owner: string,
  breaker: BreakerSettings,
  outcomes: Outcome[],
): Promise<EndpointAfter[]> {
  const { database, config } = svc;
  const now = svc.clock();
  const settled = outcomes.map(({ event, result, started }) => {
    const ok = result.status !== null && result.status >= 200 && result.status < 300;
    const attempts = event.attempts + 1;
    const next = ok ? null : nextAttemptAt(event.created_at, attempts, now, config.callbacks.retryScheduleMs, config.callbacks.maxAgeMs);
    const error = ok ? null : (result.error ?? `HTTP ${result.status}`);
    return { event, result, started, ok, attempts, next, error };
  });
  const observed = new Map<string, { merchantId: string; endpoint: string; obs: Observation[] }>();
  for (const { event, result, error } of settled) {
    const o = observed.get(keyOf(event)) ?? { merchantId: event.merchant_id, endpoint: event.endpoint, obs: [] };
    o.obs.push({
      healthy: healthy(result, breaker.slowMs),
      probe: event.probe,
      error: slowNote(error, result, breaker.slowMs),
      heldMs: result.durationMs,
    });
    observed.set(keyOf(event), o);
  }
  const opened: Array<{ merchantId: string; endpoint: string; error: string | null }> = [];
  const after: EndpointAfter[] = [];
  await database.withTx(
    async (tx) => {
      opened.length = 0;
      after.length = 0;
      for (const { event, result, started, ok, attempts, next, error } of settled) {
        await tx
          .insertInto('callback_attempts')
          .values({
            id: newId('att'),
            event_id: event.id,
            attempt: attempts,
            started_at: started,
            duration_ms: result.durationMs,
            http_status: result.status,
            error,
            response_excerpt: result.excerpt.slice(0, 500) || null,
          })
          .execute();
        // Only while the lease is still ours: past it, another worker owns the event.
        await tx
          .updateTable('callback_events')
          .set({
            // Where it was sent (a notify event follows the merchant's URL, see claim.ts).
            url: event.url,
            endpoint: event.endpoint,
            status: ok ? 'delivered' : next === null ? 'failed' : 'pending',
            attempts,
            next_attempt_at: next ?? now,
            lease_owner: null,
            lease_until: null,
            last_error: error,
            delivered_at: ok ? now : null,
          })
          .where('id', '=', event.id)
          .where('lease_owner', '=', owner)
          .execute();
      }
      // In one order, so that two workers' records never wait for each other in a circle.
      for (const k of [...observed.keys()].sort()) {
        const o = observed.get(k);
        if (!o) continue;
        const { state, opened: justOpened } = await recordObservations(tx, o, o.obs, now, breaker);
        if (justOpened) opened.push({ merchantId: o.merchantId, endpoint: o.endpoint, error: state?.last_error ?? null });
        after.push({ merchantId: o.merchantId, endpoint: o.endpoint, open: state?.state === 'open', failures: state?.failures ?? 0 });
        if (state?.state === 'open' && o.obs.some((x) => x.probe && !x.healthy))
          await giveUpExpired(tx, o, now, config.callbacks.maxAgeMs, state.last_error ?? 'no answer');
      }
    },
    { durable: false },
  );
  for (const { event, ok, attempts, next, error } of settled) {
    if (!ok) svc.log.info({ eventId: event.id, attempt: attempts, error, next }, 'callback attempt failed');
    svc.metrics.delivery(ok ? 'delivered' : next === null ? 'failed' : 'retry');
  }
  for (const o of opened)
    svc.log.warn(o, 'callback endpoint not answering: its breaker is open, its events wait (docs/callbacks.md, "Isolation")');
  return after;
}
