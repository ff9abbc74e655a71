import type { RateLimit } from '../config.js';
import type { Database } from '../db/index.js';
import { type DomainError, rateLimited } from '../errors.js';

/** How long tokens taken from the shared bucket may be spent locally before they lapse. */
const LEASE_MS = 1000;
/** A clock this far behind the bucket's last refill is taken as wrong, not waited for. */
const CLOCK_FAULT_MS = 1000;
/** Rounds a request may wait behind other requests' leases before it is refused (a safety net). */
const MAX_ROUNDS = 50;

interface LocalBudget {
  /** The burst this budget was leased under: a changed limit drops what was leased before. */
  burst: number;
  /** Tokens leased from the shared bucket, spendable by this instance until `expires`. */
  tokens: number;
  /** Tokens spent from the current lease. */
  spent: number;
  /** The next lease's size: it follows what this instance actually spends. */
  size: number;
  /** Monotonic times (ms). */
  expires: number;
  /** The shared bucket was found (nearly) empty: refuse locally, without asking again, until then. */
  emptyUntil: number;
  /** Requests waiting for the lease in flight. */
  waiting: number;
  pending: Promise<void> | null;
}

/**
 * Per-merchant token buckets (decisions §5: 1009, HTTP 429 with Retry-After), shared by every
 * instance on the same database. The bucket lives in `rate_buckets`; an instance takes a lease of
 * tokens from it in one short transaction and spends them from memory. Tokens are only ever taken
 * from the shared bucket, never created locally, so the instances together admit no more than the
 * bucket allows (when their clocks agree, see below). A lease not spent within a second lapses, so
 * its size follows what the instance spends (1 at first, doubling while they run out, at most a
 * tenth of the burst): a quiet instance holds back almost nothing from the others.
 *
 * When the bucket is (nearly) empty, the instance refuses locally until a batch of tokens (half a
 * lease) is due, so a merchant held at its limit costs the database a write per batch, and a flood
 * costs nothing per request. Local timers use a monotonic clock. The bucket's refill uses the wall
 * clock of whichever instance leases: a clock more than a second behind the last refill is taken as
 * a fault and the bucket refills from there, never locking the merchant out (clocks far apart make
 * the shared budget generous, so keep them synchronised).
 */
export class RateLimiter {
  private readonly budgets = new Map<string, LocalBudget>();

  constructor(
    private readonly database: Database,
    /** Wall clock (ms), for the shared bucket. */
    private readonly clock: () => number,
    /** Monotonic clock (ms), for this instance's leases and refusals. */
    private readonly monotonic: () => number = () => performance.now(),
  ) {}

  /** Takes one token for the merchant, or throws 1009 with the seconds to wait. */
  async take(merchantId: string, limit: RateLimit): Promise<void> {
    let budget = this.budgets.get(merchantId);
    if (!budget || budget.burst !== limit.burst) {
      if (this.budgets.size > 10_000) this.budgets.clear();
      budget = { burst: limit.burst, tokens: 0, spent: 0, size: 1, expires: 0, emptyUntil: 0, waiting: 0, pending: null };
      this.budgets.set(merchantId, budget);
    }
    // Each lease either brings tokens or sets emptyUntil; the requests waiting for it resume before
    // any newer one, so this ends. The cap only guards against a bug turning it into a storm.
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const t = this.monotonic();
      if (budget.tokens >= 1 && t < budget.expires) {
        budget.tokens -= 1;
        budget.spent += 1;
        return;
      }
      if (t < budget.emptyUntil) throw limited(limit, budget.emptyUntil - t);
      if (!budget.pending) {
        const b = budget;
        // Ran out within the lease: lease more next time. Lapsed unspent: lease what was spent.
        b.size = b.tokens < 1 && t < b.expires ? Math.min(b.size * 2, limit.burst) : Math.max(1, b.spent);
        b.pending = this.lease(merchantId, limit, b).finally(() => {
          b.pending = null;
        });
      }
      budget.waiting += 1;
      try {
        await budget.pending;
      } finally {
        budget.waiting -= 1;
      }
    }
    throw limited(limit, 1000 / limit.perSecond);
  }

  private async lease(merchantId: string, limit: RateLimit, budget: LocalBudget): Promise<void> {
    const most = Math.max(1, Math.floor(limit.burst / 10));
    const want = Math.min(most, Math.max(budget.size, budget.waiting + 1));
    const now = this.clock();
    const got = await this.database.withTx(
      async (tx) => {
        // The row lock (PostgreSQL) or the write lock (SQLite) serialises instances on the bucket.
        await tx
          .insertInto('rate_buckets')
          .values({ merchant_id: merchantId, tokens: limit.burst, refilled_at: now })
          .onConflict((oc) => oc.column('merchant_id').doNothing())
          .execute();
        let query = tx.selectFrom('rate_buckets').select(['tokens', 'refilled_at']).where('merchant_id', '=', merchantId);
        if (this.database.dialect === 'postgres') query = query.forUpdate();
        const row = await query.executeTakeFirstOrThrow();
        const last = Number(row.refilled_at);
        // A refill stamped in the future: slightly (another instance's clock) it is waited for;
        // far (a clock fault) it is disregarded.
        const at = now >= last || last - now > CLOCK_FAULT_MS ? now : last;
        const available = Math.min(limit.burst, Number(row.tokens) + (Math.max(0, at - last) * limit.perSecond) / 1000);
        const taken = Math.min(want, Math.floor(available));
        await tx
          .updateTable('rate_buckets')
          .set({ tokens: available - taken, refilled_at: at })
          .where('merchant_id', '=', merchantId)
          .execute();
        return { taken, left: available - taken };
      },
      // Losing a bucket's last update in a crash only hands back a few tokens.
      { durable: false },
    );
    const t = this.monotonic();
    budget.tokens = got.taken;
    budget.spent = 0;
    budget.expires = t + LEASE_MS;
    // Short of what was wanted: the bucket is (nearly) empty. Ask again once half a lease is due.
    const batch = Math.max(1, Math.ceil(want / 2));
    budget.emptyUntil = got.taken < want ? t + Math.ceil(((batch - got.left) * 1000) / limit.perSecond) : 0;
  }
}

function limited(limit: RateLimit, waitMs: number): DomainError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return rateLimited(
    `Rate limit exceeded: at most ${limit.perSecond} requests a second (bursts of ${limit.burst}); retry after ${seconds} s`,
    seconds,
  );
}
