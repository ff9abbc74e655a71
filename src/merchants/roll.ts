import { randomBytes } from 'node:crypto';
import type { VerbCtx } from '../context.js';
import { DomainError, invalid } from '../errors.js';
import { endPageAccess } from '../page/links.js';
import { checkRsaPublicKey } from './create.js';

export interface RollCredentialsInput {
  appId: string;
  /** RSA-SHA256 merchants: the PEM of the new public key (required for them, refused for HMAC). */
  publicKeyPem?: string | undefined;
  /** Also replace the webhook (callback signing) secret. */
  webhookSecret?: boolean | undefined;
}

export interface RolledCredentials {
  appId: string;
  /** HMAC merchants: the new secret, shown once (only its encryption is stored). */
  secret?: string;
  /** When asked for: the new webhook secret, shown once. */
  webhookSecret?: string;
}

/**
 * Replaces a merchant's signing credential (its HMAC secret, or its RSA public key) and, when asked,
 * its webhook secret, at once: a leaked secret stops working on this instance now and on every other
 * one within the merchant cache's bound (5 s by default), with no new appId for the merchant to
 * adopt. Requests already signed with the old secret are refused (1006) from then on; events not yet
 * delivered are signed with the new webhook secret when they are sent. Every card page link and
 * session of the merchant ends: cardholders open the page again with a link the merchant asks for.
 */
export async function rollCredentials({ ctx, input }: { ctx: VerbCtx; input: RollCredentialsInput }): Promise<RolledCredentials> {
  const { svc } = ctx;
  const merchant = await ctx.tx.selectFrom('merchants').select(['id', 'sign_type']).where('id', '=', input.appId).executeTakeFirst();
  if (!merchant) throw new DomainError('merchantNotFound', `No merchant with appId ${input.appId}`);
  const changes: { secret_enc?: string; public_key?: string; webhook_secret_enc?: string; updated_at: number } = {
    updated_at: ctx.now,
  };
  const rolled: RolledCredentials = { appId: merchant.id };
  if (merchant.sign_type === 'HMAC-SHA256') {
    if (input.publicKeyPem) throw invalid('publicKey', 'goes with RSA-SHA256 merchants only');
    rolled.secret = `${svc.config.env === 'production' ? 'sk_live' : 'sk_test'}_${randomBytes(16).toString('hex')}`;
    changes.secret_enc = svc.box.seal(rolled.secret, `merchant-secret:${merchant.id}`);
  } else {
    if (!input.publicKeyPem) throw invalid('publicKey', 'is required to roll an RSA-SHA256 merchant’s key');
    changes.public_key = checkRsaPublicKey(input.publicKeyPem);
  }
  if (input.webhookSecret) {
    rolled.webhookSecret = `whsec_${randomBytes(24).toString('base64')}`;
    changes.webhook_secret_enc = svc.box.seal(rolled.webhookSecret, `webhook-secret:${merchant.id}`);
  }
  await ctx.tx.updateTable('merchants').set(changes).where('id', '=', merchant.id).execute();
  // A session or link got with the leaked secret must not outlive it: every one ends now.
  await endPageAccess(ctx.tx, merchant.id);
  ctx.afterCommit(() => svc.merchants.forget(merchant.id));
  return rolled;
}
