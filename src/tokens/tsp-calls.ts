import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Services } from '../context.js';
import { type OutboxBacklog, outboxBacklog } from '../db/outbox-backlog.js';
import type { DB, TspAttemptOutcome, TspCallsTable } from '../db/schema.js';
import { callFailure, postTo } from '../outbound.js';

/*
 * The service's calls to the token service provider (decisions §15.1, §15.4): each change of a
 * token the service made (the card's freeze, unfreeze or close, the merchant's or the operator's
 * action, a failed step-up) waits in `tsp_calls`, written by changeTokenStatus in the change's own
 * transaction, until this sender has told the TSP: `POST {CARDPROGRAM_TSP_URL}/tokens/{tokenReferenceId}/{action}`
 * with `{"reason": …}` and the call's id as `Idempotency-Key`.
 */

/** How long the service keeps trying one call (then `failed`, logged as an error): 24 hours, as 3-D Secure's results. */
export const TSP_CALL_MAX_AGE_MS = 24 * 3_600_000;
/** Waits between tries: 2 s doubling, at most 10 minutes. */
export const tspBackoffMs = (attempts: number) => Math.min(2000 * 2 ** Math.max(0, attempts - 1), 10 * 60_000);
/** One try's deadline (the TSP answers within a second; a hanging one must not hold the pass). */
const TIMEOUT_MS = 5_000;
/** A claimed call is this instance's for this long: longer than a try, so that no other instance sends it meanwhile. */
const LEASE_MS = 30_000;
/** Calls read per pass, and sent at once (one per token: a token's calls go one after the other). */
const BATCH = 50;
const PARALLEL = 8;

const OWNER = `tsp-${randomUUID()}`;

type CallRow = Selectable<TspCallsTable>;
/** What one try got: done, or why not, and whether trying again could change it. */
type Outcome = { ok: true; status: number } | { ok: false; status: number | null; error: string; final: boolean };

/** The call's address: the token's reference id is the TSP's and may hold `:`, so it is encoded. */
export const tspCallUrl = (base: string, tokenReferenceId: string, action: string) =>
  `${base}/tokens/${encodeURIComponent(tokenReferenceId)}/${action}`;

/**
 * The TSP's HTTP status judged: 2xx took the call; a 4xx other than 408, 425 and 429 says this call
 * will never be taken (an unknown token, a malformed call), so it is not repeated; anything else
 * (5xx, a timeout, a refused connection) is tried again.
 */
export function judge(status: number): Outcome {
  if (status >= 200 && status < 300) return { ok: true, status };
  const final = status >= 400 && status < 500 && ![408, 425, 429].includes(status);
  return { ok: false, status, error: `HTTP ${status}`, final };
}

/**
 * Claims a call for this instance: still pending, due, its lease free, and no earlier call of its
 * token still pending (a token's calls reach the TSP in the order of the token's history, `token_seq`:
 * a suspend failing must not let the resume after it overtake). One conditional update: of two instances
 * that read the same call, one claims it.
 */
async function claim(svc: Services, id: string, now: number): Promise<boolean> {
  const res = await svc.database.write((db) =>
    db
      .updateTable('tsp_calls')
      .set({ lease_owner: OWNER, lease_until: now + LEASE_MS })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('next_at', '<=', now)
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('tsp_calls as earlier')
              .select('earlier.id')
              .whereRef('earlier.token_id', '=', 'tsp_calls.token_id')
              .where('earlier.status', '=', 'pending')
              .where((e) =>
                e.or([
                  // The token's history order (calls written since migration 0035 carry it).
                  e.and([
                    e('earlier.token_seq', 'is not', null),
                    e('tsp_calls.token_seq', 'is not', null),
                    e('earlier.token_seq', '<', e.ref('tsp_calls.token_seq')),
                  ]),
                  // A call without it: by the moment it was written.
                  e.and([
                    e.or([e('earlier.token_seq', 'is', null), e('tsp_calls.token_seq', 'is', null)]),
                    e.or([
                      e('earlier.created_at', '<', e.ref('tsp_calls.created_at')),
                      e.and([e('earlier.created_at', '=', e.ref('tsp_calls.created_at')), e('earlier.id', '<', e.ref('tsp_calls.id'))]),
                    ]),
                  ]),
                ]),
              ),
          ),
        ),
      )
      .executeTakeFirst(),
  );
  return Number(res.numUpdatedRows) === 1;
}

