import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../context.js';
import { databaseFault } from '../db/faults.js';
import { DomainError } from '../errors.js';

/**
 * What the service's two sets of browser pages share, the card page (src/page/routes.ts) and the
 * operators' console (src/console/routes.ts): their headers, HTTPS, cookies, the same-origin check
 * of their forms, and their HTML scope (form bodies, HSTS, errors as pages).
 */

/** Headers of every page: no script at all, only its own stylesheet (by hash), forms post only back here, nothing may frame it. */
export function pageHeaders(styleHash: string): Record<string, string> {
  return {
    'content-security-policy': `default-src 'none'; style-src ${styleHash}; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
  };
}

/** HSTS on every page answer in httpsOnly mode: a browser never again tries the pages over http. */
const HSTS = 'max-age=31536000; includeSubDomains';

/**
 * Whether the pages are served over HTTPS whatever this hop says: production with an https public
 * address. TLS usually ends at a load balancer, so the request reaching us may be plain http (and
 * X-Forwarded-Proto counts only from CARDPROGRAM_TRUST_PROXY); the browser is on https regardless.
 */
export function httpsOnly(svc: Services): boolean {
  return svc.config.env === 'production' && svc.config.publicUrl.startsWith('https:');
}

export function isHttps(svc: Services, req: FastifyRequest): boolean {
  return httpsOnly(svc) || req.protocol === 'https';
}

/** A session cookie's name: on HTTPS the __Host- prefix pins it to this exact host, path / and Secure. */
export function cookieName(svc: Services, req: FastifyRequest, base: string): string {
  return isHttps(svc, req) ? `__Host-${base}` : base;
}

export function readCookie(req: FastifyRequest, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
}

/**
 * Whether a form post says it comes from another site. Fetch metadata first; the Origin is "null"
 * under Referrer-Policy: no-referrer, so a null origin passes only when the browser says the post
 * came from this same origin. (A post with neither, as curl sends, is judged by its form token.)
 */
export function crossSite(svc: Services, req: FastifyRequest): boolean {
  const site = req.headers['sec-fetch-site'];
  const origin = req.headers.origin;
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return true;
  if (origin === 'null') return site !== 'same-origin';
  return origin !== undefined && origin !== `${isHttps(svc, req) ? 'https' : req.protocol}://${req.host}`;
}

export interface HtmlScope {
  /** Sends a page with its headers. */
  send(reply: FastifyReply, status: number, body: string): FastifyReply;
  /** Largest form body, bytes. */
  bodyLimit: number;
  /** The page shown while the database does not answer. */
  unavailable: string;
  /** The page of any other failure: a client's error (4xx) or ours (5xx). */
  failed(serverError: boolean): string;
  /** Logged with a 5xx: `${what} request failed`. */
  what: string;
}

/**
 * Makes a plugin's scope one of HTML pages: it reads HTML forms (here only; the API reads JSON
 * alone), answers every error as a page (503 with Retry-After while the database does not answer),
 * and in httpsOnly mode sends HSTS with every answer, redirects included.
 */
export function htmlScope(app: FastifyInstance, svc: Services, scope: HtmlScope): void {
  if (httpsOnly(svc)) {
    app.addHook('onSend', async (_req, reply, payload) => {
      reply.header('strict-transport-security', HSTS);
      return payload;
    });
  }
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: scope.bodyLimit }, (_req, body, done) => {
    done(null, new URLSearchParams(body as string));
  });
  app.setErrorHandler((err, req, reply) => {
    const fault = databaseFault(err);
    if (fault) {
      req.log.error({ err, reason: fault.reason }, `database unavailable: ${fault.reason}`);
      reply.header('retry-after', String(fault.retryAfterSeconds));
      return scope.send(reply, 503, scope.unavailable);
    }
    const status = err instanceof DomainError ? err.status : ((err as { statusCode?: number }).statusCode ?? 500);
    if (status >= 500) req.log.error({ err }, `${scope.what} request failed`);
    return scope.send(reply, status >= 400 && status < 600 ? status : 500, scope.failed(status >= 500));
  });
}
