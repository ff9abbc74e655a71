import { randomBytes } from 'node:crypto';
import type { Services } from '../context.js';
import { newId } from '../db/ids.js';
import { type BreakerSettings, breakerSettings, DEFAULT_SLOTS, giveUpExpired, type Observation, recordObservations } from './breaker.js';
import { type Claimed, claimDue, unclaim } from './claim.js';
import { type DeliveryResult, deliver, type Resolver } from './deliver.js';
import { webhookHeaders } from './webhook-signature.js';

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

export interface WorkerOptions {
  /** How many attempts this worker has in flight at most, over every endpoint. */
  batch?: number;
  /** How long a claimed event stays ours; past it another worker may take it. */
  leaseMs?: number;
  resolver?: Resolver;
  /** Jobs run on every poll besides delivery (the sandbox's automatic KYC reviewer). */
  jobs?: Array<(now: number) => Promise<unknown>>;
}

interface Outcome {
  event: Claimed;
  result: DeliveryResult;
  started: number;
}

interface Slot {
  merchantId: string;
  endpoint: string;
  n: number;
}

const keyOf = (e: { merchant_id: string; endpoint: string }) => `${e.merchant_id} ${e.endpoint}`;

/**
 * Delivers the outbox, one endpoint isolated from another (docs/callbacks.md, "Isolation"). A
 * continuous scheduler, not batches: each attempt is started as soon as its endpoint has a free slot
 * and recorded as soon as it ends, so no attempt waits for a slower one to another endpoint. Due
 * events are taken round-robin by merchant and endpoint, at most `slots` in flight per endpoint (and
 * `batch` in all); an endpoint whose breaker is open is skipped, its events deferred (src/callbacks/breaker.ts).
 *
 * Several workers (threads of one service, `cardprogram worker` processes, other instances) may run
 * at once: each claims due events with a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL, the write
 * lock on SQLite), so one attempt is never sent twice at once; an event whose worker died is taken
 * again when its lease runs out. Delivery is at least once: a receiver drops duplicates by `eventId`.
 */
export class CallbackWorker {
  readonly owner = `wrk_${randomBytes(6).toString('hex')}`;
  private timer: NodeJS.Timeout | null = null;
  private stopped = true;
  private readonly batch: number;
  private readonly leaseMs: number;
  private readonly slots: number;
  private readonly breaker: BreakerSettings;
  /** Attempts in flight per merchant and endpoint. */
  private readonly inFlight = new Map<string, Slot>();
  private inFlightTotal = 0;
  private readonly tasks = new Set<Promise<void>>();
  private filling: Promise<number> | null = null;
  private refill = false;
  private jobsRunning: Promise<void> | null = null;
  private jobsAgain = false;
  private settledWaiters: Array<() => void> = [];

  constructor(
    private readonly svc: Services,
    private readonly opts: WorkerOptions = {},
  ) {
    this.batch = opts.batch ?? 100;
    this.leaseMs = opts.leaseMs ?? svc.config.callbacks.timeoutMs * 3;
    this.slots = svc.config.callbacks.slots ?? DEFAULT_SLOTS;
    this.breaker = breakerSettings(svc.config.callbacks);
  }

  start(): void {
    this.stopped = false;
    this.tick();
  }

  /** Something was committed: look now rather than at the next poll. */
  poke(): void {
    if (this.stopped) return;
    this.kick();
  }

  /** Stops taking events; the attempts under way are finished and recorded. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.jobsRunning;
    await this.filling;
    while (this.tasks.size > 0) await Promise.all([...this.tasks]);
  }

  /** The poll: jobs and due events now, then again after pollMs. */
  private tick(): void {
    if (this.stopped) return;
    this.kick();
    this.timer = setTimeout(() => {
      this.timer = null;
      this.tick();
    }, this.svc.config.callbacks.pollMs);
    this.timer.unref();
  }

  private kick(): void {
    this.runJobs()
      .then(() => this.fill())
      .catch((err) => this.svc.log.warn({ err }, 'callback worker pass failed'));
  }

  private runJobs(): Promise<void> {
    const jobs = this.opts.jobs ?? [];
    if (jobs.length === 0) return Promise.resolve();
    if (this.jobsRunning) {
      this.jobsAgain = true;
      return this.jobsRunning;
    }
    this.jobsRunning = (async () => {
      try {
        do {
          this.jobsAgain = false;
          for (const job of jobs) await job(this.svc.clock());
        } while (this.jobsAgain && !this.stopped);
      } finally {
        this.jobsRunning = null;
      }
    })();
    return this.jobsRunning;
  }

  /**
   * Runs the jobs, then delivers every due event, waiting for the attempts it started (and those
   * they make room for) until none is due and none in flight. Returns how many were attempted.
   * The service does not call it (it runs continuously, after start()); tests and scripts do.
   */
  async pass(): Promise<number> {
    for (const job of this.opts.jobs ?? []) await job(this.svc.clock());
    let total = 0;
    for (;;) {
      const settled = this.nextSettled();
      const started = await this.fill();
      total += started;
      if (started === 0 && this.inFlightTotal === 0) return total;
      if (started === 0) await settled;
    }
  }

