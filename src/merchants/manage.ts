import type { Kysely } from 'kysely';
import { endpointOf } from '../callbacks/endpoint.js';
import { NOTIFY_EVENTS } from '../callbacks/outbox.js';
import { checkCallbackUrl } from '../callbacks/url-guard.js';
import type { VerbCtx } from '../context.js';
import type { AuthorizationDefault, DB } from '../db/schema.js';
import { DomainError, invalid } from '../errors.js';
import { endPageAccess } from '../page/links.js';
import { endpointChanges } from './authorization-endpoint.js';

export interface MerchantSummary {
  appId: string;
  name: string;
  signType: string;
  status: string;
  loginFree: boolean;
  notifyUrl: string | null;
  /** Requests per second; null: the service's default. */
  rateLimit: number | null;
  /** The real-time authorization endpoint, its deadline (ms) and its default decision. */
  authorizationUrl: string | null;
  authorizationTimeoutMs: number;
  authorizationDefault: string;
  /** A dispute's submission credits the card at once (decisions §13.3). */
  disputeProvisionalCredit: boolean;
  createdAt: string;
}

/** One merchant's settings (no secret among them); undefined for an unknown appId. */
export async function merchantSummary(db: Kysely<DB>, appId: string): Promise<MerchantSummary | undefined> {
  const row = await db.selectFrom('merchants').selectAll().where('id', '=', appId).executeTakeFirst();
  return row && summary(row);
}

/** Every merchant, oldest first (a read: no transaction of its own). */
export async function listMerchants(db: Kysely<DB>): Promise<MerchantSummary[]> {
  const rows = await db.selectFrom('merchants').selectAll().orderBy('created_at').execute();
  return rows.map(summary);
}

function summary(m: {
  id: string;
  name: string;
  sign_type: string;
  status: string;
  login_free: number;
  notify_url: string | null;
  rate_limit: number | null;
  authorization_url: string | null;
  authorization_timeout_ms: number;
  authorization_default: string;
  dispute_provisional_credit: number;
  created_at: number;
}): MerchantSummary {
  return {
    appId: m.id,
    name: m.name,
    signType: m.sign_type,
    status: m.status,
    loginFree: m.login_free === 1,
    notifyUrl: m.notify_url,
    rateLimit: m.rate_limit,
    authorizationUrl: m.authorization_url,
    authorizationTimeoutMs: m.authorization_timeout_ms,
    authorizationDefault: m.authorization_default,
    disputeProvisionalCredit: m.dispute_provisional_credit === 1,
    createdAt: new Date(m.created_at).toISOString(),
  };
}

export interface UpdateMerchantInput {
  appId: string;
  status?: 'active' | 'disabled' | undefined;
  loginFree?: boolean | undefined;
  /** null removes the notify URL. */
  notifyUrl?: string | null | undefined;
  /** Requests per second; null goes back to the service's default. */
  rateLimit?: number | null | undefined;
  /** The real-time authorization endpoint: null removes it (src/merchants/authorization-endpoint.ts). */
  authorizationUrl?: string | null | undefined;
  authorizationTimeoutMs?: number | undefined;
  authorizationDefault?: AuthorizationDefault | undefined;
  /** Provisional credit at a dispute's submission (decisions §13.3). */
  disputeProvisionalCredit?: boolean | undefined;
}

/** The operator's change of a merchant's settings (`cardprogram merchant update`). */
export async function updateMerchant({ ctx, input }: { ctx: VerbCtx; input: UpdateMerchantInput }): Promise<MerchantSummary> {
  const changes: {
    status?: 'active' | 'disabled';
    login_free?: number;
    notify_url?: string | null;
    rate_limit?: number | null;
    dispute_provisional_credit?: number;
    updated_at: number;
  } & ReturnType<typeof endpointChanges> = {
    updated_at: ctx.now,
    ...endpointChanges(
      { authorizationUrl: input.authorizationUrl, timeoutMs: input.authorizationTimeoutMs, defaultDecision: input.authorizationDefault },
      ctx.svc.config.env,
    ),
  };
  if (input.status !== undefined) changes.status = input.status;
  if (input.loginFree !== undefined) changes.login_free = input.loginFree ? 1 : 0;
  if (input.disputeProvisionalCredit !== undefined) changes.dispute_provisional_credit = input.disputeProvisionalCredit ? 1 : 0;
  if (input.rateLimit !== undefined) {
    if (input.rateLimit !== null && (!Number.isSafeInteger(input.rateLimit) || input.rateLimit < 1 || input.rateLimit > 1_000_000)) {
      throw invalid('rateLimit', 'must be a whole number of requests a second, 1 to 1000000');
    }
    changes.rate_limit = input.rateLimit;
  }
  if (input.notifyUrl !== undefined)
    changes.notify_url = input.notifyUrl === null ? null : checkCallbackUrl('notifyUrl', input.notifyUrl, ctx.svc.config.env);
  const { tx } = ctx;
  const res = await tx.updateTable('merchants').set(changes).where('id', '=', input.appId).executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) throw new DomainError('merchantNotFound', `No merchant with appId ${input.appId}`);
  // Notify events not yet delivered follow the new URL: an operator fixing a broken URL expects the
  // queue to drain there. (A KYC request's own callbackUrl is the merchant's word for that request.)
  if (typeof changes.notify_url === 'string') {
    await tx
      .updateTable('callback_events')
      .set({ url: changes.notify_url, endpoint: endpointOf(changes.notify_url) })
      .where('merchant_id', '=', input.appId)
      .where('type', 'in', [...NOTIFY_EVENTS])
      .where('status', 'in', ['pending', 'failed'])
      .execute();
  }
  // Access taken away ends the card page's links and sessions too, for good (docs/login-free-page.md).
  if (input.status === 'disabled' || input.loginFree === false) await endPageAccess(tx, input.appId);
  // Every instance sees the change within the directory's cache bound; this one at once.
  ctx.afterCommit(() => ctx.svc.merchants.forget(input.appId));
  return (await merchantSummary(tx, input.appId)) as MerchantSummary;
}
