import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { checkCallbackUrl } from '../callbacks/url-guard.js';
import type { MerchantCtx } from '../context.js';
import type { AuthMethodType, DB } from '../db/schema.js';
import type { OperationInput } from '../operation-input.js';
import type { TokenSettings, TokenSettingsUpdateBody } from './schemas.js';

export type TokenSettingsInput = OperationInput<Static<typeof TokenSettingsUpdateBody>>;

function methodsOf(json: string | null): AuthMethodType[] | null {
  if (json === null) return null;
  try {
    const parsed = JSON.parse(json) as unknown;
    return Array.isArray(parsed) ? (parsed as AuthMethodType[]) : null;
  } catch {
    return null;
  }
}

/** The merchant's token settings as they are (decisions §15.3; none stored: no endpoint, the default methods). A read. */
export async function tokenSettingsOf(db: Kysely<DB>, merchantId: string): Promise<TokenSettings> {
  const row = await db
    .selectFrom('merchant_token_settings')
    .select(['decision_url', 'methods'])
    .where('merchant_id', '=', merchantId)
    .executeTakeFirst();
  return { decisionUrl: row?.decision_url ?? null, methods: methodsOf(row?.methods ?? null) };
}

/**
 * Changes the fields the request carries (tokenSettingsUpdate, decisions §15.3): the token decision
 * endpoint (`decisionUrl`, null removes it; the SSRF rules of callbacks, as for the authorization
 * and 3-D Secure endpoints) and the step-up methods offered (`methods`, null: the default). Read by
 * every provisioning: the next one uses them, on every instance.
 */
export async function updateTokenSettings({ ctx, input }: { ctx: MerchantCtx; input: TokenSettingsInput }): Promise<TokenSettings> {
  const current = await tokenSettingsOf(ctx.tx, ctx.merchantId);
  const decisionUrl =
    input.decisionUrl === undefined
      ? current.decisionUrl
      : input.decisionUrl === null
        ? null
        : checkCallbackUrl('decisionUrl', input.decisionUrl, ctx.svc.config.env);
  const methods = input.methods === undefined ? current.methods : input.methods;
  const values = { decision_url: decisionUrl, methods: methods === null ? null : JSON.stringify(methods), updated_at: ctx.now };
  await ctx.tx
    .insertInto('merchant_token_settings')
    .values({ merchant_id: ctx.merchantId, ...values })
    .onConflict((oc) => oc.column('merchant_id').doUpdateSet(values))
    .execute();
  return { decisionUrl, methods };
}
