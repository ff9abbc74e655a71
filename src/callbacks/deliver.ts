import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { hostResolver, type Resolved, type Resolver } from './resolve.js';
import { isAllowedAddress } from './url-guard.js';

export type { Resolved, Resolver } from './resolve.js';

export interface DeliveryResult {
  status: number | null;
  error: string | null;
  excerpt: string;
  durationMs: number;
  /** When the request was on the wire (written whole to the socket), in ms from the start; null if it never was. */
  sentMs: number | null;
}

/** Responses are read up to this many bytes: a receiver cannot make us buffer a large body. */
export const RESPONSE_CAP = 2048;

class BlockedAddress extends Error {}

/**
 * One delivery attempt. Redirects are not followed (a 3xx is a failed attempt). Every address the
 * host resolves to must be allowed (public; in the sandbox also loopback), and the check happens
 * inside the connection's own lookup, so the address checked is the address connected to: no gap
 * for DNS rebinding.
 */
export function deliver(opts: {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** Which addresses may be connected to (isAllowedAddress). */
  env: 'sandbox' | 'production';
  resolver?: Resolver;
}): Promise<DeliveryResult> {
  const started = performance.now();
  let sentMs: number | null = null;
  const done = (status: number | null, error: string | null, excerpt = ''): DeliveryResult => ({
    status,
    error,
    excerpt,
    durationMs: Math.round(performance.now() - started),
    sentMs,
  });
  let url: URL;
  try {
    url = new URL(opts.url);
  } catch {
    return Promise.resolve(done(null, 'invalid URL'));
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) && !isAllowedAddress(host, opts.env)) {
    return Promise.resolve(done(null, `blocked: ${host} is not an allowed address`));
  }
  // Never dns.lookup by default: it waits on libuv's thread pool, behind password hashing (src/callbacks/resolve.ts).
  const resolver = opts.resolver ?? hostResolver(opts.env);
  const lookup: LookupFunction = (hostname, options, callback) => {
    resolver(hostname).then(
      (addresses) => {
        const family = typeof options === 'object' && options?.family ? options.family : 0;
        const usable = addresses.filter((a) => family === 0 || a.family === family);
        if (usable.length === 0) {
          callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
          return;
        }
        if (usable.some((a) => !isAllowedAddress(a.address, opts.env))) {
          callback(new BlockedAddress(`blocked: ${hostname} resolves to an address that is not allowed`), '', 0);
          return;
        }
        if (typeof options === 'object' && options?.all) (callback as unknown as (e: null, a: Resolved[]) => void)(null, usable);
        else callback(null, usable[0]?.address ?? '', usable[0]?.family ?? 4);
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, '', 0),
    );
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (r: DeliveryResult) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve(r);
      }
    };
    const req = client.request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'cardprogram-webhooks/1', ...opts.headers },
        lookup,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size < RESPONSE_CAP) chunks.push(chunk.subarray(0, RESPONSE_CAP - size));
          size += chunk.length;
          if (size >= RESPONSE_CAP) res.destroy();
        });
        const end = () => finish(done(res.statusCode ?? null, null, Buffer.concat(chunks).toString('utf8').slice(0, RESPONSE_CAP)));
        res.on('end', end);
        res.on('close', end);
        res.on('error', end);
      },
    );
    // The attempt ends at the timeout whatever the socket does next: settle first, then tear down.
    const timer = setTimeout(() => {
      const message = `timed out after ${opts.timeoutMs} ms`;
      finish(done(null, message));
      req.destroy(new Error(message));
    }, opts.timeoutMs);
    req.on('error', (err) => finish(done(null, err.message)));
    req.on('finish', () => {
      sentMs = performance.now() - started;
    });
    req.end(opts.body);
  });
}