/** Sends one claimed call and records the attempt and what became of the call. Returns whether it is done. */
async function sendOne(svc: Services, row: CallRow): Promise<boolean> {
  const tsp = svc.config.tspClient;
  if (!tsp) return false;
  const started = svc.clock();
  let outcome: Outcome;
  try {
    // The answer's body is dropped: its status decides. The TSP may see a call twice (its answer
    // lost, the lease run out): the same idempotency key each time.
    const { status } = await postTo(tspCallUrl(tsp.url, row.token_reference_id, row.action), JSON.stringify({ reason: row.reason }), {
      files: tsp,
      timeoutMs: TIMEOUT_MS,
      headers: { 'idempotency-key': row.id },
    });
    outcome = judge(status);
  } catch (err) {
    outcome = { ok: false, status: null, error: callFailure(err).slice(0, 200), final: false };
  }
  const at = svc.clock();
  const attempts = Number(row.attempts) + 1;
  const giveUp = !outcome.ok && (outcome.final || at + tspBackoffMs(attempts) > Number(row.created_at) + TSP_CALL_MAX_AGE_MS);
  const result: TspAttemptOutcome = outcome.ok ? 'done' : giveUp ? 'failed' : 'retry';
  // The outcome and its attempt together, durably (the TSP took it: never send it again).
  await svc.database.withTx(async (tx) => {
    // Only while the lease is still this instance's: one that ran out and was taken over is the other's to record.
    const res = await tx
      .updateTable('tsp_calls')
      .set(
        outcome.ok
          ? { status: 'done', attempts, done_at: at, last_error: null, lease_owner: null, lease_until: null }
          : {
              status: giveUp ? 'failed' : 'pending',
              attempts,
              last_error: outcome.error,
              next_at: at + tspBackoffMs(attempts),
              lease_owner: null,
              lease_until: null,
              ...(giveUp ? { done_at: at } : {}),
            },
      )
      .where('id', '=', row.id)
      .where('lease_owner', '=', OWNER)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return;
    await tx
      .insertInto('tsp_call_attempts')
      .values({
        call_id: row.id,
        attempt: attempts,
        at: started,
        duration_ms: Math.max(0, at - started),
        http_status: outcome.status,
        error: outcome.ok ? null : outcome.error,
        outcome: result,
      })
      .execute();
  });
  if (!outcome.ok) {
    const log = { callId: row.id, tokenId: row.token_id, action: row.action, attempts, error: outcome.error };
    if (giveUp) svc.log.error(log, 'tokens: the TSP did not take a call; given up');
    else svc.log.warn(log, 'tokens: the TSP did not take a call; tried again later');
  }
  return outcome.ok;
}

/**
 * One pass of the sender: the calls due, each claimed under a lease (instances share the work and
 * none is sent by two at once), at most PARALLEL at a time; a failure is tried again after a growing
 * wait, for 24 hours, then given up (`failed`, logged); each attempt is a row of
 * `tsp_call_attempts`. Without CARDPROGRAM_TSP_URL (the sandbox) the calls wait. Returns how many
 * the TSP took.
 */
export async function sendTspCalls(svc: Services): Promise<number> {
  if (!svc.config.tspClient) return 0;
  const db = svc.database.db;
  const now = svc.clock();
  const due = await db
    .selectFrom('tsp_calls')
    .selectAll()
    .where('status', '=', 'pending')
    .where('next_at', '<=', now)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .orderBy('next_at')
    .limit(BATCH)
    .execute();
  // The earliest of each token only (the others wait for it); claim() checks again against every pending call.
  const seen = new Set<string>();
  const queue = due
    .sort(
      (a, b) =>
        Number(a.token_seq ?? 0) - Number(b.token_seq ?? 0) || Number(a.created_at) - Number(b.created_at) || (a.id < b.id ? -1 : 1),
    )
    .filter((r) => !seen.has(r.token_id) && seen.add(r.token_id));
  let sent = 0;
  const lane = async () => {
    for (let row = queue.shift(); row; row = queue.shift()) {
      if (!(await claim(svc, row.id, svc.clock()))) continue;
      if (await sendOne(svc, row)) sent++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, queue.length) }, lane));
  return sent;
}

/** The pass under way, per service (the reaper's timer may fire while one is under way). */
const running = new WeakMap<Services, Promise<number>>();
/** A pass, unless one is under way for this service: then that one. */
export function sendTspCallsOnce(svc: Services): Promise<number> {
  const current = running.get(svc);
  if (current) return current;
  const pass = sendTspCalls(svc).finally(() => running.delete(svc));
  running.set(svc, pass);
  return pass;
}

/** The calls waiting for the TSP (metrics, the console): pending, the oldest's age in seconds, and those given up. */
export function tspCallsBacklog(db: Kysely<DB>, now: number): Promise<OutboxBacklog> {
  return outboxBacklog(db, 'tsp_calls', now);
}
