import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { checkCallbackUrl } from '../callbacks/url-guard.js';
import type { MerchantCtx } from '../context.js';
import type { AuthorizationDefault, DB } from '../db/schema.js';
import { DomainError, invalid } from '../errors.js';
import type { OperationInput } from '../operation-input.js';
import type { AuthorizationEndpointBody, AuthorizationEndpointModel } from './schemas.js';

/** How long an authorization endpoint may take (2 s until the merchant says otherwise: migration 0011). */
const ENDPOINT_TIMEOUT = { min: 100, max: 5000 } as const;

/** authorizationEndpointUpdate's body without the signed envelope: a URL (null removes it; the SSRF rules of callbacks apply), absent fields left as they are. */
export type EndpointSettingsInput = OperationInput<Static<typeof AuthorizationEndpointBody>>;

export type EndpointSettings = AuthorizationEndpointModel;

/**
 * The columns a change of the endpoint's settings writes, checked. Every field may be absent (left
 * as it is): the operator's `merchant update` changes only what it is given.
 */
export function endpointChanges(
  input: { [K in keyof EndpointSettingsInput]?: EndpointSettingsInput[K] | undefined },
  env: 'sandbox' | 'production',
): { authorization_url?: string | null; authorization_timeout_ms?: number; authorization_default?: AuthorizationDefault } {
  const out: ReturnType<typeof endpointChanges> = {};
  if (input.authorizationUrl !== undefined) {
    out.authorization_url = input.authorizationUrl === null ? null : checkCallbackUrl('authorizationUrl', input.authorizationUrl, env);
  }
  if (input.timeoutMs !== undefined) {
    const ms = input.timeoutMs;
    if (!Number.isSafeInteger(ms) || ms < ENDPOINT_TIMEOUT.min || ms > ENDPOINT_TIMEOUT.max) {
      throw invalid('timeoutMs', `must be a whole number of milliseconds, ${ENDPOINT_TIMEOUT.min} to ${ENDPOINT_TIMEOUT.max}`);
    }
    out.authorization_timeout_ms = ms;
  }
  if (input.defaultDecision !== undefined) {
    if (input.defaultDecision !== 'approve' && input.defaultDecision !== 'decline') {
      throw invalid('defaultDecision', 'must be approve or decline');
    }
    out.authorization_default = input.defaultDecision;
  }
  return out;
}

/** The merchant's endpoint settings as they are (a read: no transaction of its own). */
export async function authorizationEndpointOf(db: Kysely<DB>, appId: string): Promise<EndpointSettings> {
  const row = await db
    .selectFrom('merchants')
    .select(['authorization_url', 'authorization_timeout_ms', 'authorization_default'])
    .where('id', '=', appId)
    .executeTakeFirstOrThrow();
  return { authorizationUrl: row.authorization_url, timeoutMs: row.authorization_timeout_ms, defaultDecision: row.authorization_default };
}

/**
 * Sets where the merchant's `authorization.request` events go (decisions §11), how long the
 * endpoint may take and what applies when it does not answer. This instance uses the new settings
 * at once, every other within the merchant cache's bound. The operator sets them with
 * `merchant update` (updateMerchant, the same checks: endpointChanges).
 */
export async function setAuthorizationEndpoint({
  ctx,
  input,
}: {
  ctx: MerchantCtx;
  input: EndpointSettingsInput;
}): Promise<EndpointSettings> {
  const appId = ctx.merchantId;
  const changes = endpointChanges(input, ctx.svc.config.env);
  const res = await ctx.tx
    .updateTable('merchants')
    .set({ ...changes, updated_at: ctx.now })
    .where('id', '=', appId)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) throw new DomainError('merchantNotFound', `No merchant with appId ${appId}`);
  ctx.afterCommit(() => ctx.svc.merchants.forget(appId));
  return authorizationEndpointOf(ctx.tx, appId);
}
