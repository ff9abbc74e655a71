import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { checkCallbackUrl } from '../callbacks/url-guard.js';
import type { MerchantCtx } from '../context.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import type { OperationInput } from '../operation-input.js';
import type { ThreeDsSettings, ThreeDsSettingsUpdateBody } from './schemas.js';

export type ThreeDsSettingsInput = OperationInput<Static<typeof ThreeDsSettingsUpdateBody>>;

/** The merchant's 3-D Secure settings as they are (a read: no transaction of its own). */
export async function threeDsSettingsOf(db: Kysely<DB>, merchantId: string): Promise<ThreeDsSettings> {
  const row = await db
    .selectFrom('merchants')
    .select(['three_ds_decision_url', 'three_ds_challenge_method'])
    .where('id', '=', merchantId)
    .executeTakeFirst();
  if (!row) throw new DomainError('merchantNotFound', `No merchant with appId ${merchantId}`);
  return { decisionUrl: row.three_ds_decision_url, challengeMethod: row.three_ds_challenge_method };
}

/**
 * Changes the fields the request carries (decisions §14.6): the decision endpoint (`decisionUrl`,
 * null removes it; the SSRF rules of callbacks, as for the authorization endpoint) and the challenge
 * method. Read by every AReq in its transaction: the next AReq uses them, on every instance.
 */
export async function updateThreeDsSettings({ ctx, input }: { ctx: MerchantCtx; input: ThreeDsSettingsInput }): Promise<ThreeDsSettings> {
  const changes: { three_ds_decision_url?: string | null; three_ds_challenge_method?: 'otp' | 'oob' } = {};
  if (input.decisionUrl !== undefined) {
    changes.three_ds_decision_url =
      input.decisionUrl === null ? null : checkCallbackUrl('decisionUrl', input.decisionUrl, ctx.svc.config.env);
  }
  if (input.challengeMethod !== undefined) changes.three_ds_challenge_method = input.challengeMethod;
  if (Object.keys(changes).length > 0) {
    await ctx.tx
      .updateTable('merchants')
      .set({ ...changes, updated_at: ctx.now })
      .where('id', '=', ctx.merchantId)
      .execute();
  }
  return threeDsSettingsOf(ctx.tx, ctx.merchantId);
}
