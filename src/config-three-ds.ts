import { BlockList, isIP } from 'node:net';
import { caFileVar, TLS_CLIENTS, TLS_LISTENERS, type TlsFiles, tlsFilesVar } from './config-tls.js';
import { ConfigError, type Env, intVar, type VarName } from './config-vars.js';

/** The access control server of 3-D Secure (decisions §14.1, docs/3ds.md). */
export interface ThreeDsConfig {
  /** CARDPROGRAM_3DS_PORT; null: no ACS listener. */
  port: number | null;
  /** CARDPROGRAM_3DS_HOST, default HOST. */
  host: string;
  /**
   * CARDPROGRAM_3DS_TLS_CA/_CERT/_KEY (files, checked at start by src/config-tls.ts): the DS's client
   * certificates are verified against the CA; null: plain HTTP (sandbox, loopback only).
   */
  tls: TlsFiles<typeof TLS_LISTENERS.threeDs> | null;
  /** CARDPROGRAM_3DS_MAX_CONNECTIONS (default 256): connections open at once; beyond, a new one is closed at once. */
  maxConnections: number;
  /** CARDPROGRAM_3DS_MAX_PER_ADDRESS (default 64): connections open at once from one remote address. */
  maxPerAddress: number;
  /** A TLS handshake not finished within this is closed (10 s, as the card network link). */
  handshakeMs: number;
  /** CARDPROGRAM_3DS_REFERENCE_NUMBER: the ARes's `acsReferenceNumber` (EMVCo's approval number), at most 32 characters. */
  referenceNumber: string;
  /** CARDPROGRAM_3DS_OPERATOR_ID: the ARes's `acsOperatorID` (assigned by the DS), at most 32 characters; null: not sent. */
  operatorId: string | null;
  /**
   * Where results go (`RReq`, decisions §14.1): CARDPROGRAM_3DS_DS_URL with the client certificate
   * CARDPROGRAM_3DS_DS_CERT/_KEY (files, checked at start: TLS_CLIENTS in src/config-tls.ts), and
   * CARDPROGRAM_3DS_DS_CA, the CA(s) the DS's server certificate must chain to (a scheme's private CA;
   * null or absent: the system's trust store); null: no DS configured (the sandbox's results stay queued).
   */
  ds: { url: string; cert: string | null; key: string | null; ca?: string | null } | null;
  /**
   * CARDPROGRAM_3DS_REQUIRED (decisions §14.5; default on in production when the ACS is configured,
   * off otherwise): an e-commerce authorization without a valid authentication value, outside the
   * low-value exemption, is declined `authentication_required` (the link's `1A`); credential on file
   * and amount 0 are exempt.
   */
  required: boolean;
}

/** What an ACS answers as `acsReferenceNumber` until configured. */
export const DEFAULT_ACS_REFERENCE = 'CARDPROGRAM-ACS-SANDBOX';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
LOOPBACK.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

/** Whether an IP address (v4, v6, or v4 mapped in v6) is a loopback address: by value, not by its text. */
export function isLoopbackAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return LOOPBACK.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

function referenceVar(env: Env, name: VarName, fallback: string | null): string | null {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  if (!/^[\x21-\x7e]{1,32}$/.test(raw))
    throw new ConfigError(`${name} must be 1 to 32 printable ASCII characters without spaces, got "${raw}"`);
  return raw;
}

/**
 * The ACS's settings. Production refuses an ACS without its TLS files (the DS authenticates with
 * a client certificate); the sandbox allows plain HTTP on a loopback address only: an address here,
 * a host name when the listener starts (it is resolved then, every address it has checked).
 */
