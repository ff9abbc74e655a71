import { createPublicKey, randomBytes } from 'node:crypto';
import { checkCallbackUrl } from '../callbacks/url-guard.js';
import type { VerbCtx } from '../context.js';
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

/**
 * RSA keys from 2048 to 3072 bits, exponent 65537: a 3072-bit signature is 512 characters of Base64, the limit the
 * interface sets for `sign`; a larger key could never sign an accepted request.
 */
export const RSA_BITS = { min: 2048, max: 3072 } as const;

export function checkRsaPublicKey(pem: string): string {
  // The merchant's private key must never pass through the operator's hands or our storage.
  if (/PRIVATE KEY/.test(pem)) throw invalid('publicKey', 'is a private key: give the public key only (openssl rsa -in key.pem -pubout)');
  let key: ReturnType<typeof createPublicKey>;
  try {
    key = createPublicKey(pem);
  } catch {
    throw invalid('publicKey', 'must be an RSA public key in PEM format');
  }
  if (key.asymmetricKeyType !== 'rsa') throw invalid('publicKey', 'must be an RSA key');
  // Why exactly 65537: with exponent 1 a "signature" is the message itself, so anyone can forge one;
  // small exponents (3) open known attacks on PKCS#1 v1.5 verifiers. Every common tool uses 65537.
  const exponent = key.asymmetricKeyDetails?.publicExponent;
  if (exponent !== 65537n) throw invalid('publicKey', `must have the public exponent 65537, has ${exponent ?? 'none'}`);
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < RSA_BITS.min) throw invalid('publicKey', `must have at least ${RSA_BITS.min} bits, has ${bits}`);
  if (bits > RSA_BITS.max) {
    throw invalid('publicKey', `must have at most ${RSA_BITS.max} bits (its signatures must fit the 512 characters of sign), has ${bits}`);
  }
  // An even modulus is not a product of two large primes: its factor 2 gives the private key away.
  const n = key.export({ format: 'jwk' }).n ?? '';
  const last = Buffer.from(n, 'base64url').at(-1) ?? 0;
  if (last % 2 === 0) throw invalid('publicKey', 'is not a valid RSA key: its modulus is even');
  return key.export({ type: 'spki', format: 'pem' }).toString();
}

/** The operator's new merchant (`cardprogram merchant create`). */
export async function createMerchant({ ctx, input }: { ctx: VerbCtx; input: CreateMerchantInput }): Promise<CreatedMerchant> {
  const { svc } = ctx;
  const name = input.name.trim();
  if (name === '' || name.length > 200) throw invalid('name', 'must be 1 to 200 characters');
  const appId = newAppId();
  const live = svc.config.env === 'production';
  let secret: string | undefined;
  let publicKey: string | null = null;
  if (input.signType === 'HMAC-SHA256') {
    if (input.publicKeyPem) throw invalid('publicKey', 'goes with RSA-SHA256 merchants only');
    secret = `${live ? 'sk_live' : 'sk_test'}_${randomBytes(16).toString('hex')}`;
  } else {
    if (!input.publicKeyPem) throw invalid('publicKey', 'is required for RSA-SHA256 merchants');
    publicKey = checkRsaPublicKey(input.publicKeyPem);
  }
  // Standard Webhooks secret format: whsec_ and Base64 of the key bytes.
  const webhookSecret = `whsec_${randomBytes(24).toString('base64')}`;
  const now = ctx.now;
  await ctx.tx
    .insertInto('merchants')
    .values({
      id: appId,
      name,
      sign_type: input.signType,
      secret_enc: secret === undefined ? null : svc.box.seal(secret, `merchant-secret:${appId}`),
      public_key: publicKey,
      webhook_secret_enc: svc.box.seal(webhookSecret, `webhook-secret:${appId}`),
      login_free: input.loginFree ? 1 : 0,
      notify_url: input.notifyUrl ? checkCallbackUrl('notifyUrl', input.notifyUrl, svc.config.env) : null,
      status: 'active',
      created_at: now,
      updated_at: now,
    })
    .execute();
  return secret === undefined ? { appId, webhookSecret } : { appId, secret, webhookSecret };
}
