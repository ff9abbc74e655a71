import { randomBytes } from 'node:crypto';
import type { Services } from '../context.js';
import {
  type BreakerSettings,
  breakerSettings,
  capLabels,
  DEFAULT_MERCHANT_SHARE,
  DEFAULT_SLOTS,
  healthy,
  MERCHANT_LABELS,
} from './breaker.js';
import { type Claimed, claimDue, unclaim } from './claim.js';
import { deliver, type Resolver } from './deliver.js';
import { openPayload } from './outbox.js';
import { type Outcome, recordOutcomes } from './record.js';
import { keyOf, SlotBook } from './slots.js';
import { webhookHeaders } from './webhook-signature.js';

export interface WorkerOptions {
  /** How many attempts this worker has in flight (and claimed) at most, over every merchant. */
  batch?: number;
  /** How long a claimed event stays ours; past it another worker may take it. */
  leaseMs?: number;
  resolver?: Resolver;
  /** Jobs run on every poll besides delivery (the sandbox's automatic KYC reviewer): src/jobs/periodic.ts. */
  jobs?: WorkerJob[];
}

/** A job the worker runs on every poll, given the moment; its failure is logged, and the next poll runs it again. */
export type WorkerJob = (now: number) => Promise<unknown>;

/**
 * Events claimed per endpoint slot: a healthy endpoint's next events are at hand when a slot frees
 * (one claim serves several attempts), and a hanging one's are given back when its breaker opens
 * or before their lease could run out.
 */
const PREFETCH_PER_SLOT = 4;
/** An attempt starts only with its whole timeout and this much more left on its lease. */
const LEASE_MARGIN_MS = 2000;

const split = (key: string) => {
  const [merchantId = '', endpoint = ''] = key.split(' ');
  return { merchantId, endpoint };
};

