import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Services } from '../context.js';
import { type OutboxBacklog, outboxBacklog } from '../db/outbox-backlog.js';
import type { DB } from '../db/schema.js';
import { callFailure, postTo } from '../outbound.js';
import type { RReq } from './emv-messages.js';

/** How long the ACS keeps trying to report a result (decisions §14.1: until the DS answers, at most 24 hours). */
export const RESULTS_MAX_AGE_MS = 24 * 3_600_000;
/** Waits between tries: 2 s doubling, at most 10 minutes. */
export const resultsBackoffMs = (attempts: number) => Math.min(2000 * 2 ** Math.max(0, attempts - 1), 10 * 60_000);
/** One try's deadline. */
const TIMEOUT_MS = 10_000;
/** A claimed result is this instance's for this long. */
const LEASE_MS = 30_000;
const BATCH = 20;

const OWNER = `rreq-${randomUUID()}`;

/** What one try got: the RRes, or why not. */
type Outcome = { ok: true; rres: string } | { ok: false; error: string; final: boolean };

/**
 * The DS's answer checked (EMVCo: an RRes echoing the RReq's identifiers and version, resultsStatus
 * 01–03); an Erro is the DS's answer too, final: the same RReq would get it again.
 */
export function checkRRes(rreq: RReq, status: number, text: string): Outcome {
  if (status !== 200) return { ok: false, error: `HTTP ${status}`, final: false };
  let m: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(text);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return { ok: false, error: 'not a JSON object', final: false };
    m = parsed as Record<string, unknown>;
  } catch {
    return { ok: false, error: 'not JSON', final: false };
  }
  if (m.messageType === 'Erro')
    return { ok: false, error: `Erro ${String(m.errorCode)} ${String(m.errorDetail ?? '')}`.slice(0, 200), final: true };
  const wrong: string[] = (['threeDSServerTransID', 'dsTransID', 'acsTransID', 'messageVersion'] as const).filter(
    (k) => String(m[k] ?? '').toLowerCase() !== rreq[k].toLowerCase(),
  );
  if (m.messageType !== 'RRes') wrong.unshift('messageType');
  if (typeof m.resultsStatus !== 'string' || !/^0[1-3]$/.test(m.resultsStatus)) wrong.push('resultsStatus');
  if (wrong.length > 0) return { ok: false, error: `RRes: ${wrong.join(',')}`, final: false };
  return { ok: true, rres: JSON.stringify(m) };
}

/**
 * One pass of the results sender (decisions §14.1): the RReqs due, each claimed under a lease (so
 * that instances share the work and none is sent by two at once), sent to CARDPROGRAM_3DS_DS_URL,
 * the RRes checked; a failure is tried again after a growing wait, for 24 hours, then given up
 * (`failed`, logged). Without a DS configured (the sandbox) results wait. Returns how many were sent.
 */
export async function sendResults(svc: Services): Promise<number> {
  const ds = svc.config.threeDs.ds;
  if (!ds) return 0;
  const db = svc.database.db;
  const now = svc.clock();
  const due = await db
    .selectFrom('three_ds_results')
    .select(['acs_trans_id'])
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .orderBy('next_attempt_at')
    .limit(BATCH)
    .execute();
  let sent = 0;
  for (const { acs_trans_id } of due) {
    const claimed = await db
      .updateTable('three_ds_results')
      .set({ lease_owner: OWNER, lease_until: now + LEASE_MS })
      .where('acs_trans_id', '=', acs_trans_id)
      .where('status', '=', 'pending')
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) continue;
    const row = await db.selectFrom('three_ds_results').selectAll().where('acs_trans_id', '=', acs_trans_id).executeTakeFirstOrThrow();
    const text = svc.box.open(row.rreq_enc, `three-ds-rreq:${acs_trans_id}`);
    const rreq = JSON.parse(text) as RReq;
    let outcome: Outcome;
    try {
      const answer = await postTo(ds.url, text, { files: ds, timeoutMs: TIMEOUT_MS });
      outcome = checkRRes(rreq, answer.status, answer.text);
    } catch (err) {
      outcome = { ok: false, error: callFailure(err).slice(0, 200), final: false };
    }
    const at = svc.clock();
    const attempts = Number(row.attempts) + 1;
    const mine = (q: ReturnType<typeof db.updateTable<'three_ds_results'>>) =>
      q.where('acs_trans_id', '=', acs_trans_id).where('lease_owner', '=', OWNER);
    if (outcome.ok) {
      await mine(
        db
          .updateTable('three_ds_results')
          .set({ status: 'sent', attempts, rres: outcome.rres, sent_at: at, last_error: null, lease_owner: null, lease_until: null }),
      ).execute();
      svc.metrics.threeDsResult('sent');
      sent++;
      continue;
    }
    const giveUp = outcome.final || at + resultsBackoffMs(attempts) > Number(row.created_at) + RESULTS_MAX_AGE_MS;
    await mine(
      db.updateTable('three_ds_results').set({
        status: giveUp ? 'failed' : 'pending',
        attempts,
        last_error: outcome.error,
        next_attempt_at: at + resultsBackoffMs(attempts),
        lease_owner: null,
        lease_until: null,
      }),
    ).execute();
    svc.metrics.threeDsResult(giveUp ? 'failed' : 'retry');
    const log = { acsTransId: acs_trans_id, attempts, error: outcome.error };
    if (giveUp) svc.log.error(log, '3-D Secure: the DS did not take a result (RReq); given up');
    else svc.log.warn(log, '3-D Secure: the DS did not take a result (RReq); tried again later');
  }
  return sent;
}

/**
 * The results waiting for the DS (the metrics' backlog, docs/operations.md): how many are pending,
 * how old the oldest is (seconds, 0 when none), and how many were given up on. A read of the
 * pending rows (the partial index `three_ds_results_due`) and a count of the failed ones.
 */
export function resultsBacklog(db: Kysely<DB>, now: number): Promise<OutboxBacklog> {
  return outboxBacklog(db, 'three_ds_results', now);
}
