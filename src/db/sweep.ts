import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Metrics } from '../metrics.js';
import type { Database } from './index.js';
import type { DB } from './schema.js';

/**
 * Periodic passes over many rows (issue 46): hold expiry, dispute expiry, the reaper's deletes, the
 * 3-D Secure browser data's purge. A pass reads its rows in pages (keyset: never all of them in
 * memory, never OFFSET) and takes each row as its own unit of work: a row that throws is recorded (the log, the counter
 * `cardprogram_sweep_failures_total{job}`, and `sweep_failures`, whose gauges an alert watches)
 * and skipped, and the pass goes on with the next. The next pass meets it again, in its place,
 * without it blocking any other. docs/operations.md, "Periodic passes".
 */

export interface SweepDeps {
  database: Database;
  log: { warn(obj: object, msg: string): void };
  metrics: Metrics;
  clock: () => number;
}

export interface SweepFailure {
  id: string;
  error: string;
  /** Passes in a row that failed on it (every instance's passes). */
  failures: number;
}

/** Rows per page of a pass. */
export const SWEEP_PAGE = 200;

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 500);

/**
 * Records that `job` failed on `itemId` (one more pass in a row) and returns the count; never
 * throws: a pass whose record cannot be written (the database failing) still goes on.
 */
async function recordFailure(deps: SweepDeps, job: string, itemId: string, error: string): Promise<number> {
  const now = deps.clock();
  try {
    const row = await deps.database.db
      .insertInto('sweep_failures')
      .values({ job, item_id: itemId.slice(0, 64), failures: 1, first_failed_at: now, last_failed_at: now, last_error: error })
      .onConflict((oc) =>
        oc.columns(['job', 'item_id']).doUpdateSet((eb) => ({
          failures: eb('sweep_failures.failures', '+', 1),
          last_failed_at: now,
          last_error: error,
        })),
      )
      .returning('failures')
      .executeTakeFirst();
    return Number(row?.failures ?? 1);
  } catch (err) {
    deps.log.warn({ err, job, itemId }, 'a failure of a periodic pass could not be recorded');
    return 1;
  }
}

function failed(deps: SweepDeps, job: string, itemId: string, err: unknown): Promise<SweepFailure> {
  const error = errorText(err);
  deps.metrics.sweepFailure(job);
  return recordFailure(deps, job, itemId, error).then((failures) => {
    deps.log.warn(
      { err, job, itemId, failures },
      `${job}: ${itemId} failed (${failures} ${failures === 1 ? 'pass' : 'passes in a row'}); skipped, the next pass tries it again`,
    );
    return { id: itemId, error, failures };
  });
}

/**
 * A whole pass went through: what it did not fail on (done, or no longer due) is forgotten. An item
 * another instance's pass failed on since this one started stays.
 */
async function passDone(deps: SweepDeps, job: string, started: number, failedIds: string[]): Promise<void> {
  let q = deps.database.db.deleteFrom('sweep_failures').where('job', '=', job);
  // By id (the clock may not have moved since the last pass's record); past a thousand, by time.
  if (failedIds.length === 0) q = q.where('last_failed_at', '<=', started);
  else if (failedIds.length <= 1000)
    q = q.where('last_failed_at', '<=', started).where(
      'item_id',
      'not in',
      failedIds.map((id) => id.slice(0, 64)),
    );
  else q = q.where('last_failed_at', '<', started);
  await q.execute();
}

/**
 * One pass of `job`: `page(after, limit)` reads the next rows after the last one of the previous
 * page (null: the first), `each(row)` works one row in its own transaction (null: nothing to do).
 * Returns what `each` returned and the rows that failed.
 */
export async function sweep<Row, R>(
  deps: SweepDeps,
  job: string,
  opts: {
    page(after: Row | null, limit: number): Promise<Row[]>;
    id(row: Row): string;
    each(row: Row): Promise<R | null>;
    pageSize?: number;
  },
): Promise<{ done: R[]; failed: SweepFailure[] }> {
  const started = deps.clock();
  const size = opts.pageSize ?? SWEEP_PAGE;
  const done: R[] = [];
  const failures: SweepFailure[] = [];
  let after: Row | null = null;
  for (;;) {
    const rows = await opts.page(after, size);
    for (const row of rows) {
      try {
        const r = await opts.each(row);
        if (r !== null) done.push(r);
      } catch (err) {
        failures.push(await failed(deps, job, opts.id(row), err));
      }
    }
    if (rows.length < size) break;
    after = rows.at(-1) as Row;
  }
  await passDone(
    deps,
    job,
    started,
    failures.map((f) => f.id),
  );
  return { done, failed: failures };
}

