import { isIP } from 'node:net';
import { isLoopbackAddress } from './config-three-ds.js';
import { TLS_LISTENERS, type TlsFiles, tlsFilesVar } from './config-tls.js';
import { ConfigError, type Env, intVar } from './config-vars.js';

/** Wallet tokens (decisions §15, docs/tokens.md): the TSP's endpoint and the per-card limits. */
export interface TokensConfig {
  /** CARDPROGRAM_TSP_PORT; null: no TSP endpoint (tokens cannot be provisioned). */
  port: number | null;
  /** CARDPROGRAM_TSP_HOST, default HOST. */
  host: string;
  /**
   * CARDPROGRAM_TSP_TLS_CA/_CERT/_KEY (files, checked at start by src/config-tls.ts): the TSP's
   * client certificates are verified against the CA; null: plain HTTP (sandbox, loopback only).
   */
  tls: TlsFiles<typeof TLS_LISTENERS.tsp> | null;
  /** CARDPROGRAM_TSP_MAX_CONNECTIONS (default 256): connections open at once; beyond, a new one is closed at once. */
  maxConnections: number;
  /** CARDPROGRAM_TSP_MAX_PER_ADDRESS (default 64): connections open at once from one remote address. */
  maxPerAddress: number;
  /** A TLS handshake not finished within this is closed (10 s, as the link and the ACS). */
  handshakeMs: number;
  /** CARDPROGRAM_TOKENS_PER_CARD (default 10): live tokens (pending, active, suspended) a card may have (decisions §15.3). */
  perCard: number;
  /** Provisioning requests per card within 24 hours (decisions §15.7: 20); beyond, declined `too_many_requests`. */
  requestsPerDay: number;
}

/**
 * The TSP endpoint's settings, as the ACS's (src/config-three-ds.ts): production refuses it without
 * its TLS files (the TSP authenticates with a client certificate); the sandbox allows plain HTTP on a
 * loopback address only (an address here; a host name is resolved when the listener starts).
 */
export function tokensConfig(
  env: Env,
  envName: 'sandbox' | 'production',
  host: string,
  check: <T>(read: () => T, standIn: T) => T = (read) => read(),
): TokensConfig {
  const port = env.CARDPROGRAM_TSP_PORT ? check(() => intVar(env, 'CARDPROGRAM_TSP_PORT', 0, 0, 65535), null) : null;
  const tspHost = env.CARDPROGRAM_TSP_HOST?.trim() || host;
  const tls = check(() => tlsFilesVar(env, TLS_LISTENERS.tsp), undefined);
  if (tls === null && port !== null) {
    check(() => {
      if (envName === 'production') {
        throw new ConfigError(
          'CARDPROGRAM_TSP_PORT: the TSP endpoint is HTTPS with the token service provider’s client certificates in production; set CARDPROGRAM_TSP_TLS_CA, CARDPROGRAM_TSP_TLS_CERT and CARDPROGRAM_TSP_TLS_KEY (plain HTTP is refused)',
        );
      }
      if (isIP(tspHost) !== 0 && !isLoopbackAddress(tspHost)) {
        throw new ConfigError(
          `CARDPROGRAM_TSP_PORT: plain HTTP is allowed on a loopback address only, not ${tspHost}; set CARDPROGRAM_TSP_TLS_CA/_CERT/_KEY or CARDPROGRAM_TSP_HOST=127.0.0.1`,
        );
      }
    }, undefined);
  }
  return {
    port,
    host: tspHost,
    tls: tls ?? null,
    maxConnections: check(() => intVar(env, 'CARDPROGRAM_TSP_MAX_CONNECTIONS', 256, 1, 100_000), 256),
    maxPerAddress: check(() => intVar(env, 'CARDPROGRAM_TSP_MAX_PER_ADDRESS', 64, 1, 100_000), 64),
    handshakeMs: 10_000,
    perCard: check(() => intVar(env, 'CARDPROGRAM_TOKENS_PER_CARD', 10, 1, 1000), 10),
    requestsPerDay: 20,
  };
}
