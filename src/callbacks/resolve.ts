import { lookup } from 'node:dns';
import { Resolver as DnsResolver } from 'node:dns/promises';
import { isIP } from 'node:net';

export interface Resolved {
  address: string;
  family: number;
}

/** Resolves a host name to every address it has (tests substitute their own). */
export type Resolver = (hostname: string) => Promise<Resolved[]>;

/** What a DNS client must answer: the two queries resolveHost makes (node:dns/promises' Resolver, or a test's). */
export interface DnsClient {
  resolve4(hostname: string, options: { ttl: true }): Promise<Array<{ address: string; ttl: number }>>;
  resolve6(hostname: string, options: { ttl: true }): Promise<Array<{ address: string; ttl: number }>>;
}

/** An answer is kept at most this long, whatever its TTL; and at most this many names. */
const MAX_CACHE_MS = 60_000;
const MAX_CACHED = 1000;
/** No answer from the name servers within this (each of 2 tries): the name is not resolved (the caller's deadline is shorter anyway). */
const QUERY_TIMEOUT_MS = 1000;

/** RFC 6761 §6.3: `localhost` and the names under it are loopback, answered here as the hosts file does. */
const LOCALHOST = /^(.+\.)?localhost\.?$/i;

const NO_DATA = new Set(['ENODATA', 'ENOTFOUND', 'ENONAME', 'EBADRESP', 'NODATA', 'NOTFOUND']);

/**
 * Resolves callback and authorization-endpoint hosts **without libuv's thread pool**. `dns.lookup`
 * (getaddrinfo) runs on that pool of 4 threads, which the console's password hashing and file I/O
 * share: a flood of logins queued ahead of the lookup once made every authorization miss its
 * deadline and fall to the merchant's default (issue 26, finding 3). Here an IP literal is itself,
 * `localhost` is loopback, and any other name is asked of the name servers (c-ares: A and AAAA, on
 * the event loop), its answer cached for its TTL (at most a minute). The caller (deliver) still
 * checks every address it is given against the SSRF rules at connect time.
 *
 * The sandbox only: a name the name servers do not resolve (one from /etc/hosts, or no name server
 * at all) is then looked up with getaddrinfo, as before. Production never: its callback hosts are
 * public DNS names (checkCallbackUrl).
 */
export class HostResolver {
  private readonly cache = new Map<string, { addresses: Resolved[]; until: number }>();

  constructor(
    private readonly env: 'sandbox' | 'production',
    private readonly dns: DnsClient = new DnsResolver({ timeout: QUERY_TIMEOUT_MS, tries: 2 }),
    private readonly clock: () => number = () => performance.now(),
  ) {}

  readonly resolve: Resolver = async (rawHost) => {
    const host = rawHost.replace(/^\[|\]$/g, '');
    const family = isIP(host);
    if (family) return [{ address: host, family }];
    if (LOCALHOST.test(host)) {
      return [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ];
    }
    const name = host.toLowerCase().replace(/\.$/, '');
    const now = this.clock();
    const cached = this.cache.get(name);
    if (cached && cached.until > now) return cached.addresses;
    const [v4, v6] = await Promise.all([this.query(name, 4), this.query(name, 6)]);
    const addresses = [...v4.addresses, ...v6.addresses];
    if (addresses.length === 0) {
      if (this.env === 'sandbox') return systemLookup(host);
      throw v4.error ?? v6.error ?? Object.assign(new Error(`no address for ${host}`), { code: 'ENOTFOUND' });
    }
    // Kept only when both queries were answered (one family may have none): a timed-out AAAA is asked again.
    const answered = [v4.error, v6.error].every((e) => !e || NO_DATA.has(e.code ?? ''));
    const ttlMs = Math.min(MAX_CACHE_MS, v4.ttlMs, v6.ttlMs);
    if (answered && ttlMs > 0) {
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      this.cache.set(name, { addresses, until: now + ttlMs });
    }
    return addresses;
  };

  private async query(name: string, family: 4 | 6): Promise<{ addresses: Resolved[]; ttlMs: number; error?: NodeJS.ErrnoException }> {
    try {
      const records = await (family === 4 ? this.dns.resolve4(name, { ttl: true }) : this.dns.resolve6(name, { ttl: true }));
      return {
        addresses: records.map((r) => ({ address: r.address, family })),
        ttlMs: records.length ? Math.min(...records.map((r) => r.ttl)) * 1000 : Number.POSITIVE_INFINITY,
      };
    } catch (err) {
      return { addresses: [], ttlMs: Number.POSITIVE_INFINITY, error: err as NodeJS.ErrnoException };
    }
  }
}

/** getaddrinfo (the thread pool): the sandbox's fallback for names only the hosts file knows. */
function systemLookup(hostname: string): Promise<Resolved[]> {
  return new Promise((resolve, reject) =>
    lookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses as Resolved[]))),
  );
}

const resolvers = { sandbox: new HostResolver('sandbox'), production: new HostResolver('production') };

/** The process's resolver for an environment (one cache each). */
export const hostResolver = (env: 'sandbox' | 'production'): Resolver => resolvers[env].resolve;
