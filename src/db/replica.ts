import { type Kysely, sql } from 'kysely';
import type { Database } from './index.js';
import type { DB } from './schema.js';

/** What /readyz and the metrics say of the replica. */
export interface ReplicaStatus {
  /** ready: reads go to it; lagging: further behind than allowed (or not yet known); unavailable: it did not answer. Both latter: reads go to the primary. */
  status: 'ready' | 'lagging' | 'unavailable';
  /** How far behind the primary it may be, ms (its staleness bound); null while not known. */
  lagMs: number | null;
}

/** Where the positions come from: the primary's WAL written so far, the replica's WAL replayed (null: not a standby). */
export interface LsnSource {
  primary(): Promise<bigint>;
  replica(): Promise<bigint | null>;
}

/** A position in the write-ahead log, `16/B374D848`, as a number. */
export function parseLsn(text: string): bigint {
  const [hi = '', lo = ''] = text.split('/');
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
}

/** The positions read with SQL: pg_current_wal_lsn() on the primary, pg_last_wal_replay_lsn() on the replica. */
export function sqlLsnSource(primary: Kysely<DB>, replica: Kysely<DB>): LsnSource {
  return {
    primary: async () => {
      const { rows } = await sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(primary);
      return parseLsn(rows[0]?.lsn ?? '0/0');
    },
    replica: async () => {
      const { rows } = await sql<{ lsn: string | null }>`select pg_last_wal_replay_lsn()::text as lsn`.execute(replica);
      const lsn = rows[0]?.lsn;
      return lsn ? parseLsn(lsn) : null;
    },
  };
}

export interface ReplicaOptions {
  /** The most a read sent to the replica may miss, ms: commits older than this are in what it reads. */
  maxLagMs: number;
  /** How often the positions are compared, ms (at most half of maxLagMs). */
  probeMs?: number;
  /** A monotonic clock, ms. */
  now?: () => number;
  /** Told when the replica's status changes. */
  onChange?: (status: ReplicaStatus, err?: unknown) => void;
  /** Where positions come from (tests); by default SQL on the two pools. */
  lsn?: LsnSource;
}

/**
 * Reads that may be a moment stale go to a PostgreSQL replica (DATABASE_REPLICA_URL) while it is
 * known to be at most `maxLagMs` behind the primary; otherwise, and while it does not answer, to the
 * primary (docs/operations.md, "Read replica": which reads, and why).
 *
 * How "behind" is known, without trusting either server's clock: every probe reads the primary's
 * WAL position P at time t (this process's monotonic clock), then the replica's replayed position R.
 * Everything committed on the primary before t is in the WAL before P (an acknowledged commit was
 * flushed, so written), so a replica with R ≥ P shows all of it: its staleness is at most now − t
 * for the latest such t. A replica that falls behind keeps its last such t while now moves on, and is
 * left once now − t passes the bound; it is used again when it has replayed a recent probe's P. A
 * server that is not a standby (pg_last_wal_replay_lsn() is null: the primary itself, or another
 * database, as the tests use) counts as current.
 */
export class ReplicaRouter {
  private readonly now: () => number;
  private readonly lsn: LsnSource;
  private readonly probeMs: number;
  /** Probes' (time, primary position), oldest first, those not yet known to be replayed. */
  private samples: Array<{ t: number; lsn: bigint }> = [];
  /** The latest probe time whose primary position the replica has replayed; null: none yet. */
  private caughtUpAt: number | null = null;
  private answering = false;
  private probing = false;
  private timer: NodeJS.Timeout | undefined;
  private last: ReplicaStatus['status'] | undefined;

  constructor(
    private readonly primary: Database,
    readonly replica: Database,
    private readonly opts: ReplicaOptions,
  ) {
    this.now = opts.now ?? (() => performance.now());
    this.lsn = opts.lsn ?? sqlLsnSource(primary.db, replica.db);
    this.probeMs = Math.max(10, Math.min(opts.probeMs ?? 1000, Math.floor(opts.maxLagMs / 2)));
  }

  /** Where a read that may be stale goes now: the replica when it is ready, else the primary. */
  db(): Kysely<DB> {
    return this.status().status === 'ready' ? this.replica.db : this.primary.db;
  }

  status(): ReplicaStatus {
    if (!this.answering) return { status: 'unavailable', lagMs: null };
    // Answering, but it has not yet shown a position the primary had since this process started.
    if (this.caughtUpAt === null) return { status: 'lagging', lagMs: null };
    const lagMs = Math.max(0, Math.round(this.now() - this.caughtUpAt));
    return { status: lagMs <= this.opts.maxLagMs ? 'ready' : 'lagging', lagMs };
  }

  /** Compares the two positions once (start-up awaits the first; then every probeMs). */
  async probe(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      await this.compare();
    } finally {
      this.probing = false;
    }
  }

  private async compare(): Promise<void> {
    const t = this.now();
    let primary: bigint;
    try {
      primary = await this.lsn.primary();
    } catch {
      // The primary is not answering: every request fails anyway, and nothing is learnt of the replica.
      return;
    }
    this.samples.push({ t, lsn: primary });
    try {
      const replayed = await this.lsn.replica();
      this.answering = true;
      const caught = this.samples.filter((s) => replayed === null || s.lsn <= replayed);
      const latest = caught[caught.length - 1];
      if (latest) this.caughtUpAt = Math.max(this.caughtUpAt ?? latest.t, latest.t);
      this.samples = this.samples.filter((s) => s.t > (latest?.t ?? Number.NEGATIVE_INFINITY));
      // A replica far behind keeps no more samples than the bound needs: older ones are past it anyway.
      if (this.samples.length > 64) this.samples = this.samples.slice(-64);
      this.report();
    } catch (err) {
      this.answering = false;
      this.report(err);
    }
  }

  private report(err?: unknown): void {
    const now = this.status();
    if (now.status !== this.last) this.opts.onChange?.(now, err);
    this.last = now.status;
  }

  /** Probes every probeMs until closed. */
  start(): void {
    this.timer = setInterval(() => void this.probe(), this.probeMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.replica.close();
  }
}