/**
 * Delivers the outbox, one merchant isolated from another and one endpoint from another
 * (docs/callbacks.md, "Isolation"). A continuous scheduler, not batches: each attempt is started as
 * soon as its merchant and endpoint have a free slot and recorded as soon as it ends, so no attempt
 * waits for a slower one to another endpoint. Due events are taken round-robin by merchant, then by
 * endpoint within the merchant; a merchant holds at most its share of the worker
 * (`merchantShare` percent of `batch`, in flight and claimed; src/callbacks/slots.ts), an endpoint at
 * most `slots` in flight; an endpoint whose breaker
 * is open is skipped, its events deferred (src/callbacks/breaker.ts).
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
  private readonly leaseMs: number;
  private readonly breaker: BreakerSettings;
  /** Attempts in flight and claimed events waiting for a slot, per merchant and endpoint. */
  private readonly book: SlotBook;
  /** What is left of its lease when an attempt may start: its timeout and a margin. */
  private readonly minLeaseMs: number;
  /**
   * Consecutive failed attempts per endpoint (breaker.ts, healthy), as this worker saw them since the last
   * record told it the breaker's count: at the breaker's threshold the endpoint waits for the
   * record (which opens the breaker) instead of spending its waiting events.
   */
  private readonly streak = new Map<string, number>();
  /** Attempts ended whose record is not yet written. */
  private recordsPending = 0;
  private readonly tasks = new Set<Promise<void>>();
  private filling: Promise<number> | null = null;
  private refill = false;
  private jobsRunning: Promise<void> | null = null;
  private jobsAgain = false;
  /** stop() was called: nothing more is claimed (a poll or completion under way included). */
  private closing = false;
  private settledWaiters: Array<() => void> = [];

  constructor(
    private readonly svc: Services,
    private readonly opts: WorkerOptions = {},
  ) {
    const batch = opts.batch ?? 256;
    this.leaseMs = opts.leaseMs ?? svc.config.callbacks.timeoutMs * 3;
    const slots = svc.config.callbacks.slots ?? DEFAULT_SLOTS;
    const share = svc.config.callbacks.merchantShare ?? DEFAULT_MERCHANT_SHARE;
    this.book = new SlotBook({
      total: batch,
      perMerchant: Math.max(1, Math.floor((batch * share) / 100)),
      perEndpoint: slots,
      prefetch: slots * PREFETCH_PER_SLOT,
    });
    const { timeoutMs } = svc.config.callbacks;
    this.minLeaseMs = timeoutMs + Math.min(LEASE_MARGIN_MS, Math.max(0, this.leaseMs - timeoutMs) / 2);
    this.breaker = breakerSettings(svc.config.callbacks);
  }

  start(): void {
    this.stopped = false;
    this.closing = false;
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
    this.closing = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.jobsRunning;
    await this.filling;
    for (const key of this.book.waitingKeys()) this.drop(key);
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
          // One job failing (its own rows are its business: each records and skips its failing
          // items) neither stops the others nor the delivery that follows.
          for (const job of jobs) await job(this.svc.clock()).catch((err) => this.svc.log.warn({ err }, 'worker job failed'));
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
      if (started === 0 && this.book.inFlightTotal === 0 && this.recordsPending === 0 && this.book.waitingTotal === 0) return total;
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

  private failing(key: string): boolean {
    return (this.streak.get(key) ?? 0) >= this.breaker.failures;
  }

  /** Attempts in flight per merchant, the 10 with most and `other` (`cardprogram_callback_in_flight`). */
  inFlightByMerchant(): Array<[string, number]> {
    return capLabels(this.book.inFlightByMerchant(), MERCHANT_LABELS);
  }

  private async claimAndStart(): Promise<number> {
    const room = this.book.room();
    if (room <= 0 || this.closing) return 0;
    const now = this.svc.clock();
    const failing = [...this.streak.keys()].filter((k) => this.failing(k)).map(split);
    const claimed = await claimDue(this.svc.database, {
      owner: this.owner,
      now,
      leaseUntil: now + this.leaseMs,
      limit: room,
      slots: this.book.limits.prefetch,
      perMerchant: this.book.limits.perMerchant,
      ...this.book.shape(failing),
    });
    const extra: string[] = [];
    const touched = new Set<string>();
    let taken = 0;
    for (const e of claimed) {
      // A probe goes at once (it is its endpoint's only attempt; the claim counted it in its
      // merchant's share); others wait for a slot.
      if (e.probe) this.launch(e);
      else if (!this.book.enqueue(e)) {
        extra.push(e.id);
        continue;
      } else touched.add(e.merchant_id);
      taken++;
    }
    for (const merchantId of touched) this.pump(merchantId);
    await unclaim(this.svc.database, this.owner, extra);
    return taken;
  }

  /**
   * Starts the merchant's waiting events while it and their endpoints have free slots, its endpoints
   * in turn. An event whose lease would end before its attempt could (timeout and a margin) is given
   * back instead: another worker may then take it, and no attempt is ever sent by two workers at once.
   */
  private pump(merchantId: string): void {
    const expiring: string[] = [];
    for (let e = this.book.next(merchantId, this.closing); e; e = this.book.next(merchantId, this.closing)) {
      if (this.closing || this.failing(keyOf(e)) || Number(e.lease_until) - this.svc.clock() < this.minLeaseMs) expiring.push(e.id);
      else this.launch(e);
    }
    if (expiring.length > 0) this.giveBack(expiring);
  }

  /** The endpoint's breaker opened (or the worker stops): its waiting events are given back. */
  private drop(key: string): void {
    const queue = this.book.drop(key);
    if (queue.length > 0) this.giveBack(queue.map((e) => e.id));
  }

  private giveBack(ids: string[]): void {
    const task = unclaim(this.svc.database, this.owner, ids)
      .catch((err) => this.svc.log.warn({ err }, 'callback events not given back (their lease will end)'))
      .finally(() => this.tasks.delete(task));
    this.tasks.add(task);
  }

  private launch(event: Claimed): void {
    const key = keyOf(event);
    this.book.started(event);
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      this.book.ended(event);
      this.pump(event.merchant_id);
      this.settled();
    };
    const task = this.attempt(event)
      .then((outcome) => {
        if (healthy(outcome.result, this.breaker.slowMs)) this.streak.delete(key);
        else this.streak.set(key, (this.streak.get(key) ?? 0) + 1);
        // The slot is the connection: free once the attempt ends, while its record is written.
        release();
        this.recordsPending++;
        return this.recordSoon(outcome).finally(() => {
          this.recordsPending--;
        });
      })
      .catch((err) => this.svc.log.warn({ err, eventId: event.id }, 'callback attempt not recorded'))
      .finally(() => {
        release();
        this.tasks.delete(task);
        this.settled();
      });
    this.tasks.add(task);
  }

  /** An attempt ended or was recorded: pass() looks again, and the free slot takes the next due event. */
  private settled(): void {
    const waiters = this.settledWaiters.splice(0);
    for (const w of waiters) w();
    if (!this.stopped) this.fill().catch((err) => this.svc.log.warn({ err }, 'callback worker pass failed'));
  }

  private readonly secrets = new Map<string, string>();

  private async secretOf(merchantId: string): Promise<string | null> {
    const hit = this.secrets.get(merchantId);
    if (hit) return hit;
    const row = await this.svc.database.read((db) =>
      db.selectFrom('merchants').select('webhook_secret_enc').where('id', '=', merchantId).executeTakeFirst(),
    );
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
      return { event, started, result: { status: null, error: 'merchant no longer exists', excerpt: '', durationMs: 0, sentMs: null } };
    const body = openPayload(this.svc.box, event);
    const result = await deliver({
      url: event.url,
      body,
      headers: webhookHeaders(secret, event.id, Math.floor(started / 1000), body),
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

  private async record(outcomes: Outcome[]): Promise<void> {
    // From here the database's breaker speaks: an open one is skipped by every claim.
    for (const b of await recordOutcomes(this.svc, this.owner, this.breaker, outcomes)) {
      const key = `${b.merchantId} ${b.endpoint}`;
      if (b.open || b.failures === 0) this.streak.delete(key);
      else this.streak.set(key, b.failures);
      if (b.open) this.drop(key);
    }
  }
}
