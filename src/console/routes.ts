import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { type AuditFilter, type AuditSpec, listAudit, type Operator, recordView } from '../audit/trail.js';
import { listEndpoints } from '../callbacks/breaker.js';
import { retryCallbacks } from '../callbacks/manage.js';
import { closeCard } from '../cards/close.js';
import { toCardModel } from '../cards/model.js';
import { queryCard } from '../cards/query.js';
import { setCardFrozen } from '../cards/status.js';
import type { Services } from '../context.js';
import { type DB, OPERATOR_ROLES } from '../db/schema.js';
import { listDomains, removeDomain } from '../domains/store.js';
import { DomainError } from '../errors.js';
import { AuditStatus } from '../holders/audit-status.js';
import { reviewHolder } from '../holders/review.js';
import { cookieName, crossSite, htmlScope, isHttps, pageHeaders, readCookie } from '../http/html-pages.js';
import { returnUrl } from '../http/logged-url.js';
import { decideKyc } from '../kyc/decide.js';
import { fundingBalances, fundMerchant } from '../ledger/funding.js';
import { fundingStatement } from '../ledger/statement.js';
import { listMerchants, merchantSummary, updateMerchant } from '../merchants/manage.js';
import { CARD_CURRENCIES } from '../money/currency.js';
import { runVerb } from '../runner.js';
import { listTrades, MAX_RANGE_DAYS } from '../trades/list.js';
import { TRADE_STATUSES } from '../trades/types.js';
import { completeSetup, createOperator, findSetup, listOperators, resetOperator, updateOperator } from './accounts.js';
import { hashingQueueOf } from './hashing.js';
import { DEVICE_COOKIE, DEVICE_MAX_S, deviceToken } from './known-device.js';
import { attemptLogin } from './login.js';
import { queueKey } from './login-throttle.js';
import * as pages from './pages.js';
import { hashPassword, passwordProblem } from './passwords.js';
import { callbackDetail, holderDetail, kycDetail, overview, reviewQueues, search, troubledCallbacks } from './queries.js';
import { can, isRole, type Permission, totpRequired } from './roles.js';
import { CONSOLE_MAX_MS, type ConsoleSession, csrfMatches, csrfToken, endConsoleSession, loadConsoleSession } from './sessions.js';
import { newTotpSecret } from './totp.js';
import { barePage, CONSOLE_STYLE_HASH, esc, type Frame } from './view.js';

const SECURITY_HEADERS = pageHeaders(CONSOLE_STYLE_HASH);
const SESSION_COOKIE = 'cp_console';

const FAILED_LOGIN =
  'The e-mail, password or code is not right, or the account is locked for a while. After 5 failed attempts in a row an account is locked for 15 minutes.';
/** A login refused because password hashing's queue is full (nothing was checked): it may be sent again at once. */
const BUSY = 'Too many logins are being checked just now: try again in a moment.';

const isIdText = (s: unknown): s is string => typeof s === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(s);
/** A form's text field, without control characters (PostgreSQL refuses a NUL in a parameter), trimmed and bounded. */
const text = (form: URLSearchParams, name: string, max = 200) =>
  (form.get(name) ?? '')
    .replace(/\p{Cc}/gu, '')
    .trim()
    .slice(0, max);
/** A query parameter's text, the same way; undefined when absent or empty. */
const queryText = (value: unknown, max = 200) => {
  const v =
    typeof value === 'string'
      ? value
          .replace(/\p{Cc}/gu, '')
          .trim()
          .slice(0, max)
      : '';
  return v === '' ? undefined : v;
};
const clean = (s: string) => s.replace(/\p{Cc}/gu, ' ');

/**
 * The operators' console (issue 17), under /console, registered only when CARDPROGRAM_CONSOLE is on.
 * Server-rendered pages without script; every change is a verb run with its audit record (who, from
 * where, before and after) in the change's own transaction.
 */
