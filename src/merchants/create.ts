import { createPublicKey, randomBytes } from 'node:crypto';
import type { Services } from '../context.js';
import { newAppId } from '../db/ids.js';
import { invalid } from '../errors.js';

export const SIGN_TYPES = ['HMAC-SHA256', 'RSA-SHA256'] as const;
export type SignType = (typeof SIGN_TYPES)[number];

export interface CreateMerchantInput {
  name: string;
  signType: SignType;
  /** PEM of the merchant's RSA public key (RSA-SHA256 only); the private key never reaches us. */
  publicKeyPem?: string | undefined;
  loginFree?: boolean | undefined;
  notifyUrl?: string | undefined;
}

export interface CreatedMerchant {
  appId: string;
  /** Shown once, at creation: only its encryption is stored. */
  secret?: string;
  webhookSecret: string;
}

export function checkRsaPublicKey(pem: string): string {
  let key: ReturnType<typeof createPublicKey>;
  try {
    key = createPublicKey(pem);
  } catch {
    throw invalid('publicKey', 'must be an RSA public key in PEM format');
  }
  if (key.asymmetricKeyType !== 'rsa') throw invalid('publicKey', 'must be an RSA key');
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < 2048) throw invalid('publicKey', `must have at least 2048 bits, has ${bits}`);
  return key.export({ type: 'spki', format: 'pem' }).toString();
}

export function checkNotifyUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid('notifyUrl', 'must be an absolute http(s) URL');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw invalid('notifyUrl', 'must be an http(s) URL');
  return parsed.toString();
}

export async function createMerchant({ ctx, input }: { ctx: Services; input: CreateMerchantInput }): Promise<CreatedMerchant> {
  const name = input.name.trim();
  if (name === '' || name.length > 200) throw invalid('name', 'must be 1 to 200 characters');
  const appId = newAppId();
  const live = ctx.config.env === 'production';
  let secret: string | undefined;
  let publicKey: string | null = null;
  if (input.signType === 'HMAC-SHA256') {
    secret = `${live ? 'sk_live' : 'sk_test'}_${randomBytes(16).toString('hex')}`;
  } else {
    if (!input.publicKeyPem) throw invalid('publicKey', 'is required for RSA-SHA256 merchants');
    publicKey = checkRsaPublicKey(input.publicKeyPem);
  }
  // Standard Webhooks secret format: whsec_ and Base64 of the key bytes.
  const webhookSecret = `whsec_${randomBytes(24).toString('base64')}`;
  const now = ctx.clock();
  await ctx.database.db
    .insertInto('merchants')
    .values({
      id: appId,
      name,
      sign_type: input.signType,
      secret_enc: secret === undefined ? null : ctx.box.seal(secret, `merchant-secret:${appId}`),
      public_key: publicKey,
      webhook_secret_enc: ctx.box.seal(webhookSecret, `webhook-secret:${appId}`),
      login_free: input.loginFree ? 1 : 0,
      notify_url: input.notifyUrl ? checkNotifyUrl(input.notifyUrl) : null,
      status: 'active',
      created_at: now,
      updated_at: now,
    })
    .execute();
  return secret === undefined ? { appId, webhookSecret } : { appId, secret, webhookSecret };
}
