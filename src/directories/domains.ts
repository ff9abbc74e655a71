import { createSecureContext, type SecureContext } from 'node:tls';
import type { SecretBox } from '../crypto/secretbox.js';
import type { Database } from '../db/index.js';

interface HostEntry {
  merchantId: string;
  /** The TLS context when the service holds this host's certificate. */
  context: SecureContext | null;
}

const keyContext = (host: string) => `domain-key:${host}`;

/**
 * Which merchant a host belongs to, which host a merchant's page links use, and each host's TLS
 * context for SNI. Read from the database and kept for `ttlMs`, so `cardprogram domain add` on a
 * running service (another process) takes effect within that time, with no restart.
 */
export class DomainDirectory {
  private readonly hosts = new Map<string, { at: number; value: HostEntry | null }>();
  private readonly primary = new Map<string, { at: number; value: { host: string; tls: boolean } | null }>();

  constructor(
    private readonly database: Database,
    private readonly box: SecretBox,
    private readonly ttlMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The entry of a host name as a client sent it (Host header or SNI), or null when unmapped. */
  async lookup(rawHost: string | undefined): Promise<HostEntry | null> {
    if (!rawHost) return null;
    const host = rawHost.toLowerCase().replace(/\.$/, '');
    if (host.length > 253 || !/^[a-z0-9.-]+$/.test(host)) return null;
    const now = this.clock();
    const hit = this.hosts.get(host);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const row = await this.database.db.selectFrom('merchant_domains').selectAll().where('host', '=', host).executeTakeFirst();
    const value = row
      ? {
          merchantId: row.merchant_id,
          context:
            row.cert_pem && row.key_enc
              ? createSecureContext({ cert: row.cert_pem, key: this.box.open(row.key_enc, keyContext(row.host)) })
              : null,
        }
      : null;
    // Unknown names are cached too, and the map is bounded: a flood of made-up SNI names costs one
    // read each per ttl and no memory growth.
    if (this.hosts.size > 10_000) this.hosts.clear();
    this.hosts.set(host, { at: now, value });
    return value;
  }

  /** The host a merchant's page links name: its first mapped host (by time of mapping), or null. */
  async primaryHost(merchantId: string): Promise<{ host: string; tls: boolean } | null> {
    const now = this.clock();
    const hit = this.primary.get(merchantId);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const row = await this.database.db
      .selectFrom('merchant_domains')
      .select(['host', 'cert_pem'])
      .where('merchant_id', '=', merchantId)
      .orderBy('created_at')
      .orderBy('host')
      .executeTakeFirst();
    const value = row ? { host: row.host, tls: row.cert_pem !== null } : null;
    if (this.primary.size > 10_000) this.primary.clear();
    this.primary.set(merchantId, { at: now, value });
    return value;
  }

  forget(): void {
    this.hosts.clear();
    this.primary.clear();
  }
}
