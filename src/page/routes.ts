import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Services } from '../context.js';
import { Envelope, errorResponses, ok, SignedFields } from '../http/schemas.js';
import { holderView } from './holder-view.js';
import { issueLink, loadSession, openLink, RateLimited, SESSION_IDLE_MS } from './links.js';
import { holderPage, messagePage, productPage, STYLE_HASH } from './view.js';

const LinkBody = Type.Object(
  {
    ...SignedFields,
    email: Type.Optional(
      Type.String({
        maxLength: 64,
        pattern:
          "^$|^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$",
        description: 'must be the user’s e-mail address (at most 64 characters)',
      }),
    ),
  },
  { additionalProperties: false },
);

const SECURITY_HEADERS = {
  // No script at all; only our own stylesheet (by hash); nothing may frame the page.
  'content-security-policy': `default-src 'none'; style-src ${STYLE_HASH}; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};

function cookieName(req: FastifyRequest): string {
  // On HTTPS the __Host- prefix pins the cookie to this exact host, path / and Secure.
  return req.protocol === 'https' ? '__Host-cp_session' : 'cp_session';
}

function readCookie(req: FastifyRequest, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
}

function html(reply: FastifyReply, status: number, body: string) {
  return reply.status(status).headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(body);
}

export const pageRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/open/merchant/api/v2',
    {
      schema: {
        tags: ['Login-free page'],
        summary: 'A one-time address of the login-free card page (interface 4.4)',
        description:
          'email (optional, ≤ 64), appId (≤ 32), sign (≤ 512). The webUrl opens the page once, within 10 minutes. Needs the login-free permission (2605 otherwise); at most 10 links a minute per e-mail (1009).',
        body: LinkBody,
        response: { 200: Envelope(Type.Object({ webUrl: Type.String() })), ...errorResponses },
      },
      config: { operation: 'loginFreeLink' },
    },
    async (req, reply) => {
      const email = req.body.email ? req.body.email.toLowerCase() : null;
      try {
        const token = await issueLink({ svc, merchant: req.merchant, email });
        return ok({ webUrl: `${svc.config.publicUrl}/page/open?token=${token}` }, req.id);
      } catch (err) {
        if (err instanceof RateLimited) reply.header('retry-after', String(err.retryAfterSeconds));
        throw err;
      }
    },
  );

  app.get('/page/open', { schema: { hide: true } }, async (req, reply) => {
    const token = (req.query as { token?: unknown }).token;
    const sessionId = typeof token === 'string' ? await openLink({ svc, token }) : null;
    if (!sessionId) {
      return html(
        reply,
        410,
        messagePage(
          'Link expired or already used',
          'This link can be opened once, within 10 minutes. Open the card page again from the app.',
        ),
      );
    }
    const secure = req.protocol === 'https';
    const cookie = `${cookieName(req)}=${sessionId}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${SESSION_IDLE_MS / 1000}${secure ? '; Secure' : ''}`;
    // The token leaves the address bar (and history) at once.
    return reply.status(303).headers(SECURITY_HEADERS).header('set-cookie', cookie).header('location', '/page').send();
  });

  app.get('/page', { schema: { hide: true } }, async (req, reply) => {
    const session = await loadSession({ svc, sessionId: readCookie(req, cookieName(req)) });
    if (!session) return html(reply, 401, messagePage('Your session has ended', 'Open the card page again from the app.'));
    if (session.email === null) return html(reply, 200, productPage());
    return html(reply, 200, holderPage(await holderView(svc, session.merchantId, session.email), session.email));
  });
};