  private nextSettled(): Promise<void> {
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  /** Claims what the free slots allow and starts those attempts; one claim at a time per worker. */
  private fill(): Promise<number> {
    if (this.filling) {
      this.refill = true;
      return this.filling;
    }
    this.filling = (async () => {
      let started = 0;
      try {
        do {
          this.refill = false;
          started += await this.claimAndStart();
        } while (this.refill);
      } finally {
        this.filling = null;
      }
      return started;
    })();
    return this.filling;
  }

  private async claimAndStart(): Promise<number> {
    const room = this.batch - this.inFlightTotal;
    if (room <= 0) return 0;
    const now = this.svc.clock();
    const busy = [...this.inFlight.values()].filter((s) => s.n >= this.slots);
    const claimed = await claimDue(this.svc.database, {
      owner: this.owner,
      now,
      leaseUntil: now + this.leaseMs,
      limit: room,
      slots: this.slots,
      busy,
    });
    const extra: string[] = [];
    let started = 0;
    for (const e of claimed) {
      // A probe always goes (it is its endpoint's only attempt); others only into a free slot.
      if (!e.probe && (this.inFlight.get(keyOf(e))?.n ?? 0) >= this.slots) extra.push(e.id);
      else {
        this.launch(e);
        started++;
      }
    }
    await unclaim(this.svc.database, this.owner, extra);
    return started;
  }

  private launch(event: Claimed): void {
    const key = keyOf(event);
    const slot = this.inFlight.get(key) ?? { merchantId: event.merchant_id, endpoint: event.endpoint, n: 0 };
    slot.n++;
    this.inFlight.set(key, slot);
    this.inFlightTotal++;
    const task = this.attempt(event)
      .then((outcome) => this.recordSoon(outcome))
      .catch((err) => this.svc.log.warn({ err, eventId: event.id }, 'callback attempt not recorded'))
      .finally(() => {
        slot.n--;
        if (slot.n === 0) this.inFlight.delete(key);
        this.inFlightTotal--;
        this.tasks.delete(task);
        const waiters = this.settledWaiters.splice(0);
        for (const w of waiters) w();
        // A slot is free: take the next due event now, not at the next poll.
        if (!this.stopped) this.fill().catch((err) => this.svc.log.warn({ err }, 'callback worker pass failed'));
      });
    this.tasks.add(task);
  }

  private readonly secrets = new Map<string, string>();

  private async secretOf(merchantId: string): Promise<string | null> {
    const hit = this.secrets.get(merchantId);
    if (hit) return hit;
    const row = await this.svc.database.db
      .selectFrom('merchants')
      .select('webhook_secret_enc')
      .where('id', '=', merchantId)
      .executeTakeFirst();
    if (!row) return null;
    const secret = this.svc.box.open(row.webhook_secret_enc, `webhook-secret:${merchantId}`);
    this.secrets.set(merchantId, secret);
    return secret;
  }

  /** Sends one event once. */
  private async attempt(event: Claimed): Promise<Outcome> {
    const { config } = this.svc;
    const started = this.svc.clock();
    const secret = await this.secretOf(event.merchant_id);
    if (secret === null)
      return { event, started, result: { status: null, error: 'merchant no longer exists', excerpt: '', durationMs: 0 } };
    const result = await deliver({
      url: event.url,
      body: event.payload,
      headers: webhookHeaders(secret, event.id, Math.floor(started / 1000), event.payload),
      timeoutMs: config.callbacks.timeoutMs,
      env: config.env,
      ...(this.opts.resolver ? { resolver: this.opts.resolver } : {}),
    });
    return { event, result, started };
  }

  private recordQueue: Array<{ outcome: Outcome; done: () => void; fail: (err: unknown) => void }> = [];
  private recording = false;

  /**
   * Records an attempt as soon as it ends. The attempts that end while a record is being written
   * are written together in the next one (few transactions under load, no waiting for the slow).
   */
  private recordSoon(outcome: Outcome): Promise<void> {
    return new Promise((done, fail) => {
      this.recordQueue.push({ outcome, done, fail });
      if (!this.recording) void this.flushRecords();
    });
  }

  private async flushRecords(): Promise<void> {
    this.recording = true;
    try {
      while (this.recordQueue.length > 0) {
        const group = this.recordQueue.splice(0);
        try {
          await this.record(group.map((g) => g.outcome));
          for (const g of group) g.done();
        } catch (err) {
          for (const g of group) g.fail(err);
        }
      }
    } finally {
      this.recording = false;
    }
  }

  /**
   * Records attempts, the events' new state and their endpoints' breakers in one transaction. Not
   * waiting for the disk is safe here: if a crash loses the record, the event is still pending and
   * is sent again (at least once), with the same eventId.
   */
  private async record(outcomes: Outcome[]): Promise<void> {
    const { database, config } = this.svc;
    const now = this.svc.clock();
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
      o.obs.push({ answered: result.status !== null, probe: event.probe, error });
      observed.set(keyOf(event), o);
    }
    const opened: Array<{ merchantId: string; endpoint: string; error: string | null }> = [];
    await database.withTx(
      async (tx) => {
        opened.length = 0;
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
            .where('lease_owner', '=', this.owner)
            .execute();
        }
        // In one order, so that two workers' records never wait for each other in a circle.
        for (const k of [...observed.keys()].sort()) {
          const o = observed.get(k);
          if (!o) continue;
          const { state, opened: justOpened } = await recordObservations(tx, o, o.obs, now, this.breaker);
          if (justOpened) opened.push({ merchantId: o.merchantId, endpoint: o.endpoint, error: state?.last_error ?? null });
          if (state?.state === 'open' && o.obs.some((x) => x.probe && !x.answered))
            await giveUpExpired(tx, o, now, config.callbacks.maxAgeMs, state.last_error ?? 'no answer');
        }
      },
      { durable: false },
    );
    for (const { event, ok, attempts, next, error } of settled) {
      if (!ok) this.svc.log.info({ eventId: event.id, attempt: attempts, error, next }, 'callback attempt failed');
      this.svc.metrics.delivery(ok ? 'delivered' : next === null ? 'failed' : 'retry');
    }
    for (const o of opened)
      this.svc.log.warn(o, 'callback endpoint not answering: its breaker is open, its events wait (docs/callbacks.md, "Isolation")');
  }
}