export function threeDsConfig(
  env: Env,
  envName: 'sandbox' | 'production',
  host: string,
  /** Collects a refused value's problem and gives a stand-in, so that every problem is listed at once (src/config.ts). */
  check: <T>(read: () => T, standIn: T) => T = (read) => read(),
): ThreeDsConfig {
  const port = env.CARDPROGRAM_3DS_PORT ? check(() => intVar(env, 'CARDPROGRAM_3DS_PORT', 0, 0, 65535), null) : null;
  const acsHost = env.CARDPROGRAM_3DS_HOST?.trim() || host;
  // Each file read and checked for what it must be (src/config-tls.ts), as the link's; undefined: refused.
  const tls = check(() => tlsFilesVar(env, TLS_LISTENERS.threeDs), undefined);
  if (tls === null && port !== null) {
    check(() => {
      if (envName === 'production') {
        throw new ConfigError(
          'CARDPROGRAM_3DS_PORT: the ACS is HTTPS with the directory server’s client certificates in production; set CARDPROGRAM_3DS_TLS_CA, CARDPROGRAM_3DS_TLS_CERT and CARDPROGRAM_3DS_TLS_KEY (plain HTTP is refused)',
        );
      }
      if (isIP(acsHost) !== 0 && !isLoopbackAddress(acsHost)) {
        throw new ConfigError(
          `CARDPROGRAM_3DS_PORT: plain HTTP is allowed on a loopback address only, not ${acsHost}; set CARDPROGRAM_3DS_TLS_CA/_CERT/_KEY or CARDPROGRAM_3DS_HOST=127.0.0.1`,
        );
      }
    }, undefined);
  }
  return {
    port,
    host: acsHost,
    tls: tls ?? null,
    maxConnections: check(() => intVar(env, 'CARDPROGRAM_3DS_MAX_CONNECTIONS', 256, 1, 100_000), 256),
    maxPerAddress: check(() => intVar(env, 'CARDPROGRAM_3DS_MAX_PER_ADDRESS', 64, 1, 100_000), 64),
    handshakeMs: 10_000,
    referenceNumber: check(
      () => referenceVar(env, 'CARDPROGRAM_3DS_REFERENCE_NUMBER', DEFAULT_ACS_REFERENCE),
      DEFAULT_ACS_REFERENCE,
    ) as string,
    operatorId: check(() => referenceVar(env, 'CARDPROGRAM_3DS_OPERATOR_ID', null), null),
    ds: check(() => dsVar(env, envName), null),
    required: check(() => requiredVar(env, envName === 'production' && port !== null), false),
  };
}

/** CARDPROGRAM_3DS_REQUIRED: on, off, true, false, 1 or 0 (any case); unset or empty: the default. */
function requiredVar(env: Env, fallback: boolean): boolean {
  const raw = env.CARDPROGRAM_3DS_REQUIRED?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'on' || raw === 'true' || raw === '1') return true;
  if (raw === 'off' || raw === 'false' || raw === '0') return false;
  throw new ConfigError(`CARDPROGRAM_3DS_REQUIRED must be "on" or "off", got "${env.CARDPROGRAM_3DS_REQUIRED}"`);
}

/** CARDPROGRAM_3DS_DS_URL (its client certificate, the CA of its server certificate): https in production, http to a loopback address allowed in the sandbox. */
function dsVar(env: Env, envName: 'sandbox' | 'production'): ThreeDsConfig['ds'] {
  const raw = env.CARDPROGRAM_3DS_DS_URL?.trim();
  const files = tlsFilesVar(env, TLS_CLIENTS.threeDsDirectory);
  const ca = caFileVar(env, 'CARDPROGRAM_3DS_DS_CA');
  if (!raw) {
    if (files) throw new ConfigError('CARDPROGRAM_3DS_DS_CERT and CARDPROGRAM_3DS_DS_KEY need CARDPROGRAM_3DS_DS_URL');
    if (ca) throw new ConfigError('CARDPROGRAM_3DS_DS_CA needs CARDPROGRAM_3DS_DS_URL (the CA of the directory server the ACS calls)');
    return null;
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`CARDPROGRAM_3DS_DS_URL is not a URL: "${raw}"`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const plainAllowed = envName === 'sandbox' && (host === 'localhost' || isLoopbackAddress(host));
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && plainAllowed)) {
    throw new ConfigError(
      `CARDPROGRAM_3DS_DS_URL must be an https:// address${envName === 'sandbox' ? ' (http:// to a loopback address in the sandbox)' : ''}, got "${raw}"`,
    );
  }
  if (ca && url.protocol !== 'https:') {
    throw new ConfigError(`CARDPROGRAM_3DS_DS_CA is for an https:// directory server; CARDPROGRAM_3DS_DS_URL is plain http: "${raw}"`);
  }
  if (envName === 'production' && files === null) {
    throw new ConfigError(
      'CARDPROGRAM_3DS_DS_URL: set CARDPROGRAM_3DS_DS_CERT and CARDPROGRAM_3DS_DS_KEY, the client certificate the DS expects',
    );
  }
  return { url: raw, cert: files?.cert ?? null, key: files?.key ?? null, ca };
}
