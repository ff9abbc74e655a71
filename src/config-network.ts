import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { TLS_LISTENERS, tlsFilesVar } from './config-tls.js';
import { ConfigError, type Env, intVar, jsonVar } from './config-vars.js';

/** The card network link (decisions §12.1, docs/network.md). */
export interface NetworkConfig {
  /** CARDPROGRAM_NETWORK_PORT; null: no listener. */
  port: number | null;
  /** CARDPROGRAM_NETWORK_HOST, default HOST. */
  host: string;
  /** CARDPROGRAM_NETWORK_MAX_FRAME: the longest message, bytes (default 4096). */
  maxFrame: number;
  /** CARDPROGRAM_NETWORK_IDLE_MS: a connection silent this long, or a frame not complete within it, is closed (default 120 000). */
  idleMs: number;
  /** CARDPROGRAM_NETWORK_DEADLINE_MS: an authorization's answer is due within this (default 1500). */
  deadlineMs: number;
  /** CARDPROGRAM_NETWORK_TLS_CA/_CERT/_KEY (files); null: plain TCP (sandbox, loopback only). */
  tls: { ca: string; cert: string; key: string } | null;
  /** CARDPROGRAM_NETWORK_CURRENCIES: the ISO 4217 numeric code a card currency is presented as. */
  currencies: Readonly<Record<string, string>>;
  /** CARDPROGRAM_NETWORK_MAX_CONNECTIONS: connections held at once, handshakes included (default 64; decisions §12.13). */
  maxConnections: number;
  /** CARDPROGRAM_NETWORK_MAX_PER_ADDRESS: of those, from one remote address (an IPv6 /64) (default 8). */
  maxPerAddress: number;
  /** A TLS handshake not finished within this is closed, ms (10 000; decisions §12.13; not a variable, tests shorten it). */
  handshakeMs: number;
  /** CARDPROGRAM_NETWORK_PEERS: the certificate subjects (CN or DNS name) admitted; null: any the CA signed. */
  peers: readonly string[] | null;
}

/** ISO 4217 numeric codes of the card currencies; USDT, which has none, is presented as USD (decisions §12.3). */
export const DEFAULT_NETWORK_CURRENCIES: Readonly<Record<string, string>> = { EUR: '978', USDT: '840' };

function validateNetworkCurrencies(raw: Record<string, unknown>): Record<string, string> {
  const out = { ...DEFAULT_NETWORK_CURRENCIES };
  for (const [currency, code] of Object.entries(raw)) {
    if (currency !== 'EUR' && currency !== 'USDT') throw new Error(`no cards are issued in ${currency}`);
    if (typeof code !== 'string' || !/^\d{3}$/.test(code)) throw new Error(`the code for ${currency} must be 3 digits (ISO 4217 numeric)`);
    out[currency] = code;
  }
  return out;
}

/**
 * CARDPROGRAM_NETWORK_PEERS: certificate subjects separated by commas (a CN may hold spaces, not a
 * comma). Unset or empty: null. An empty entry (`a,,b`, a trailing comma) is refused: it is a typo
 * that would otherwise pass unnoticed.
 */
function peersVar(env: Env): string[] | null {
  const raw = env.CARDPROGRAM_NETWORK_PEERS;
  if (raw === undefined || raw.trim() === '') return null;
  const list = raw.split(',').map((p) => p.trim());
  if (list.some((p) => p === '')) {
    throw new ConfigError(
      'CARDPROGRAM_NETWORK_PEERS must be certificate subjects (CN or DNS name) separated by commas, with no empty entry',
    );
  }
  const control = (p: string) => [...p].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
  const bad = list.find((p) => p.length > 255 || control(p));
  if (bad !== undefined)
    throw new ConfigError(
      `CARDPROGRAM_NETWORK_PEERS: "${bad.slice(0, 40)}" is not a certificate subject (at most 255 printable characters)`,
    );
  return [...new Set(list)];
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 as its last two), or null for anything else. */
export function ipv6Groups(ip: string): number[] | null {
  if (isIP(ip) !== 6) return null;
  let text = ip.replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  // isIP has checked the form: at most one `::`, groups of 1 to 4 hexadecimal digits.
  const [head = '', tail] = text.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined ? null : tail === '' ? [] : tail.split(':');
  const groups = t === null ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.map((g) => Number.parseInt(g, 16));
}

