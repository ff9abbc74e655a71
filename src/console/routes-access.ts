import type { FastifyInstance } from 'fastify';
import { cookieName, isHttps, readCookie } from '../http/html-pages.js';
import { returnUrl } from '../http/logged-url.js';
import { runVerb } from '../runner.js';
import { completeSetup, findSetup } from './accounts.js';
import { hashingQueueOf } from './hashing.js';
import { DEVICE_COOKIE, DEVICE_MAX_S, deviceToken } from './known-device.js';
import { attemptLogin } from './login.js';
import { queueKey } from './login-throttle.js';
import * as pages from './pages.js';
import { hashPassword, passwordProblem } from './passwords.js';
import { totpRequired } from './roles.js';
import { BUSY, type ConsoleKit, FAILED_LOGIN, SECURITY_HEADERS, text } from './routes-kit.js';
import { CONSOLE_MAX_MS, endConsoleSession } from './sessions.js';
import { newTotpSecret } from './totp.js';
import { barePage, esc } from './view.js';

/** The console's logging in, out, and setting up an account (src/console/routes.ts registers it with the shared kit, ./routes-kit.ts). */
export function accessRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { sessionCookie, html, origin, sameOrigin, post, svc } = kit;

  // Password hashing's own bounded queue: logins never fill libuv's thread pool (src/console/hashing.ts).
  const hashing = hashingQueueOf(svc);
  const env = svc.config.env;

  /** Where a login goes: a console page (no other site), without a search term (returnUrl). */
  const safeNext = (raw: string) =>
    /^\/console(\/[A-Za-z0-9_\-/?=&.%]*)?$/.test(raw) && !raw.startsWith('//') ? returnUrl(raw) : '/console';

  app.get('/console/login', { schema: { hide: true } }, async (req, reply) => {
    const next = (req.query as { next?: unknown }).next;
    return html(reply, 200, pages.loginPage({ next: typeof next === 'string' ? safeNext(next) : '' }));
  });

  app.post('/console/login', { schema: { hide: true } }, async (req, reply) => {
    const form = req.body instanceof URLSearchParams ? req.body : null;
    if (!form || !sameOrigin(req))
      return html(reply, 403, barePage('This form has expired', '<p><a href="/console/login">Log in again</a></p>'));
    // Without format characters (bidi overrides, zero-width ones) and line or paragraph separators:
    // the e-mail tried is written to the audit trail and shown on its page, where U+202E would
    // display another address than the one typed.
    const email = text(form, 'email', 254)
      .replace(/[\p{Cf}\u2028\u2029]/gu, '')
      .toLowerCase();
    const password = form.get('password') ?? '';
    const code = text(form, 'code', 12).replace(/\s/g, '');
    const nextRaw = text(form, 'next', 300);
    const next = safeNext(nextRaw);
    const failed = (status = 401, error = FAILED_LOGIN) => html(reply, status, pages.loginPage({ next, email, error }));
    // Every failed attempt is recorded with the e-mail tried, the address and why (never the password).
    const outcome = await attemptLogin(svc, hashing, {
      email,
      password,
      code,
      ip: origin(req),
      device: readCookie(req, cookieName(svc, req, DEVICE_COOKIE)),
    });
    if ('refused' in outcome) {
      if (outcome.refused === 'busy') reply.header('retry-after', '1');
      return outcome.refused === 'failed' ? failed() : failed(429, outcome.refused === 'busy' ? BUSY : FAILED_LOGIN);
    }
    return (
      reply
        .status(303)
        .headers(SECURITY_HEADERS)
        // The session first; then the known-device cookie (renewed): this browser's next logins of
        // this account take the hashing queue's reserved places (src/console/known-device.ts).
        .header('set-cookie', [
          sessionCookie(req, outcome.sessionId, CONSOLE_MAX_MS / 1000),
          `${cookieName(svc, req, DEVICE_COOKIE)}=${deviceToken(svc.box, outcome.operatorId, svc.clock())}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${DEVICE_MAX_S}${isHttps(svc, req) ? '; Secure' : ''}`,
        ])
        .header('location', next)
        .send()
    );
  });

  app.post('/console/logout', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'read');
    if (!posted) return reply;
    await runVerb(svc, endConsoleSession, {
      input: { idHash: posted.frame.session.idHash },
      actor: kit.operatorOf(req, posted.frame.session),
    });
    return reply
      .status(303)
      .headers(SECURITY_HEADERS)
      .header('set-cookie', sessionCookie(req, '', 0))
      .header('location', '/console/login')
      .send();
  });

  // ---- setting an account up -------------------------------------------------------------------

  app.get('/console/setup', { schema: { hide: true } }, async (req, reply) => {
    const token = (req.query as { token?: unknown }).token;
    const row = await svc.database.read((db) => findSetup(db, token, svc.clock()));
    if (!row)
      return html(
        reply,
        410,
        barePage(
          'This set-up link has expired or been used',
          '<p>Ask an admin for a new one (<code>cardprogram operator reset EMAIL</code>).</p>',
        ),
      );
    return html(
      reply,
      200,
      pages.setupPage({
        token: token as string,
        email: row.email,
        role: row.role,
        secret: newTotpSecret(),
        required: totpRequired(row.role, env),
      }),
    );
  });

  app.post('/console/setup', { schema: { hide: true } }, async (req, reply) => {
    const form = req.body instanceof URLSearchParams ? req.body : null;
    if (!form || !sameOrigin(req)) return html(reply, 403, barePage('This form has expired', '<p>Open the set-up link again.</p>'));
    const token = form.get('token') ?? '';
    const row = await svc.database.read((db) => findSetup(db, token, svc.clock()));
    if (!row) return html(reply, 410, barePage('This set-up link has expired or been used', '<p>Ask an admin for a new one.</p>'));
    const password = form.get('password') ?? '';
    const secret = /^[A-Z2-7]{32}$/.test(form.get('secret') ?? '') ? (form.get('secret') as string) : newTotpSecret();
    const code = text(form, 'code', 12).replace(/\s/g, '');
    const required = totpRequired(row.role, env);
    const again = (error: string, status = 400) =>
      html(reply, status, pages.setupPage({ token, email: row.email, role: row.role, secret, required, error }));
    const problem = password !== form.get('password2') ? 'The two passwords differ.' : passwordProblem(password, row.email);
    if (problem) return again(problem);
    // Hashed in the same bounded queue as logins: when it is full, refused before anything is hashed.
    const passwordHash = await hashing.runOrRefuse(() => hashPassword(password), { client: queueKey(origin(req)) });
    if (passwordHash === null) {
      reply.header('retry-after', '1');
      return again('The service is busy checking passwords: send the form again in a moment.', 429);
    }
    const done = await runVerb(svc, completeSetup, {
      input: { token, passwordHash, totp: code ? { secret, code } : null, origin: origin(req) },
      actor: { kind: 'operator', via: 'console', who: row.email, origin: origin(req) },
    });
    if (done === 'badCode') return again('That code does not match: check the app’s clock and enter the code it shows now.');
    if (done === 'totpRequired')
      return again(
        row.role === 'admin'
          ? 'An admin must set up the second factor: enter the code your app shows.'
          : 'Every account must set up the second factor: enter the code your app shows.',
      );
    if (done === null) return html(reply, 410, barePage('This set-up link has expired or been used', '<p>Ask an admin for a new one.</p>'));
    return html(
      reply,
      200,
      barePage('Your account is ready', `<p>${esc(done.email)} can now log in.</p><p><a href="/console/login">Log in</a></p>`),
    );
  });
}
