import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { listDomains, removeDomain } from '../domains/store.js';
import { fundingBalances, fundMerchant } from '../ledger/funding.js';
import { fundingStatement } from '../ledger/statement.js';
import { listMerchants, merchantSummary, updateMerchant } from '../merchants/manage.js';
import { CARD_CURRENCIES } from '../money/currency.js';
import { runVerb } from '../runner.js';
import * as pages from './pages.js';
import { type ConsoleKit, clean, isIdText, text } from './routes-kit.js';

/** The console's merchants, their funding and its statement, their status and domains (src/console/routes.ts registers it with the shared kit, ./routes-kit.ts). */
export function merchantsRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { html, redirect, audit, session, post, change, svc } = kit;
  app.get('/console/merchants', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    return html(
      reply,
      200,
      pages.merchantsPage({ ...frame, current: '/console/merchants' }, await svc.database.read((db) => listMerchants(db))),
    );
  });

  app.get<{ Params: { id: string } }>('/console/merchants/:id', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    return svc.database.read(async (db) => {
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
          actor: kit.operatorOf(req, frame.session),
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
      () =>
        runVerb(svc, fundMerchant, {
          input,
          actor: kit.operatorOf(req, frame.session),
          audit: audit(req, frame.session, 'merchant.fund', appId),
        }),
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
    const mapped = await svc.database.read((db) =>
      db.selectFrom('merchant_domains').select('merchant_id').where('host', '=', host).executeTakeFirst(),
    );
    if (!mapped || mapped.merchant_id !== appId)
      return html(reply, 404, pages.notFoundPage(frame, 'That host is not mapped to this merchant.', back));
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, removeDomain, {
          input: { host },
          actor: kit.operatorOf(req, frame.session),
          audit: audit(req, frame.session, 'domain.remove', host),
        }),
      back,
    );
    if (done !== null) svc.domains.forget();
    return done === null ? reply : redirect(reply, `${back}?done=domain-removed`);
  });
}
