import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Compile } from 'typebox/compile';
import type { Services, Verb, VerbCtx } from '../context.js';
import { DomainError } from '../errors.js';
import { htmlScope } from '../http/html-pages.js';
import { runVerb } from '../runner.js';
import {
  type ChallengeStep,
  cancelChallenge,
  challengeRow,
  cresOf,
  enterOtp,
  attemptsLeft as leftOf,
  openChallenge,
  pageToken,
  pageTokenMatches,
  pollChallenge,
  resendOtp,
  resendsLeft,
} from './challenge.js';
import { cresPage, errorPage, formatAmount, type Language, languageOf, newNonce, oobPage, otpPage } from './challenge-page.js';
import { CReqSchema } from './emv-messages.js';
import { sandboxDsResult } from './sandbox.js';
import type { AuthenticationRow } from './store.js';

const checkCReq = Compile(CReqSchema);
const UUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;
/** EMVCo: threeDSSessionData is Base64url, at most 1024 characters. */
const SESSION_DATA = /^[A-Za-z0-9_=-]{1,1024}$/;
const MAX_CREQ = 4096;

/** An origin of an http(s) URL, for the CSP's form-action; null: not one. */
function originOf(url: string): string | null {
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.origin : null;
  } catch {
    return null;
  }
}

/**
 * The challenge page's headers (decisions §14.4): nothing from elsewhere (its style and its one
 * script by the answer's nonce), forms post back here (and the CRes to the 3DS Server's
 * notificationURL), and any page may frame it: it runs inside the 3DS Server's iframe on the
 * shop's page (https pages only in production). Nothing is cached, no referrer leaves it.
 */
function headers(svc: Services, nonce: string, formTo: string | null): Record<string, string> {
  const ancestors = svc.config.env === 'production' ? 'https:' : '*';
  return {
    'content-security-policy': `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src data:; form-action 'self'${formTo ? ` ${formTo}` : ''}; frame-ancestors ${ancestors}; base-uri 'none'`,
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'cross-origin-resource-policy': 'cross-origin',
  };
}

