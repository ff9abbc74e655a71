import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Services } from '../context.js';
import { DomainError, invalid } from '../errors.js';
import { cookieName, crossSite, htmlScope, isHttps, pageHeaders, readCookie } from '../http/html-pages.js';
import { operationInput, signedRead } from '../http/operation.js';
import { Envelope, errorResponses, ok } from '../http/schemas.js';
import { runVerb } from '../runner.js';
import { parseCursor } from './activity.js';
import { merchantName, revealOnPage, setFrozenOnPage } from './card-actions.js';
import { reportOnPage } from './card-disputes.js';
import { holderView } from './holder-view.js';
import { formToken, formTokenMatches, issueLink, loadSession, openLink, type PageSession, SESSION_IDLE_MS } from './links.js';
import { LinkBody } from './schemas.js';
import { holderPage, messagePage, productPage, STYLE_HASH } from './view.js';

const SECURITY_HEADERS = pageHeaders(STYLE_HASH);
const SESSION_COOKIE = 'cp_session';

function html(reply: FastifyReply, status: number, body: string) {
  return reply.status(status).headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(body);
}

/**
 * Where a merchant's page links point: its first mapped host over HTTPS (with the HTTPS port when
 * the service serves that host's certificate itself on a port other than 443), else the public URL.
 */
export async function pageBaseUrl(svc: Services, merchantId: string): Promise<string> {
  const mapped = await svc.domains.primaryHost(merchantId);
  if (!mapped) return svc.config.publicUrl;
  const port = svc.config.httpsPort;
  return `https://${mapped.host}${mapped.tls && port !== null && port !== 443 ? `:${port}` : ''}`;
}

const NOTICES: Record<string, string> = {
  frozen: 'Your card is frozen: payments with it are declined until you unfreeze it.',
  unfrozen: 'Your card is active again.',
  reported: 'Thank you: the purchase is reported, and your card provider opens a dispute for it.',
  'reported-frozen': 'Thank you: the purchase is reported, and your card is frozen: payments with it are declined until you unfreeze it.',
};

export const pageRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/open/merchant/api/v2',
    {
      schema: {
        tags: ['Login-free page'],
        summary: 'A one-time address of the login-free card page (interface 4.4)',
        description:
          'email (optional, ≤ 64), appId (≤ 32), sign (≤ 512), timestamp (signed Unix ms, within 5 minutes: 1007 outside), randomStr (32 letters or digits, single-use: 1008 when reused). Where timestamps are required (CARDPROGRAM_REQUIRE_TIMESTAMP, on in production) both timestamp (1007 without) and randomStr (1002 without) are required, so a captured body cannot mint another link; the sandbox accepts the interface’s sample body {appId, email, sign}. The webUrl opens the page once, within 10 minutes, on the merchant’s mapped host when it has one. Needs the login-free permission (2605 otherwise); at most 10 links a minute per merchant and e-mail (1009).',
        body: LinkBody,
        response: { 200: Envelope(Type.Object({ webUrl: Type.String() })), ...errorResponses },
      },
      config: { operation: 'loginFreeLink' },
    },
    async (req) => {
      const { randomStr } = req.body;
      if (randomStr !== undefined) await signedRead(svc, req, randomStr);
      else if (svc.config.requireTimestamp) throw invalid('randomStr', 'is required');
      const { input } = operationInput(req.body);
      const merchantId = req.merchant.appId;
      const token = await runVerb(svc, issueLink, {
        input: { ...input, generation: req.merchant.generation },
        merchantId,
        actor: { kind: 'merchant', appId: merchantId, origin: req.ip },
      });
      return ok({ webUrl: `${await pageBaseUrl(svc, req.merchant.appId)}/page/open?token=${token}` }, req.id);
    },
  );

  await app.register(browserRoutes, { svc });
};

/**
 * The pages a cardholder's browser opens. They answer in HTML, errors included, and read HTML
 * forms (in this scope only; the API reads JSON alone).
 */
