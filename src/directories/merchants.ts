import type { SecretBox } from '../crypto/secretbox.js';
import type { Database } from '../db/index.js';
import type { AuthorizationDefault } from '../db/schema.js';

/** What the signature check needs of a merchant, secrets already decrypted. */
export interface MerchantCredentials {
  appId: string;
  signType: 'HMAC-SHA256' | 'RSA-SHA256';
  secret: string | null;
  publicKey: string | null;
  loginFree: boolean;
  active: boolean;
  /** Its credential generation (merchants.credential_gen): moves on at every roll and disable. */
  generation: number;
  /** The merchant's own limit in requests per second; null: the service's default. */
  rateLimit: number | null;
  /** The real-time authorization endpoint (decisions §11), or null when it has none. */
  authorizationEndpoint: AuthorizationEndpoint | null;
}

/** Where a merchant's `authorization.request` goes, how long it may take, what applies without an answer. */
export interface AuthorizationEndpoint {
  url: string;
  timeoutMs: number;
  fallback: AuthorizationDefault;
  /** The merchant's webhook secret (decrypted), which signs each `authorization.request`. */
  webhookSecret: string;
}

/**
 * Reads merchants' credentials, decrypting them once and keeping them for `ttlMs`, so the
 * signature check costs no database read and no decryption on the hot path. A change made by
 * another process (the CLI disabling a merchant) is seen within `ttlMs`.
 */
export class MerchantDirectory {
  private readonly cache = new Map<string, { at: number; value: MerchantCredentials | null }>();

  constructor(
    private readonly database: Database,
    private readonly box: SecretBox,
    private readonly ttlMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  async get(appId: string): Promise<MerchantCredentials | null> {
    const now = this.clock();
    const hit = this.cache.get(appId);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const row = await this.database.db.selectFrom('merchants').selectAll().where('id', '=', appId).executeTakeFirst();
    const value: MerchantCredentials | null = row
      ? {
          appId: row.id,
          signType: row.sign_type,
          secret: row.secret_enc ? this.box.open(row.secret_enc, `merchant-secret:${row.id}`) : null,
          publicKey: row.public_key,
          loginFree: row.login_free === 1,
          active: row.status === 'active',
          generation: row.credential_gen,
          rateLimit: row.rate_limit,
          authorizationEndpoint: row.authorization_url
            ? {
                url: row.authorization_url,
                timeoutMs: row.authorization_timeout_ms,
                fallback: row.authorization_default,
                webhookSecret: this.box.open(row.webhook_secret_enc, `webhook-secret:${row.id}`),
              }
            : null,
        }
      : null;
    // Unknown ids are cached too (briefly), so a flood of made-up appIds costs one read each per ttl;
    // the map is bounded so that flood cannot grow memory.
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(appId, { at: now, value });
    return value;
  }

  forget(appId: string): void {
    this.cache.delete(appId);
  }
}