/** The browser's side of the challenge: the CReq, the code, a new code, cancel, the out-of-band wait; and the sandbox's 3DS Server receiving the CRes. */
export const challengeRoutes: FastifyPluginAsync<{ svc: Services }> = async (app, { svc }) => {
  const send = (reply: FastifyReply, status: number, body: string, formTo: string | null = null) => {
    const nonce = /nonce="([^"]+)"/.exec(body)?.[1] ?? newNonce();
    return reply
      .status(status)
      .headers(headers(svc, nonce, formTo))
      .type('text/html; charset=utf-8')
      .send(body);
  };
  htmlScope(app, svc, {
    send: (reply, status, body) => send(reply, status, body),
    bodyLimit: 8192,
    unavailable: errorPage({ lang: 'en', nonce: newNonce(), what: 'busy' }),
    failed: (serverError) => errorPage({ lang: 'en', nonce: newNonce(), what: serverError ? 'busy' : 'unknown' }),
    what: '3-D Secure challenge',
  });

  const acceptLanguage = (req: FastifyRequest) => {
    const h = req.headers['accept-language'];
    return typeof h === 'string' ? h.slice(0, 200) : undefined;
  };
  const langOf = (req: FastifyRequest, row?: AuthenticationRow): Language => {
    let browserLanguage: string | undefined;
    if (row?.browser) {
      try {
        const b = JSON.parse(row.browser) as { browserLanguage?: unknown };
        if (typeof b.browserLanguage === 'string') browserLanguage = b.browserLanguage;
      } catch {
        browserLanguage = undefined;
      }
    }
    return languageOf(browserLanguage, acceptLanguage(req));
  };
  const fail = (req: FastifyRequest, reply: FastifyReply, status: number, what: 'spent' | 'unknown', row?: AuthenticationRow) =>
    send(reply, status, errorPage({ lang: langOf(req, row), windowSize: row?.challenge_window_size ?? '05', nonce: newNonce(), what }));
  const formOf = (req: FastifyRequest) => (req.body instanceof URLSearchParams ? req.body : null);

  /** The page for where a challenge stands after a step. */
  async function render(req: FastifyRequest, reply: FastifyReply, step: ChallengeStep) {
    const row = step.row;
    const lang = langOf(req, row);
    const windowSize = row.challenge_window_size ?? '05';
    const nonce = newNonce();
    if (step.kind === 'done') {
      const to = row.notification_url ? originOf(row.notification_url) : null;
      if (!row.notification_url || !to) return fail(req, reply, 409, 'spent', row);
      const page = cresPage({
        lang,
        windowSize,
        nonce,
        notificationURL: row.notification_url,
        cres: cresOf(row),
        sessionData: row.session_data,
      });
      return send(reply, 200, page, to);
    }
    const token = await svc.database.read((db) => pageToken(svc, db, row.acs_trans_id));
    const view = {
      lang,
      windowSize,
      nonce,
      acsTransID: row.acs_trans_id,
      token,
      purchase: {
        merchantName: row.merchant_name,
        amount: formatAmount(lang, row.amount === null ? null : Number(row.amount), row.exponent, row.currency),
        cardNo: row.pan_masked,
      },
      attemptsLeft: leftOf(row),
      resendsLeft: resendsLeft(row),
      ...(step.notice ? { notice: step.notice } : {}),
    };
    return send(reply, 200, row.challenge_method === 'oob' ? oobPage(view) : otpPage(view));
  }

  /** Runs a step of the page's own forms: the authentication and its token checked first (403 otherwise). */
  async function step(
    req: FastifyRequest,
    reply: FastifyReply,
    fields: { acsTransID: string | null; token: string | null } | null,
    verb: Verb<{ acsTransID: string; code: string }, ChallengeStep, VerbCtx>,
    code = '',
  ) {
    const id = fields?.acsTransID ?? '';
    if (!UUID.test(id) || !(await svc.database.read((db) => pageTokenMatches(svc, db, id, fields?.token)))) {
      return fail(req, reply, 403, 'unknown');
    }
    try {
      return await render(
        req,
        reply,
        await runVerb(svc, verb, { input: { acsTransID: id, code }, actor: { kind: 'cardholder', via: 'page', host: req.hostname } }),
      );
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      const row = await svc.database.read((db) => challengeRow(db, id));
      // The page's own browser, one step late (a second click after the end): the end again, nothing changes.
      if (row?.challenge_state === 'done') return render(req, reply, { kind: 'done', row });
      return fail(req, reply, 409, 'spent', row);
    }
  }
  const fieldsOf = (req: FastifyRequest) => {
    const form = formOf(req);
    return form ? { acsTransID: form.get('acsTransID'), token: form.get('token') } : null;
  };

  app.post('/3ds/challenge', { schema: { hide: true } }, async (req, reply) => {
    const form = formOf(req);
    const text = form?.get('creq') ?? '';
    const sessionData = form?.get('threeDSSessionData') ?? null;
    if (text.length === 0 || text.length > MAX_CREQ || !/^[A-Za-z0-9_-]+={0,2}$/.test(text)) return fail(req, reply, 400, 'unknown');
    if (sessionData !== null && !SESSION_DATA.test(sessionData)) return fail(req, reply, 400, 'unknown');
    let creq: unknown;
    try {
      creq = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    } catch {
      return fail(req, reply, 400, 'unknown');
    }
    if (!checkCReq.Check(creq)) return fail(req, reply, 400, 'unknown');
    try {
      const row = await runVerb(svc, openChallenge, {
        input: { creq, sessionData },
        actor: { kind: 'cardholder', via: 'page', host: req.hostname },
      });
      return await render(req, reply, { kind: 'open', row });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      const row = await svc.database.read((db) => challengeRow(db, creq.acsTransID));
      return fail(
        req,
        reply,
        err.kind === 'authenticationNotFound' ? 404 : 409,
        err.kind === 'authenticationNotFound' ? 'unknown' : 'spent',
        row,
      );
    }
  });

  app.post('/3ds/challenge/otp', { schema: { hide: true } }, async (req, reply) => {
    const code = formOf(req)?.get('code') ?? '';
    return step(req, reply, fieldsOf(req), enterOtp, code.slice(0, 32));
  });
  app.post('/3ds/challenge/resend', { schema: { hide: true } }, async (req, reply) => step(req, reply, fieldsOf(req), resendOtp));
  app.post('/3ds/challenge/cancel', { schema: { hide: true } }, async (req, reply) => step(req, reply, fieldsOf(req), cancelChallenge));
  app.post('/3ds/challenge/status', { schema: { hide: true } }, async (req, reply) => step(req, reply, fieldsOf(req), pollChallenge));
  // The out-of-band page's meta refresh (a GET: no script needed); the token is never logged (src/http/logged-url.ts).
  app.get('/3ds/challenge/status', { schema: { hide: true } }, async (req, reply) => {
    const q = req.query as Record<string, unknown>;
    const str = (v: unknown) => (typeof v === 'string' ? v : null);
    return step(req, reply, { acsTransID: str(q.acsTransID), token: str(q.token) }, pollChallenge);
  });

  if (svc.config.env === 'sandbox') {
    // The sandbox's AReqs name this as their notificationURL: it plays the 3DS Server receiving the CRes.
    app.post('/sandbox/3ds/notification', { schema: { hide: true } }, async (req, reply) => {
      const text = formOf(req)?.get('cres') ?? '';
      let cres: Record<string, unknown> | null = null;
      try {
        const parsed: unknown = JSON.parse(Buffer.from(text.slice(0, MAX_CREQ), 'base64url').toString('utf8'));
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) cres = parsed as Record<string, unknown>;
      } catch {
        cres = null;
      }
      if (!cres || cres.messageType !== 'CRes') return fail(req, reply, 400, 'unknown');
      const status = String(cres.transStatus ?? '');
      const acsTransId = String(cres.acsTransID ?? '');
      const nonce = newNonce();
      const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
      // What the sandbox's DS handed on from the RReq of this challenge (./sandbox.ts): the eci and, for Y, the value.
      const ds = UUID.test(acsTransId) ? await svc.database.read((db) => sandboxDsResult(svc, db, acsTransId)) : null;
      const dsPart =
        ds === null
          ? ''
          : `<p>eci <code id="eci">${esc(ds.eci ?? '')}</code>${ds.authenticationValue ? `, authenticationValue <code id="authentication-value">${esc(ds.authenticationValue)}</code> (for the authorization, once)` : ''}.</p>`;
      const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>CRes received</title><style nonce="${nonce}">body{font:15px system-ui,sans-serif;margin:16px}</style></head><body><main><h1>The sandbox’s 3DS Server received the CRes</h1><p role="status">transStatus <strong id="trans-status">${esc(status)}</strong> for acsTransID <code>${esc(acsTransId)}</code>.</p>${dsPart}</main></body></html>`;
      return send(reply, 200, body);
    });
  }
};
