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

const isLoopback = (host: string) => host === 'localhost' || host === '::1' || /^127\./.test(host);

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
  };
}

function plainTcpAllowed(port: number | null, tls: NetworkConfig['tls'], envName: 'sandbox' | 'production', netHost: string): void {
  if (port !== null && tls === null) {
    if (envName === 'production') {
      throw new ConfigError(
        'CARDPROGRAM_NETWORK_PORT: the card network link is TLS with client certificates in production; set CARDPROGRAM_NETWORK_TLS_CA, CARDPROGRAM_NETWORK_TLS_CERT and CARDPROGRAM_NETWORK_TLS_KEY (plain TCP is refused)',
      );
    }
    if (!isLoopback(netHost)) {
      throw new ConfigError(
        `CARDPROGRAM_NETWORK_PORT: plain TCP is allowed on a loopback address only, not ${netHost}; set CARDPROGRAM_NETWORK_TLS_CA/_CERT/_KEY or CARDPROGRAM_NETWORK_HOST=127.0.0.1`,
      );
    }
  }
}
