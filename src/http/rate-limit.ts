import type { Database } from '../db/index.js';
import { DomainError } from '../errors.js';

/** A merchant's budget: `perSecond` requests a second on average, up to `burst` at once. */
export interface RateLimit {
  perSecond: number;
  burst: number;
}

/** How long tokens taken from the shared bucket may be spent locally before they lapse. */
const LEASE_MS = 1000;

interface LocalBudget {
  /** The burst this budget was leased under: a changed limit starts afresh. */
  burst: number;
  /** Tokens leased from the shared bucket, spendable by this instance until `expires`. */
  tokens: number;
  expires: number;
  /** The shared bucket was found empty: refuse locally, without asking again, until then. */
  emptyUntil: number;
  pending: Promise<void> | null;
}

/**
 * Per-merchant token buckets (decisions §5: 1009, HTTP 429 with Retry-After), shared by every
 * instance on the same database. The bucket lives in `rate_buckets`; an instance takes a small lease
 * of tokens from it (a tenth of the burst, at most) in one short transaction and spends them from
 * memory, so the database sees about one write per lease, not one per request. Tokens are only ever
 * taken from the shared bucket, never created locally, so all instances together never admit more
 * than the bucket allows; a lease not spent within a second lapses (a little under-admission,
 * never over-admission). While the bucket is empty an instance refuses without asking the database
 * again until the next token is due, so a flood costs nothing per request.
 */
export class RateLimiter {
  private readonly budgets = new Map<string, LocalBudget>();

  constructor(
    private readonly database: Database,
    private readonly clock: () => number,
  ) {}

  /** Takes one token for the merchant, or throws 1009 with the seconds to wait. */
  async take(merchantId: string, limit: RateLimit): Promise<void> {
    let budget = this.budgets.get(merchantId);
    if (!budget || budget.burst !== limit.burst) {
      if (this.budgets.size > 10_000) this.budgets.clear();
      budget = { burst: limit.burst, tokens: 0, expires: 0, emptyUntil: 0, pending: null };
      this.budgets.set(merchantId, budget);
    }
    // Each lease either brings tokens or finds the bucket empty (and sets emptyUntil), so this ends;
    // a lease fetched for others may be spent before this request resumes, hence the loop.
    for (;;) {
      const now = this.clock();
      if (budget.tokens >= 1 && now < budget.expires) {
        budget.tokens -= 1;
        return;
      }
      if (now < budget.emptyUntil) throw limited(limit, budget.emptyUntil - now);
      if (!budget.pending) {
        const b = budget;
        b.pending = this.lease(merchantId, limit, b).finally(() => {
          b.pending = null;
        });
      }
      await budget.pending;
    }
  }

  private async lease(merchantId: string, limit: RateLimit, budget: LocalBudget): Promise<void> {
    const want = Math.max(1, Math.floor(limit.burst / 10));
    const now = this.clock();
    const got = await this.database.withTx(
      async (tx) => {
        // The row lock (PostgreSQL) or the write lock (SQLite) serialises instances on the bucket.
        await tx
          .insertInto('rate_buckets')
          .values({ merchant_id: merchantId, tokens: limit.burst, capacity: limit.burst, refilled_at: now })
          .onConflict((oc) => oc.column('merchant_id').doNothing())
          .execute();
        let query = tx.selectFrom('rate_buckets').select(['tokens', 'capacity', 'refilled_at']).where('merchant_id', '=', merchantId);
        if (this.database.dialect === 'postgres') query = query.forUpdate();
        const row = await query.executeTakeFirstOrThrow();
        const at = Math.max(now, Number(row.refilled_at));
        // A changed limit (the operator's `merchant update --rate-limit`) starts from a full bucket.
        const available =
          Number(row.capacity) !== limit.burst
            ? limit.burst
            : Math.min(limit.burst, Number(row.tokens) + (Math.max(0, at - Number(row.refilled_at)) * limit.perSecond) / 1000);
        const taken = Math.min(want, Math.floor(available));
        await tx
          .updateTable('rate_buckets')
          .set({ tokens: available - taken, capacity: limit.burst, refilled_at: at })
          .where('merchant_id', '=', merchantId)
          .execute();
        return { taken, available: available - taken };
      },
      // Losing a bucket's last update in a crash only hands back a few tokens.
      { durable: false },
    );
    budget.tokens = got.taken;
    budget.expires = now + LEASE_MS;
    budget.emptyUntil = got.taken === 0 ? now + Math.ceil(((1 - got.available) * 1000) / limit.perSecond) : 0;
  }
}

function limited(limit: RateLimit, waitMs: number): DomainError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  const err = new DomainError(
    'rateLimited',
    `Rate limit exceeded: at most ${limit.perSecond} requests a second (bursts of ${limit.burst}); retry after ${seconds} s`,
  );
  err.retryAfterSeconds = seconds;
  return err;
}
