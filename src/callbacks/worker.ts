import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Services } from '../context.js';
import { newId } from '../db/ids.js';
import type { CallbackEventsTable } from '../db/schema.js';
import { type DeliveryResult, deliver, type Resolver } from './deliver.js';
import { NOTIFY_EVENTS, openPayload } from './outbox.js';
import { webhookHeaders } from './webhook-signature.js';

type EventRow = CallbackEventsTable;

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
  /** How many events one pass claims. */
  batch?: number;
  /** How long a claimed event stays ours; past it another worker may take it. */
  leaseMs?: number;
  resolver?: Resolver;
  /** Jobs run on every pass besides delivery (the sandbox's automatic KYC reviewer). */
  jobs?: Array<(now: number) => Promise<unknown>>;
}

/**
 * Delivers the outbox. Several workers (threads of one service, `cardprogram worker` processes,
 * other instances) may run at once: each claims due events with a lease (`FOR UPDATE SKIP LOCKED` on
 * PostgreSQL, the write lock on SQLite), so one attempt is never sent twice at once; an event whose
 * worker died is taken again when its lease runs out. Delivery is at least once: a receiver drops
 * duplicates by `eventId`.
 */
export class CallbackWorker {
  readonly owner = `wrk_${randomBytes(6).toString('hex')}`;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;
  private readonly batch: number;
  private readonly leaseMs: number;

  constructor(
    private readonly svc: Services,
    private readonly opts: WorkerOptions = {},
  ) {
    this.batch = opts.batch ?? 100;
    this.leaseMs = opts.leaseMs ?? svc.config.callbacks.timeoutMs * 3;
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Something was committed: look now rather than at the next poll. */
  poke(): void {
    if (this.stopped) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.pass()
        .then(() => undefined)
        .catch((err) => this.svc.log.warn({ err }, 'callback worker pass failed'))
        .finally(() => {
          this.running = null;
          const now = this.again;
          this.again = false;
          this.schedule(now ? 0 : this.svc.config.callbacks.pollMs);
        });
    }, ms);
    this.timer.unref();
  }

  /** One pass: the jobs, then claim and deliver due events until none are left. Returns how many were attempted. */
  async pass(): Promise<number> {
    for (const job of this.opts.jobs ?? []) await job(this.svc.clock());
    let total = 0;
    for (;;) {
      const claimed = await this.claim();
      if (claimed.length === 0) return total;
      total += claimed.length;
      const outcomes = await Promise.all(claimed.map((e) => this.attempt(e)));
      await this.record(outcomes);
    }
  }

  private async claim(): Promise<EventRow[]> {
    const { database } = this.svc;
    const now = this.svc.clock();
    const leaseUntil = now + this.leaseMs;
    const lock = database.dialect === 'postgres' ? sql`for update skip locked` : sql``;
    // A lease lost in a crash only means the event is claimed again: no need to wait for the disk.
    const { rows } = await database.withTx(
      (tx) =>
        sql<EventRow>`
      update callback_events set lease_owner = ${this.owner}, lease_until = ${leaseUntil}
      where id in (
        select id from callback_events
        where status = 'pending' and next_attempt_at <= ${now} and (lease_until is null or lease_until < ${now})
        order by next_attempt_at limit ${this.batch} ${lock}
      )
      returning *`.execute(tx),
      { durable: false },
    );
    const claimed = rows.map((r) => ({ ...r, attempts: Number(r.attempts), created_at: Number(r.created_at) }));
    // A notify event goes to the merchant's notify URL as it is now. An event committed with the URL
    // of a moment before (its transaction read it just before the operator's change committed, so
    // the change's re-targeting missed it) still goes where the operator points. A removed URL leaves
    // the events where they were written for.
    const notify = claimed.filter((e) => (NOTIFY_EVENTS as readonly string[]).includes(e.type));
    if (notify.length > 0) {
      const merchants = await database.db
        .selectFrom('merchants')
        .select(['id', 'notify_url'])
        .where('id', 'in', [...new Set(notify.map((e) => e.merchant_id))])
        .execute();
      const urls = new Map(merchants.map((m) => [m.id, m.notify_url]));
      for (const e of notify) e.url = urls.get(e.merchant_id) ?? e.url;
    }
    return claimed;
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

  /** Sends one event once; the outcome is recorded with the rest of the batch. */
  private async attempt(event: EventRow): Promise<{ event: EventRow; result: DeliveryResult; started: number }> {
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

  /**
   * Records a batch's attempts and the events' new state in one transaction. Not waiting for the
   * disk is safe here: if a crash loses the record, the event is still pending and is sent again
   * (at least once), with the same eventId.
   */
  private async record(outcomes: Array<{ event: EventRow; result: DeliveryResult; started: number }>): Promise<void> {
    const { database, config } = this.svc;
    const now = this.svc.clock();
    await database.withTx(
      async (tx) => {
        for (const { event, result, started } of outcomes) {
          const ok = result.status !== null && result.status >= 200 && result.status < 300;
          const attempts = event.attempts + 1;
          const next = ok
            ? null
            : nextAttemptAt(event.created_at, attempts, now, config.callbacks.retryScheduleMs, config.callbacks.maxAgeMs);
          const error = ok ? null : (result.error ?? `HTTP ${result.status}`);
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
              // Where it was sent (a notify event follows the merchant's URL, see claim).
              url: event.url,
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
          if (!ok) this.svc.log.info({ eventId: event.id, attempt: attempts, error, next }, 'callback attempt failed');
          this.svc.metrics.delivery(ok ? 'delivered' : next === null ? 'failed' : 'retry');
        }
      },
      { durable: false },
    );
  }
}