/** `(a, b) > (x, y)`, the keyset's "after", on both dialects (row values). */
const rowValue = (values: readonly unknown[]) => sql`(${sql.join(values.map((v) => sql`${v}`))})`;

/** Which rows a paged statement works on: those matching `where`, in pages ordered by `key` (an index's columns, ending with the primary key's). */
export interface PagedRows {
  table: keyof DB & string;
  key: readonly string[];
  where: RawBuilder<unknown>;
}

/**
 * Deletes a table's rows that match `where` in pages ordered by `key`: each page's keys read, then
 * that range deleted in one statement. A page whose delete fails is deleted row by row, each row's
 * failure recorded and skipped. Returns how many rows went.
 */
export function reapInPages(deps: SweepDeps, job: string, spec: PagedRows, pageSize = 1000): Promise<number> {
  return inPages(deps, job, spec, sql`delete from ${sql.table(spec.table)}`, pageSize);
}

/**
 * As reapInPages, but the rows stay: `set` is applied to each page in one statement (a field kept
 * for a while, then cleared), row by row when the page's statement fails. `where` must no longer
 * match a row once it is set, so that a pass ends. Returns how many rows were set.
 */
export function updateInPages(
  deps: SweepDeps,
  job: string,
  spec: PagedRows & { set: RawBuilder<unknown> },
  pageSize = 1000,
): Promise<number> {
  return inPages(deps, job, spec, sql`update ${sql.table(spec.table)} set ${spec.set}`, pageSize);
}

/** A statement (`head`: `delete from t` or `update t set …`) over the rows of `spec`, a page at a time. */
async function inPages(deps: SweepDeps, job: string, spec: PagedRows, head: RawBuilder<unknown>, pageSize: number): Promise<number> {
  const db: Kysely<DB> = deps.database.db;
  const table = sql.table(spec.table);
  const keys = sql.join(spec.key.map((k) => sql.ref(k)));
  const started = deps.clock();
  let after: unknown[] | null = null;
  let done = 0;
  const failedIds: string[] = [];
  for (;;) {
    const from: RawBuilder<unknown> = after === null ? sql`` : sql`and (${keys}) > ${rowValue(after)}`;
    const { rows }: { rows: Array<Record<string, unknown>> } = await sql<Record<string, unknown>>`
      select ${keys} from ${table} where ${spec.where} ${from} order by ${keys} limit ${pageSize}`.execute(db);
    const last = rows.at(-1);
    if (!last) break;
    const lastKey: unknown[] = spec.key.map((k) => last[k]);
    try {
      const res = await sql`${head} where ${spec.where} ${from} and (${keys}) <= ${rowValue(lastKey)}`.execute(db);
      done += Number(res.numAffectedRows ?? 0);
    } catch {
      for (const row of rows) {
        const rowKey = spec.key.map((k) => row[k]);
        try {
          const res = await sql`${head} where (${keys}) = ${rowValue(rowKey)}`.execute(db);
          done += Number(res.numAffectedRows ?? 0);
        } catch (err) {
          failedIds.push((await failed(deps, job, rowKey.join(' '), err)).id);
        }
      }
    }
    if (rows.length < pageSize) break;
    after = lastKey;
  }
  await passDone(deps, job, started, failedIds);
  return done;
}

/** The periodic passes' failing items, per pass: how many, and how long the oldest has failed (the gauges). */
export async function sweepFailuresByJob(
  db: Kysely<DB>,
  now: number,
): Promise<Array<{ job: string; items: number; oldestSeconds: number }>> {
  const rows = await db
    .selectFrom('sweep_failures')
    .select(['job', (eb) => eb.fn.countAll<number>().as('n'), (eb) => eb.fn.min('first_failed_at').as('first')])
    .groupBy('job')
    .execute();
  return rows.map((r) => ({ job: r.job, items: Number(r.n), oldestSeconds: Math.max(0, (now - Number(r.first)) / 1000) }));
}