const browserRoutes: FastifyPluginAsync<{ svc: Services }> = async (app, { svc }) => {
  htmlScope(app, svc, {
    send: html,
    bodyLimit: 4096,
    unavailable: messagePage('The card page is not available just now', 'Please try again in a moment.'),
    failed: (serverError) =>
      serverError
        ? messagePage('Something went wrong', 'Please try again in a moment.')
        : messagePage('This request could not be handled', 'Go back to your card page and try again.'),
    what: 'page',
  });

  /** The merchant the request's host is mapped to, or null on an unmapped host. */
  const hostMerchant = async (req: FastifyRequest) => (await svc.domains.lookup(req.hostname))?.merchantId ?? null;

  /** The request's session, when it has a live one valid on this host; otherwise the answer is sent. */
  async function gate(req: FastifyRequest, reply: FastifyReply): Promise<{ session: PageSession; sessionId: string } | null> {
    const sessionId = readCookie(req, cookieName(svc, req, SESSION_COOKIE));
    const session = await loadSession({ svc, sessionId, host: req.hostname });
    if (!session || sessionId === undefined) {
      await html(reply, 401, messagePage('Your session has ended', 'Open the card page again from the app.'));
      return null;
    }
    const mapped = await hostMerchant(req);
    if (mapped !== null && mapped !== session.merchantId) {
      await html(reply, 403, messagePage('This page belongs to another site', 'Open the card page again from the app.'));
      return null;
    }
    return { session, sessionId };
  }

  /** A form post: same origin, carrying the session's form token. Otherwise the answer is sent. */
  async function formGate(req: FastifyRequest, reply: FastifyReply) {
    const fromElsewhere = crossSite(svc, req);
    const gated = await gate(req, reply);
    if (!gated) return null;
    const form = req.body instanceof URLSearchParams ? req.body : null;
    if (fromElsewhere || !form || !formTokenMatches(gated.sessionId, form.get('form'))) {
      await html(reply, 403, messagePage('This form has expired', 'Go back to your card page and try again.'));
      return null;
    }
    return gated;
  }

  /**
   * Does a card id from the address look like one the service issues? Anything else (a NUL, which
   * PostgreSQL refuses to compare, other control characters, 65 characters) is no card: 404.
   */
  const isIdText = (s: string) => /^[A-Za-z0-9_-]{1,64}$/.test(s);

  app.get('/page/open', { schema: { hide: true } }, async (req, reply) => {
    const token = (req.query as { token?: unknown }).token;
    const opened =
      typeof token === 'string' ? await openLink({ svc, token, hostMerchantId: await hostMerchant(req), host: req.hostname }) : 'gone';
    if (opened === 'wrongHost') {
      return html(reply, 403, messagePage('This link belongs to another site', 'Open the card page again from the app.'));
    }
    if (opened === 'gone') {
      return html(
        reply,
        410,
        messagePage(
          'Link expired or already used',
          'This link can be opened once, within 10 minutes. Open the card page again from the app.',
        ),
      );
    }
    const secure = isHttps(svc, req);
    const cookie = `${cookieName(svc, req, SESSION_COOKIE)}=${opened.sessionId}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${SESSION_IDLE_MS / 1000}${secure ? '; Secure' : ''}`;
    // The token leaves the address bar (and history) at once.
    return reply.status(303).headers(SECURITY_HEADERS).header('set-cookie', cookie).header('location', '/page').send();
  });

  app.get('/page', { schema: { hide: true } }, async (req, reply) => {
    const gated = await gate(req, reply);
    if (!gated) return reply;
    const { session, sessionId } = gated;
    const brand = await merchantName(svc, session.merchantId);
    if (session.emailHash === null) return html(reply, 200, productPage(brand));
    const q = req.query as { card?: unknown; older?: unknown; done?: unknown };
    // A card's older activity (src/page/activity.ts); anything malformed shows the newest.
    const older = typeof q.older === 'string' ? parseCursor(q.older) : null;
    const paging = typeof q.card === 'string' && isIdText(q.card) && older ? { cardId: q.card, older } : null;
    const view = await holderView(svc, session, paging);
    const notice = typeof q.done === 'string' ? NOTICES[q.done] : undefined;
    return html(reply, 200, holderPage(view, { brand, email: view?.email ?? '', formToken: formToken(sessionId), notice }));
  });

  app.post<{ Params: { cardId: string } }>('/page/cards/:cardId/reveal', { schema: { hide: true } }, async (req, reply) => {
    const gated = await formGate(req, reply);
    if (!gated) return reply;
    const { session, sessionId } = gated;
    const revealed = isIdText(req.params.cardId)
      ? await revealOnPage({ svc, session, cardId: req.params.cardId, host: req.hostname })
      : null;
    if (revealed === null) return html(reply, 404, messagePage('Card not found', 'Go back to your card page.'));
    if (revealed === 'notActive') {
      return html(reply, 409, messagePage('Card details are not available', 'Unfreeze the card first to see its details.'));
    }
    const view = await holderView(svc, session, null);
    const brand = await merchantName(svc, session.merchantId);
    return html(reply, 200, holderPage(view, { brand, email: view?.email ?? '', formToken: formToken(sessionId), revealed }));
  });

  /**
   * A change posted from the page: a refusal by its verb said in the cardholder's words (409), an
   * unknown card or purchase 404; done, post, redirect, get (a reload does not post again).
   */
  async function pageChange<T>(
    reply: FastifyReply,
    run: () => Promise<T | null>,
    refused: { title: string; words: (kind: string) => string },
    notFound: string,
    done: (result: T) => string,
  ) {
    let result: T | null;
    try {
      result = await run();
    } catch (err) {
      if (!(err instanceof DomainError) || err.status >= 500) throw err;
      return html(reply, 409, messagePage(refused.title, refused.words(err.kind)));
    }
    if (result === null) return html(reply, 404, messagePage(notFound, 'Go back to your card page.'));
    return reply
      .status(303)
      .headers(SECURITY_HEADERS)
      .header('location', `/page?done=${done(result)}`)
      .send();
  }

  app.post<{ Params: { cardId: string; purchaseId: string } }>(
    '/page/cards/:cardId/purchases/:purchaseId/dispute',
    { schema: { hide: true } },
    async (req, reply) => {
      const gated = await formGate(req, reply);
      if (!gated) return reply;
      const { cardId, purchaseId } = req.params;
      const freeze = (req.body as URLSearchParams).get('freeze') === 'on';
      return pageChange(
        reply,
        async () =>
          isIdText(cardId) && isIdText(purchaseId)
            ? reportOnPage({ svc, session: gated.session, cardId, input: { purchaseId, freeze }, host: req.hostname })
            : null,
        {
          title: 'The purchase was not reported',
          words: (kind) =>
            kind === 'disputeOpen'
              ? 'This purchase is already reported.'
              : kind === 'disputeDeadline'
                ? 'This purchase is too old to be disputed. Contact your card provider.'
                : 'This purchase cannot be disputed. Contact your card provider.',
        },
        'Purchase not found',
        (r) => (r.frozen ? 'reported-frozen' : 'reported'),
      );
    },
  );

  for (const [action, frozen] of [
    ['freeze', true],
    ['unfreeze', false],
  ] as const) {
    app.post<{ Params: { cardId: string } }>(`/page/cards/:cardId/${action}`, { schema: { hide: true } }, async (req, reply) => {
      const gated = await formGate(req, reply);
      if (!gated) return reply;
      const { cardId } = req.params;
      return pageChange(
        reply,
        async () => (isIdText(cardId) ? setFrozenOnPage({ svc, session: gated.session, cardId, frozen, host: req.hostname }) : null),
        {
          title: 'The card was not changed',
          words: (kind) =>
            kind === 'holderNotApproved'
              ? 'Your card can be unfrozen once your identity check is approved.'
              : kind === 'statusSource'
                ? 'Your card was frozen by your card provider; only they can unfreeze it.'
                : 'This card cannot be changed now.',
        },
        'Card not found',
        () => (frozen ? 'frozen' : 'unfrozen'),
      );
    });
  }
};