/** The IPv4 address an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, `::ffff:7f00:1`) carries; an IPv4 address itself; else null. */
export function ipv4Of(ip: string): string | null {
  if (isIP(ip) === 4) return ip;
  const g = ipv6Groups(ip);
  if (!g || g.slice(0, 5).some((x) => x !== 0) || g[5] !== 0xffff) return null;
  const [hi = 0, lo = 0] = g.slice(6);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** A loopback address: 127.0.0.0/8, ::1, or an IPv4-mapped 127.x. A name is not an address (see linkAddress). */
export function isLoopbackIp(ip: string): boolean {
  const v4 = ipv4Of(ip);
  if (v4 !== null) return v4.startsWith('127.');
  const g = ipv6Groups(ip);
  if (g === null) return false;
  return g.slice(0, 7).every((x) => x === 0) && g[7] === 1;
}

/**
 * The address the link listens on. With TLS, the host as configured. Plain TCP (the sandbox) is
 * allowed on loopback only (decisions §12.1), and a name is judged by what it resolves to, not by
 * how it is spelt (`127.0.0.1.nip.io`, `localhost.example` are names like any other): every address
 * it resolves to must be loopback, and the link then listens on the first of them, the address
 * checked, so the name cannot resolve elsewhere between the check and the bind. A name that does
 * not resolve is refused too.
 */
export async function linkAddress(
  cfg: Pick<NetworkConfig, 'host' | 'tls'>,
  /** Every address of a name, in the order listen() would take them (tests substitute their own). */
  resolve: (host: string) => Promise<Array<{ address: string }>> = (host) => lookup(host, { all: true, verbatim: true }),
): Promise<string> {
  if (cfg.tls !== null) return cfg.host;
  const host = cfg.host.replace(/^\[|\]$/g, '');
  const refuse = (why: string) =>
    new ConfigError(
      `CARDPROGRAM_NETWORK_HOST: plain TCP is allowed on a loopback address only, and ${host} ${why}; set CARDPROGRAM_NETWORK_TLS_CA/_CERT/_KEY or CARDPROGRAM_NETWORK_HOST=127.0.0.1`,
    );
  if (isIP(host)) {
    if (!isLoopbackIp(host)) throw refuse('is not one');
    return host;
  }
  let addresses: Array<{ address: string }>;
  try {
    addresses = await resolve(host);
  } catch (err) {
    throw refuse(`does not resolve (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const first = addresses[0];
  if (!first) throw refuse('resolves to no address');
  const outside = addresses.filter((a) => !isLoopbackIp(a.address)).map((a) => a.address);
  if (outside.length > 0) throw refuse(`resolves to ${outside.join(', ')}, not loopback`);
  return first.address;
}

/**
 * The link's settings. Production refuses plain TCP in one line; the sandbox allows it on a
 * loopback address only (decisions §12.1). The certificate files must be what their variables say.
 */
export function networkConfig(
  env: Env,
  envName: 'sandbox' | 'production',
  host: string,
  /** Collects a refused value's problem and gives a stand-in, so that every problem is listed at once (src/config.ts). */
  check: <T>(read: () => T, standIn: T) => T = (read) => read(),
): NetworkConfig {
  const port = env.CARDPROGRAM_NETWORK_PORT ? check(() => intVar(env, 'CARDPROGRAM_NETWORK_PORT', 0, 0, 65535), null) : null;
  const netHost = env.CARDPROGRAM_NETWORK_HOST?.trim() || host;
  // Each file read and checked for what it must be (src/config-tls.ts); undefined: refused.
  const tls = check(() => tlsFilesVar(env, TLS_LISTENERS.network), undefined);
  if (tls !== undefined) check(() => plainTcpAllowed(port, tls, envName, netHost), undefined);
  const peers = check(() => peersVar(env), null);
  if (tls !== undefined && port !== null && tls === null && peers !== null) {
    check(() => {
      throw new ConfigError(
        'CARDPROGRAM_NETWORK_PEERS names client certificates: it needs CARDPROGRAM_NETWORK_TLS_CA/_CERT/_KEY (plain TCP has no certificate to check)',
      );
    }, undefined);
  }
  const maxConnections = check(() => intVar(env, 'CARDPROGRAM_NETWORK_MAX_CONNECTIONS', 64, 1, 100_000), 64);
  const maxPerAddress = check(() => intVar(env, 'CARDPROGRAM_NETWORK_MAX_PER_ADDRESS', 8, 1, 100_000), 8);
  if (maxPerAddress > maxConnections) {
    check(() => {
      throw new ConfigError(
        `CARDPROGRAM_NETWORK_MAX_PER_ADDRESS (${maxPerAddress}) must not exceed CARDPROGRAM_NETWORK_MAX_CONNECTIONS (${maxConnections})`,
      );
    }, undefined);
  }
  return {
    port,
    host: netHost,
    maxFrame: check(() => intVar(env, 'CARDPROGRAM_NETWORK_MAX_FRAME', 4096, 64, 65535), 4096),
    idleMs: check(() => intVar(env, 'CARDPROGRAM_NETWORK_IDLE_MS', 120_000, 100, 3_600_000), 120_000),
    deadlineMs: check(() => intVar(env, 'CARDPROGRAM_NETWORK_DEADLINE_MS', 1500, 50, 60_000), 1500),
    tls: tls ?? null,
    currencies: check(
      () => jsonVar(env, 'CARDPROGRAM_NETWORK_CURRENCIES', DEFAULT_NETWORK_CURRENCIES, validateNetworkCurrencies),
      DEFAULT_NETWORK_CURRENCIES,
    ),
    maxConnections,
    maxPerAddress,
    handshakeMs: 10_000,
    peers,
  };
}

function plainTcpAllowed(port: number | null, tls: NetworkConfig['tls'], envName: 'sandbox' | 'production', netHost: string): void {
  if (port !== null && tls === null) {
    if (envName === 'production') {
      throw new ConfigError(
        'CARDPROGRAM_NETWORK_PORT: the card network link is TLS with client certificates in production; set CARDPROGRAM_NETWORK_TLS_CA, CARDPROGRAM_NETWORK_TLS_CERT and CARDPROGRAM_NETWORK_TLS_KEY (plain TCP is refused)',
      );
    }
    // An address is judged here, with the other settings; a name only when the link starts, by
    // what it resolves to (linkAddress): not by its spelling.
    const literal = netHost.replace(/^\[|\]$/g, '');
    if (isIP(literal) && !isLoopbackIp(literal)) {
      throw new ConfigError(
        `CARDPROGRAM_NETWORK_PORT: plain TCP is allowed on a loopback address only, not ${netHost}; set CARDPROGRAM_NETWORK_TLS_CA/_CERT/_KEY or CARDPROGRAM_NETWORK_HOST=127.0.0.1`,
      );
    }
  }
}
