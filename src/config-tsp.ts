import { isLoopbackAddress } from './config-three-ds.js';
import { caFileVar, TLS_CLIENTS, tlsFilesVar } from './config-tls.js';
import { ConfigError, type Env } from './config-vars.js';

/**
 * Where the service tells the token service provider of the changes it makes to tokens (decisions
 * §15.1, §15.4: `POST {url}/tokens/{tokenReferenceId}/activate|suspend|resume|delete`): the URL
 * and the client certificate the TSP expects (files checked at start, TLS_CLIENTS in
 * src/config-tls.ts), and the CA the TSP's server certificate must chain to. Null: no TSP configured
 * (the sandbox): the calls wait in `tsp_calls`.
 */
export interface TspClientConfig {
  /** CARDPROGRAM_TSP_URL, without a trailing slash. */
  url: string;
  /** CARDPROGRAM_TSP_CLIENT_CERT / _KEY: PEM files; null in the sandbox without them. */
  cert: string | null;
  key: string | null;
  /**
   * CARDPROGRAM_TSP_CA: a PEM file of the CA(s) the TSP's server certificate must chain to (a
   * scheme's private CA), those only; null or absent: the system's trust store. The TSP's name is
   * checked against its certificate either way.
   */
  ca?: string | null;
}

/**
 * CARDPROGRAM_TSP_URL and its client certificate: https in production with the certificate; plain
 * http to a loopback address allowed in the sandbox (the tests' and a developer's TSP simulator).
 */
export function tspClientConfig(env: Env, envName: 'sandbox' | 'production'): TspClientConfig | null {
  const raw = env.CARDPROGRAM_TSP_URL?.trim();
  const files = tlsFilesVar(env, TLS_CLIENTS.tsp);
  const ca = caFileVar(env, 'CARDPROGRAM_TSP_CA');
  if (!raw) {
    if (files) throw new ConfigError('CARDPROGRAM_TSP_CLIENT_CERT and CARDPROGRAM_TSP_CLIENT_KEY need CARDPROGRAM_TSP_URL');
    if (ca) throw new ConfigError('CARDPROGRAM_TSP_CA needs CARDPROGRAM_TSP_URL (the CA of the TSP the service calls)');
    return null;
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`CARDPROGRAM_TSP_URL is not a URL: "${raw}"`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const plainAllowed = envName === 'sandbox' && (host === 'localhost' || isLoopbackAddress(host));
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && plainAllowed)) {
    throw new ConfigError(
      `CARDPROGRAM_TSP_URL must be an https:// address${envName === 'sandbox' ? ' (http:// to a loopback address in the sandbox)' : ''}, got "${raw}"`,
    );
  }
  if (url.search || url.hash || url.username || url.password) {
    throw new ConfigError(`CARDPROGRAM_TSP_URL must be a base address without a query, fragment or user, got "${raw}"`);
  }
  if (ca && url.protocol !== 'https:') {
    throw new ConfigError(`CARDPROGRAM_TSP_CA is for an https:// TSP; CARDPROGRAM_TSP_URL is plain http: "${raw}"`);
  }
  if (envName === 'production' && files === null) {
    throw new ConfigError(
      'CARDPROGRAM_TSP_URL: set CARDPROGRAM_TSP_CLIENT_CERT and CARDPROGRAM_TSP_CLIENT_KEY, the client certificate the TSP expects',
    );
  }
  return { url: raw.replace(/\/+$/, ''), cert: files?.cert ?? null, key: files?.key ?? null, ca };
}