export const consoleRoutes: FastifyPluginAsync<{ svc: Services }> = async (app, { svc }) => {
  const sessionOf = (req: FastifyRequest) => readCookie(req, cookieName(svc, req, SESSION_COOKIE));
  const sessionCookie = (req: FastifyRequest, value: string, maxAgeS: number) =>
    `${cookieName(svc, req, SESSION_COOKIE)}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${isHttps(svc, req) ? '; Secure' : ''}`;

  const html = (reply: FastifyReply, status: number, body: string) => {
    return reply.status(status).headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(body);
  };
  const redirect = (reply: FastifyReply, location: string) =>
    reply.status(303).headers(SECURITY_HEADERS).header('location', location).send();

  // The console answers on the service's own addresses only: a merchant's mapped card-page host is
  // the merchant's (its DNS, maybe its TLS proxy), and an operator's password must never go there.
  app.addHook('onRequest', async (req, reply) => {
    if (await svc.domains.lookup(req.hostname)) {
      return html(reply, 404, barePage('Not found', '<p>There is no such page.</p>'));
    }
  });
  htmlScope(app, svc, {
    send: html,
    bodyLimit: 8192,
    unavailable: barePage('The console is not available just now', '<p>The database does not answer. Try again in a moment.</p>'),
    failed: (serverError) =>
      barePage(
        serverError ? 'Something went wrong' : 'This request could not be handled',
        '<p><a href="/console">Back to the console</a></p>',
      ),
    what: 'console',
  });

  const origin = (req: FastifyRequest) => req.ip;
  const operatorOf = (req: FastifyRequest, s: ConsoleSession): Operator => ({ actor: s.email, source: 'console', origin: origin(req) });
  const audit = (req: FastifyRequest, s: ConsoleSession, action: string, target: string, before?: AuditSpec['before']): AuditSpec => ({
    operator: operatorOf(req, s),
    action,
    target,
    ...(before ? { before } : {}),
  });

  /** A page request: a live session whose role may do this, else the answer (login, or 403) is sent. */
  async function session(req: FastifyRequest, reply: FastifyReply, permission: Permission): Promise<Frame | null> {
    const cookie = sessionOf(req);
    const s = await loadConsoleSession(svc, cookie);
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

  // ---- logging in ----------------------------------------------------------------------------

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
      actor: `operator:${posted.frame.session.email}`,
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
    const row = await findSetup(svc.database.db, token, svc.clock());
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
    const row = await findSetup(svc.database.db, token, svc.clock());
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
      actor: `operator:${row.email}`,
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

  // ---- pages -------------------------------------------------------------------------------------

  app.get('/console', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    return html(reply, 200, pages.overviewPage({ ...frame, current: '/console' }, await overview(svc.database.db, svc.clock())));
  });

  app.get('/console/reviews', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    return html(reply, 200, pages.reviewsPage({ ...frame, current: '/console/reviews' }, await reviewQueues(svc.database.db)));
  });

  /** Records that an operator opened sealed data (a view is an act of the trail too). */
  const recordViewOf = (req: FastifyRequest, s: ConsoleSession, action: string, target: string) =>
    runVerb(svc, recordView, { input: { what: 'identity data' }, actor: `operator:${s.email}`, audit: audit(req, s, action, target) });

  app.get<{ Params: { id: string } }>('/console/holders/:id', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const detail = isIdText(req.params.id) ? await holderDetail(svc, req.params.id) : null;
    if (!detail)
      return html(reply, 404, pages.problemPage({ ...frame, current: '/console/reviews' }, 'No such cardholder.', '/console/reviews'));
    await recordViewOf(req, frame.session, 'holder.view', detail.row.id);
    const done = (req.query as { done?: unknown }).done;
    return html(
      reply,
      200,
      pages.holderPage(
        { ...frame, current: '/console/reviews', notice: typeof done === 'string' ? pages.notice(done) : undefined },
        detail,
      ),
    );
  });

  const REVIEW_DECISIONS: Record<string, { status: number; needsReason: boolean }> = {
    approve: { status: AuditStatus.approved, needsReason: false },
    reject: { status: AuditStatus.rejected, needsReason: true },
    complete: { status: AuditStatus.dataToBeCompleted, needsReason: true },
    review: { status: AuditStatus.underReview, needsReason: false },
  };

  app.post<{ Params: { id: string } }>('/console/holders/:id/review', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'review');
    if (!posted) return reply;
    const { frame, form } = posted;
    const holderId = req.params.id;
    const chosen = form.get('decision') ?? '';
    const decision = Object.hasOwn(REVIEW_DECISIONS, chosen) ? REVIEW_DECISIONS[chosen] : undefined;
    const reason = clean(text(form, 'reason'));
    const back = `/console/holders/${encodeURIComponent(holderId)}`;
    if (!decision || !isIdText(holderId)) return html(reply, 400, pages.problemPage(frame, 'Choose a decision.', back));
    if (decision.needsReason && !reason) return html(reply, 400, pages.problemPage(frame, 'Give a reason: the merchant sees it.', back));
    const before = async (tx: Kysely<DB>) => {
      const row = await tx.selectFrom('cardholders').select(['audit_status', 'err_msg']).where('id', '=', holderId).executeTakeFirst();
      return row ? { auditStatus: row.audit_status, errMsg: row.err_msg } : null;
    };
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, reviewHolder, {
          input: { holderId, auditStatus: decision.status, errMsg: reason },
          actor: frame.session.email,
          audit: audit(req, frame.session, 'holder.review', holderId, before),
        }),
      back,
    );
    return done === null ? reply : redirect(reply, `${back}?done=reviewed`);
  });

  app.get<{ Params: { id: string } }>('/console/kyc/:id', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const detail = isIdText(req.params.id) ? await kycDetail(svc, req.params.id) : null;
    if (!detail)
      return html(reply, 404, pages.problemPage({ ...frame, current: '/console/reviews' }, 'No such KYC request.', '/console/reviews'));
    await recordViewOf(req, frame.session, 'kyc.view', detail.row.id);
    const done = (req.query as { done?: unknown }).done;
    return html(
      reply,
      200,
      pages.kycPage({ ...frame, current: '/console/reviews', notice: typeof done === 'string' ? pages.notice(done) : undefined }, detail),
    );
  });

  app.post<{ Params: { id: string } }>('/console/kyc/:id/decide', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'review');
    if (!posted) return reply;
    const { frame, form } = posted;
    const back = `/console/kyc/${encodeURIComponent(req.params.id)}`;
    const status = form.get('decision');
    const reason = clean(text(form, 'reason'));
    if (status !== 'approved' && status !== 'rejected' && status !== 'reviewing')
      return html(reply, 400, pages.problemPage(frame, 'Choose a decision.', back));
    if (status === 'rejected' && !reason) return html(reply, 400, pages.problemPage(frame, 'Give a reason: the merchant sees it.', back));
    const row = isIdText(req.params.id)
      ? await svc.database.db
          .selectFrom('kyc_requests')
          .select(['id', 'request_no', 'merchant_id'])
          .where('id', '=', req.params.id)
          .executeTakeFirst()
      : undefined;
    if (!row) return html(reply, 404, pages.notFoundPage(frame, 'No such KYC request.', '/console/reviews'));
    const before = async (tx: Kysely<DB>) => {
      const r = await tx.selectFrom('kyc_requests').select(['status', 'reason']).where('id', '=', row.id).executeTakeFirst();
      return r ? { kycStatus: r.status, reason: r.reason } : null;
    };
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, decideKyc, {
          input: { requestNo: row.request_no, status, reason },
          merchantId: row.merchant_id,
          actor: frame.session.email,
          audit: audit(req, frame.session, 'kyc.review', row.request_no, before),
        }),
      back,
    );
    return done === null ? reply : redirect(reply, `${back}?done=decided`);
  });

  app.get('/console/search', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const query = queryText((req.query as { q?: unknown }).q) ?? '';
    const hits = query ? await search(svc, query) : null;
    // One match: open it at once.
    if (hits?.length === 1) return redirect(reply, (hits[0] as (typeof hits)[number]).href);
    return html(reply, 200, pages.searchPage({ ...frame, current: '/console/search' }, query, hits));
  });

  app.get<{ Params: { id: string } }>('/console/cards/:id', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const db = svc.database.db;
    const card = isIdText(req.params.id)
      ? await db.selectFrom('cards').selectAll().where('id', '=', req.params.id).executeTakeFirst()
      : undefined;
    const f = { ...frame, current: '/console/search' };
    if (!card) return html(reply, 404, pages.notFoundPage(f, 'No such card.', '/console/search'));
    const q = req.query as { from?: unknown; to?: unknown; page?: unknown; done?: unknown };
    const now = svc.clock();
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const isDay = (v: unknown): v is string => typeof v === 'string' && /^\d{4}-\d\d-\d\d$/.test(v) && !Number.isNaN(Date.parse(v));
    const to = isDay(q.to) ? q.to : day(now);
    const from = isDay(q.from) ? q.from : day(Date.parse(to) - (MAX_RANGE_DAYS - 1) * 86_400_000);
    const pageNo = typeof q.page === 'string' && /^\d{1,6}$/.test(q.page) ? Number(q.page) : 0;
    const PAGE = 20;
    let trades: Awaited<ReturnType<typeof listTrades>> | null = null;
    let rangeError: string | null = null;
    try {
      trades = await listTrades({
        db,
        vault: svc.vault,
        merchantId: card.merchant_id,
        input: { cardId: card.id, beginDate: from, endDate: to, start: pageNo * PAGE, maxSize: PAGE, tradeStatusList: [...TRADE_STATUSES] },
      });
    } catch (err) {
      if (!(err instanceof DomainError) || err.status >= 500) throw err;
      // The 4.1 list's own rule, said in the page's words.
      rangeError = /at most \d+ days/.test(err.message)
        ? `Choose at most ${MAX_RANGE_DAYS} days (from ${from} to ${to} is longer).`
        : /before beginDate/.test(err.message)
          ? 'The first day must not be after the last.'
          : err.message;
    }
    if (trades && trades.total > 0 && pageNo * PAGE >= trades.total) {
      // Past the last page (an old link, a typed address): the last page.
      const last = Math.ceil(trades.total / PAGE) - 1;
      return redirect(reply, `/console/cards/${encodeURIComponent(card.id)}?from=${from}&to=${to}&page=${last}`);
    }
    const [query, holder, declined, merchant] = await Promise.all([
      queryCard(db, card.merchant_id, card.id, now),
      db
        .selectFrom('cardholders')
        .select(['id', 'first_name', 'last_name', 'audit_status'])
        .where('id', '=', card.holder_id)
        .executeTakeFirst(),
      db
        .selectFrom('authorizations')
        .selectAll()
        .where('card_id', '=', card.id)
        .where('approved', '=', 0)
        .orderBy('created_at', 'desc')
        .limit(10)
        .execute(),
      merchantSummary(db, card.merchant_id),
    ]);
    return html(
      reply,
      200,
      pages.cardPage(
        { ...f, notice: typeof q.done === 'string' ? pages.notice(q.done) : undefined },
        {
          card: toCardModel(card),
          query,
          holder,
          declined,
          merchantName: merchant?.name ?? card.merchant_id,
          merchantId: card.merchant_id,
          createdAt: card.created_at,
          trades,
          rangeError,
          from,
          to,
          pageNo,
          pageSize: PAGE,
        },
      ),
    );
  });

  for (const action of ['freeze', 'unfreeze', 'close'] as const) {
    app.post<{ Params: { id: string } }>(`/console/cards/:id/${action}`, { schema: { hide: true } }, async (req, reply) => {
      const posted = await post(req, reply, 'cards');
      if (!posted) return reply;
      const { frame, form } = posted;
      const cardId = req.params.id;
      const back = `/console/cards/${encodeURIComponent(cardId)}`;
      if (!isIdText(cardId)) return html(reply, 404, pages.notFoundPage(frame, 'No such card.', '/console/search'));
      const reason = clean(text(form, 'reason'));
      if (action === 'close' && form.get('confirm') !== cardId) {
        return html(reply, 400, pages.problemPage(frame, 'To close a card for good, type its id in the confirmation field.', back));
      }
      const before = async (tx: Kysely<DB>) => {
        const row = await tx
          .selectFrom('cards')
          .select(['status', 'status_source', 'status_reason'])
          .where('id', '=', cardId)
          .executeTakeFirst();
        return row ? { status: row.status, statusSource: row.status_source, statusReason: row.status_reason } : null;
      };
      const input = { cardId, source: 'operator' as const, reason: reason || undefined };
      const spec = audit(req, frame.session, `card.${action}`, cardId, before);
      const done = await change(
        reply,
        frame,
        () =>
          action === 'close'
            ? runVerb(svc, closeCard, { input, actor: frame.session.email, audit: spec })
            : runVerb(svc, setCardFrozen, { input: { ...input, frozen: action === 'freeze' }, actor: frame.session.email, audit: spec }),
        back,
      );
      return done === null ? reply : redirect(reply, `${back}?done=${action}`);
    });
  }

  app.get('/console/callbacks', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const q = req.query as { merchant?: unknown; status?: unknown; done?: unknown };
    const merchantId = isIdText(q.merchant) ? q.merchant : undefined;
    const status = q.status === 'failed' || q.status === 'pending' ? q.status : undefined;
    const rows = await troubledCallbacks(svc.database.db, { merchantId, status });
    const endpoints = await listEndpoints(svc.database.db, merchantId);
    const f = { ...frame, current: '/console/callbacks', notice: typeof q.done === 'string' ? pages.notice(q.done) : undefined };
    return html(reply, 200, pages.callbacksPage(f, rows, { merchantId, status }, endpoints));
  });

  app.get<{ Params: { id: string } }>('/console/callbacks/:id', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const detail = isIdText(req.params.id) ? await callbackDetail(svc, req.params.id) : null;
    const f = {
      ...frame,
      current: '/console/callbacks',
      notice: typeof (req.query as { done?: unknown }).done === 'string' ? pages.notice((req.query as { done: string }).done) : undefined,
    };
    if (!detail) return html(reply, 404, pages.notFoundPage(f, 'No such callback event.', '/console/callbacks'));
    return html(reply, 200, pages.callbackPage(f, detail));
  });

  app.post<{ Params: { id: string } }>('/console/callbacks/:id/resend', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'callbacks');
    if (!posted) return reply;
    const { frame } = posted;
    const eventId = req.params.id;
    const back = `/console/callbacks/${encodeURIComponent(eventId)}`;
    if (!isIdText(eventId)) return html(reply, 404, pages.notFoundPage(frame, 'No such callback event.', '/console/callbacks'));
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, retryCallbacks, {
          input: { eventIds: [eventId] },
          actor: frame.session.email,
          audit: audit(req, frame.session, 'callbacks.retry', eventId),
        }),
      back,
    );
    return done === null ? reply : redirect(reply, `${back}?done=resent`);
  });

  app.post('/console/callbacks/resend-failed', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'callbacks');
    if (!posted) return reply;
    const { frame, form } = posted;
    const merchant = text(form, 'merchant', 64);
    const merchantId = isIdText(merchant) ? merchant : undefined;
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, retryCallbacks, {
          input: { allFailed: true, ...(merchantId ? { merchantId } : {}) },
          actor: frame.session.email,
          audit: audit(req, frame.session, 'callbacks.retry', merchantId ? `failed:${merchantId}` : 'failed'),
        }),
      '/console/callbacks',
    );
    return done === null ? reply : redirect(reply, `/console/callbacks?done=resent-all${merchantId ? `&merchant=${merchantId}` : ''}`);
  });

  app.get('/console/merchants', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    return html(reply, 200, pages.merchantsPage({ ...frame, current: '/console/merchants' }, await listMerchants(svc.database.db)));
  });

  app.get<{ Params: { id: string } }>('/console/merchants/:id', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const db = svc.database.db;
    const f = {
      ...frame,
      current: '/console/merchants',
      notice: typeof (req.query as { done?: unknown }).done === 'string' ? pages.notice((req.query as { done: string }).done) : undefined,
    };
    const merchant = isIdText(req.params.id) ? await merchantSummary(db, req.params.id) : undefined;
    if (!merchant) return html(reply, 404, pages.notFoundPage(f, 'No such merchant.', '/console/merchants'));
    const [domains, balances, ...statements] = await Promise.all([
      listDomains(db, merchant.appId),
      fundingBalances(db, merchant.appId),
      ...CARD_CURRENCIES.map((c) => fundingStatement(db, merchant.appId, c, { maxSize: 20, newestFirst: true })),
    ]);
    // The funding form's one-time token: the credit's idempotency key, so a double post, or the same
    // form posted again, answers the first credit instead of crediting twice.
    const fundToken = randomBytes(16).toString('hex');
    return html(reply, 200, pages.merchantPage(f, { merchant, domains, balances, fundToken, statements }));
  });

  const merchantState = (appId: string) => async (tx: Kysely<DB>) => (await merchantSummary(tx, appId)) ?? null;

  app.post<{ Params: { id: string } }>('/console/merchants/:id/status', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'merchants');
    if (!posted) return reply;
    const { frame, form } = posted;
    const appId = req.params.id;
    const back = `/console/merchants/${encodeURIComponent(appId)}`;
    const status = form.get('status');
    if ((status !== 'active' && status !== 'disabled') || !isIdText(appId))
      return html(reply, 400, pages.problemPage(frame, 'Choose active or disabled.', back));
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, updateMerchant, {
          input: { appId, status },
          actor: frame.session.email,
          audit: audit(req, frame.session, 'merchant.update', appId, merchantState(appId)),
        }),
      back,
    );
    return done === null ? reply : redirect(reply, `${back}?done=${status}`);
  });

  app.post<{ Params: { id: string } }>('/console/merchants/:id/fund', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'funding');
    if (!posted) return reply;
    const { frame, form } = posted;
    const appId = req.params.id;
    const back = `/console/merchants/${encodeURIComponent(appId)}`;
    // The amount and currency as sent (only trimmed): anything but a decimal number, or a card currency, is refused by the verb.
    const raw = (name: string) => (form.get(name) ?? '').trim().slice(0, 32);
    const once = form.get('once') ?? '';
    if (!/^[0-9a-f]{32}$/.test(once))
      return html(reply, 400, pages.problemPage(frame, 'This form is out of date: open the merchant again.', back));
    const input = {
      appId,
      amount: raw('amount'),
      currency: raw('currency'),
      reference: clean(text(form, 'reference')),
      // The token tells a double post (or the same form posted again) from a second transfer.
      idempotencyKey: `console:${once}`,
    };
    if (!input.reference) return html(reply, 400, pages.problemPage(frame, 'Give a reference (the bank transfer, the contract).', back));
    const done = await change(
      reply,
      frame,
      () => runVerb(svc, fundMerchant, { input, actor: frame.session.email, audit: audit(req, frame.session, 'merchant.fund', appId) }),
      back,
    );
    return done === null ? reply : redirect(reply, `${back}?done=funded`);
  });

  app.post<{ Params: { id: string } }>('/console/merchants/:id/domains/remove', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'domains');
    if (!posted) return reply;
    const { frame, form } = posted;
    const appId = req.params.id;
    const back = `/console/merchants/${encodeURIComponent(appId)}`;
    const host = text(form, 'host', 253);
    const mapped = await svc.database.db.selectFrom('merchant_domains').select('merchant_id').where('host', '=', host).executeTakeFirst();
    if (!mapped || mapped.merchant_id !== appId)
      return html(reply, 404, pages.notFoundPage(frame, 'That host is not mapped to this merchant.', back));
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, removeDomain, {
          input: { host },
          actor: frame.session.email,
          audit: audit(req, frame.session, 'domain.remove', host),
        }),
      back,
    );
    if (done !== null) svc.domains.forget();
    return done === null ? reply : redirect(reply, `${back}?done=domain-removed`);
  });

  app.get('/console/audit', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const q = req.query as Record<string, unknown>;
    const filter: AuditFilter = {
      actor: queryText(q.actor),
      action: queryText(q.action),
      target: queryText(q.target),
      limit: 200,
      partial: true,
    };
    return html(reply, 200, pages.auditPage({ ...frame, current: '/console/audit' }, filter, await listAudit(svc.database.db, filter)));
  });

  app.get('/console/operators', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'operators');
    if (!frame) return reply;
    const done = (req.query as { done?: unknown }).done;
    const f = { ...frame, current: '/console/operators', notice: typeof done === 'string' ? pages.notice(done) : undefined };
    return html(reply, 200, pages.operatorsPage(f, await listOperators(svc.database.db, svc.clock()), null));
  });

  const setupUrl = (token: string) => `${svc.config.publicUrl}/console/setup?token=${token}`;

  app.post('/console/operators', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'operators');
    if (!posted) return reply;
    const { frame, form } = posted;
    const role = form.get('role');
    const email = text(form, 'email', 254);
    if (!isRole(role))
      return html(reply, 400, pages.problemPage(frame, `Choose a role: ${OPERATOR_ROLES.join(', ')}.`, '/console/operators'));
    const made = await change(
      reply,
      frame,
      () =>
        runVerb(svc, createOperator, {
          input: { email, role },
          actor: frame.session.email,
          audit: audit(req, frame.session, 'operator.create', email.toLowerCase()),
        }),
      '/console/operators',
    );
    if (made === null) return reply;
    const f = { ...frame, current: '/console/operators' };
    return html(
      reply,
      200,
      pages.operatorsPage(f, await listOperators(svc.database.db, svc.clock()), { email: made.email, url: setupUrl(made.setupToken) }),
    );
  });

  app.post<{ Params: { id: string; action: string } }>('/console/operators/:id/:action', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'operators');
    if (!posted) return reply;
    const { frame, form } = posted;
    const row = isIdText(req.params.id)
      ? await svc.database.db.selectFrom('operators').select(['id', 'email']).where('id', '=', req.params.id).executeTakeFirst()
      : undefined;
    if (!row) return html(reply, 404, pages.notFoundPage(frame, 'No such operator.', '/console/operators'));
    const state = async (tx: Kysely<DB>) =>
      tx.selectFrom('operators').select(['role', 'status']).where('id', '=', row.id).executeTakeFirst();
    const f = { ...frame, current: '/console/operators' };
    if (req.params.action === 'reset') {
      const reset = await change(
        reply,
        frame,
        () =>
          runVerb(svc, resetOperator, {
            input: { email: row.email },
            actor: frame.session.email,
            audit: audit(req, frame.session, 'operator.reset', row.email, state),
          }),
        '/console/operators',
      );
      if (reset === null) return reply;
      return html(
        reply,
        200,
        pages.operatorsPage(f, await listOperators(svc.database.db, svc.clock()), { email: reset.email, url: setupUrl(reset.setupToken) }),
      );
    }
    if (req.params.action !== 'update') return html(reply, 404, pages.notFoundPage(frame, 'No such action.', '/console/operators'));
    const role = form.get('role');
    const status = form.get('status');
    const input = {
      email: row.email,
      role: isRole(role) ? role : undefined,
      status: status === 'active' || status === 'disabled' ? status : undefined,
    } as const;
    if (!input.role && !input.status) return html(reply, 400, pages.problemPage(frame, 'Choose a role or a status.', '/console/operators'));
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, updateOperator, {
          input,
          actor: frame.session.email,
          audit: audit(req, frame.session, 'operator.update', row.email, state),
        }),
      '/console/operators',
    );
    return done === null ? reply : redirect(reply, '/console/operators?done=operator-updated');
  });

  // Anything else under /console: the console's own 404 page.
  app.get('/console/*', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    return html(reply, 404, pages.notFoundPage(frame, 'There is no such page.', '/console'));
  });
  app.route({
    method: ['POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/console/*',
    schema: { hide: true },
    handler: async (_req, reply) =>
      html(reply, 404, barePage('Not found', '<p>There is no such page.</p><p><a href="/console">Back to the console</a></p>')),
  });
};
