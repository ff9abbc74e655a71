import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditSpec, Operator } from '../audit/trail.js';
import type { Services } from '../context.js';
import { DomainError } from '../errors.js';
import { cookieName, crossSite, isHttps, pageHeaders, readCookie } from '../http/html-pages.js';
import { returnUrl } from '../http/logged-url.js';
import * as pages from './pages.js';
import { can, type Permission } from './roles.js';
import { type ConsoleSession, csrfMatches, csrfToken, loadConsoleSession } from './sessions.js';
import { barePage, CONSOLE_STYLE_HASH, type Frame } from './view.js';

export const SECURITY_HEADERS = pageHeaders(CONSOLE_STYLE_HASH);
export const SESSION_COOKIE = 'cp_console';

export const FAILED_LOGIN =
  'The e-mail, password or code is not right, or the account is locked for a while. After 5 failed attempts in a row an account is locked for 15 minutes.';
/** A login refused because password hashing's queue is full (nothing was checked): it may be sent again at once. */
export const BUSY = 'Too many logins are being checked just now: try again in a moment.';

export const isIdText = (s: unknown): s is string => typeof s === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(s);
/** A form's text field, without control characters (PostgreSQL refuses a NUL in a parameter), trimmed and bounded. */
export const text = (form: URLSearchParams, name: string, max = 200) =>
  (form.get(name) ?? '')
    .replace(/\p{Cc}/gu, '')
    .trim()
    .slice(0, max);
/** A query parameter's text, the same way; undefined when absent or empty. */
export const queryText = (value: unknown, max = 200) => {
  const v =
    typeof value === 'string'
      ? value
          .replace(/\p{Cc}/gu, '')
          .trim()
          .slice(0, max)
      : '';
  return v === '' ? undefined : v;
};
export const clean = (s: string) => s.replace(/\p{Cc}/gu, ' ');

/**
 * What every page group of the console shares (src/console/routes.ts registers them): its headers
 * and cookie, the HTML answers, a page request's session and role, a form post's CSRF check, a
 * change run with its refusal shown, and the audit record of an operator's change.
 */
export interface ConsoleKit {
  svc: Services;
  sessionOf: (req: FastifyRequest) => string | undefined;
  sessionCookie: (req: FastifyRequest, value: string, maxAgeS: number) => string;
  html: (reply: FastifyReply, status: number, body: string) => FastifyReply;
  redirect: (reply: FastifyReply, location: string) => FastifyReply;
  origin: (req: FastifyRequest) => string;
  operatorOf: (req: FastifyRequest, s: ConsoleSession) => Operator;
  audit: (req: FastifyRequest, s: ConsoleSession, action: string, target: string, before?: AuditSpec['before']) => AuditSpec;
  session: (req: FastifyRequest, reply: FastifyReply, permission: Permission) => Promise<Frame | null>;
  sameOrigin: (req: FastifyRequest) => boolean;
  post: (req: FastifyRequest, reply: FastifyReply, permission: Permission) => Promise<{ frame: Frame; form: URLSearchParams } | null>;
  change: <T>(reply: FastifyReply, frame: Frame, fn: () => Promise<T>, back: string) => Promise<T | null>;
}

export function consoleKit(svc: Services): ConsoleKit {
  const sessionOf = (req: FastifyRequest) => readCookie(req, cookieName(svc, req, SESSION_COOKIE));
  const sessionCookie = (req: FastifyRequest, value: string, maxAgeS: number) =>
    `${cookieName(svc, req, SESSION_COOKIE)}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${isHttps(svc, req) ? '; Secure' : ''}`;

  const html = (reply: FastifyReply, status: number, body: string) => {
    return reply.status(status).headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(body);
  };
  const redirect = (reply: FastifyReply, location: string) =>
    reply.status(303).headers(SECURITY_HEADERS).header('location', location).send();

  const origin = (req: FastifyRequest) => req.ip;
  const operatorOf = (req: FastifyRequest, s: ConsoleSession): Operator => ({
    kind: 'operator',
    via: 'console',
    who: s.email,
    origin: origin(req),
  });
  const audit = (req: FastifyRequest, s: ConsoleSession, action: string, target: string, before?: AuditSpec['before']): AuditSpec => ({
    by: operatorOf(req, s),
    action,
    target,
    ...(before ? { before } : {}),
  });

  /** A page request: a live session whose role may do this, else the answer (login, or 403) is sent. */
  async function session(req: FastifyRequest, reply: FastifyReply, permission: Permission): Promise<Frame | null> {
    const cookie = sessionOf(req);
    const s = await loadConsoleSession(svc, cookie, origin(req));
    if (!s || cookie === undefined) {
      // The page to come back to, without what was searched for (issue 26.1: a card number in `next`
      // reached the log line of the login page, and would reach a proxy's).
      await redirect(reply, `/console/login${req.method === 'GET' ? `?next=${encodeURIComponent(returnUrl(req.url))}` : ''}`);
      return null;
    }
    const frame: Frame = { session: s, csrf: csrfToken(cookie), current: '' };
    if (!can(s.role, permission)) {
      await html(reply, 403, pages.refusedPage(frame, permission));
      return null;
    }
    return frame;
  }

  const sameOrigin = (req: FastifyRequest) => !crossSite(svc, req);

  /** A form post: same origin, a live session with the right, and its CSRF token. Else the answer is sent. */
  async function post(
    req: FastifyRequest,
    reply: FastifyReply,
    permission: Permission,
  ): Promise<{ frame: Frame; form: URLSearchParams } | null> {
    const form = req.body instanceof URLSearchParams ? req.body : null;
    const cookie = sessionOf(req);
    if (!sameOrigin(req) || !form || cookie === undefined || !csrfMatches(cookie, form.get('csrf'))) {
      await html(
        reply,
        403,
        barePage(
          'This form has expired',
          '<p>Go back, reload the page and try again.</p><p><a href="/console">Back to the console</a></p>',
        ),
      );
      return null;
    }
    const frame = await session(req, reply, permission);
    return frame ? { frame, form } : null;
  }

  /** Runs a change; a refusal by the verb (a transition not allowed, a bad amount) is shown, not thrown. */
  async function change<T>(reply: FastifyReply, frame: Frame, fn: () => Promise<T>, back: string): Promise<T | null> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof DomainError) || err.status >= 500) throw err;
      await html(reply, err.status, pages.problemPage(frame, err.message, back));
      return null;
    }
  }

  return { svc, sessionOf, sessionCookie, html, redirect, origin, operatorOf, audit, session, sameOrigin, post, change };
}
