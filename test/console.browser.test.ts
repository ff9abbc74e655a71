import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import type http from 'node:http';
import { join } from 'node:path';
import { it } from 'node:test';
import type { Page } from 'playwright-core';
import { CallbackWorker } from '../src/callbacks/worker.js';
import { createOperator } from '../src/console/accounts.js';
import { codeAt, stepOf } from '../src/console/totp.js';
import { updateMerchant } from '../src/merchants/manage.js';
import { runVerb } from '../src/runner.js';
import { b64, holderBody, randomStr } from './helpers/app.js';
import { ARTIFACTS, browserPage, listenOnLoopback, skip } from './helpers/browser.js';
import { fundedCard, ok } from './helpers/cards.js';
import { buildConsole, loginInBrowser, makeOperator } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';
import { receiver } from './helpers/receiver.js';

eachDialect('the operators’ console in a real browser (Chromium)', (dialect) => {
  it('sets up an admin, logs in with TOTP, approves a cardholder, finds and freezes a card, resends a failed callback; the trail shows it all; a viewer is refused', {
    skip,
  }, async (t) => {
    const h = await buildConsole(t, dialect, {
      callbacks: { worker: false, retryScheduleMs: [20], maxAgeMs: 400, timeoutMs: 500, pollMs: 20 },
    });
    const base = await listenOnLoopback(h.app);
    h.app.svc.config.publicUrl = base;
    const db = h.db.database.db;

    // A program with a little life in it: a funded card with purchases and declines, a cardholder
    // waiting for review, and callbacks its merchant's receiver refused.
    await db.updateTable('merchants').set({ name: 'Northwind Wallet' }).execute();
    const rx = await receiver(t, h.merchant.webhookSecret);
    rx.respond(...Array.from({ length: 200 }, () => (res: http.ServerResponse) => res.writeHead(503).end('maintenance')));
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, notifyUrl: rx.url }, actor: 'test' });
    const { cardId, cardNo } = await fundedCard(h, { topUp: 500 });
    for (const [amount, remark] of [
      [18.4, 'Bookshop Lindqvist'],
      [4.2, 'Café Central'],
      [62.99, 'Rail ticket'],
    ] as const) {
      const auth = await ok(h, '/sandbox/network/authorize', { cardId, amount, remark });
      await ok(h, '/sandbox/network/clear', { tradeId: auth.tradeId });
    }
    for (const amount of [900, 1200]) await h.call('/sandbox/network/authorize', { cardId, amount, randomStr: randomStr() });
    const details = (await h.call('/sandbox/network/cardDetails', { cardId, randomStr: randomStr() })).body.model;
    const waiting = await h.call(
      '/api/network/holderCreate.html',
      holderBody({ email: 'maria.garcia@example.com', firstName: b64('Maria'), lastName: b64('Garcia') }),
    );
    const worker = new CallbackWorker(h.app.svc);
    for (
      let i = 0;
      i < 200 && (await db.selectFrom('callback_events').select('id').where('status', '=', 'pending').execute()).length > 0;
      i++
    ) {
      h.advance(100);
      await worker.pass();
    }
    const failed = await db.selectFrom('callback_events').selectAll().where('status', '=', 'failed').orderBy('created_at').execute();
    assert.ok(failed.length > 0, 'some callbacks failed');
    rx.reset(); // the receiver is back: 200 from now on

    // The admin's account, as `cardprogram operator create ada@example.com --role admin` makes it.
    const made = await runVerb(h.app.svc, createOperator, { input: { email: 'ada@example.com', role: 'admin' }, actor: 'test' });

    const { browser, context, page, cspErrors } = await browserPage(t, { viewport: { width: 1280, height: 860 } });
    mkdirSync(ARTIFACTS, { recursive: true });
    const shot = (p: Page, name: string) => p.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    const code = () => codeAt(secret, stepOf(h.now.ms));

    // Set-up: a password and the authenticator key shown on the page.
    await page.goto(`${base}/console/setup?token=${made.setupToken}`);
    const secret = ((await page.getByLabel('Key').textContent()) ?? '').replace(/\s/g, '');
    assert.match(secret, /^[A-Z2-7]{32}$/);
    await page.getByLabel('New password').fill('correct horse battery staple');
    await page.getByLabel('The same again').fill('correct horse battery staple');
    await page.getByLabel('The code the app shows now').fill(code());
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: 'Your account is ready' }).waitFor();

    // Log in with the password and the next code.
    await page.getByRole('link', { name: 'Log in' }).click();
    h.advance();
    await page.getByLabel('E-mail').fill('ada@example.com');
    await page.getByLabel('Password').fill('correct horse battery staple');
    await page.getByLabel(/One-time code/).fill(code());
    await Promise.all([page.waitForURL(`${base}/console`), page.getByRole('button', { name: 'Log in' }).click()]);
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'cp_console');
    assert.ok(session?.httpOnly && session.sameSite === 'Strict', 'HttpOnly, SameSite=Strict');
    assert.match((await page.getByRole('heading', { level: 1 }).textContent()) ?? '', /^Today, \d{4}-\d\d-\d\d$/);
    const tiles = (await page.locator('.tile').allTextContents()).join(' | ');
    assert.match(tiles, /Authorizations approved3/);
    assert.match(tiles, /Authorizations declined2/);
    assert.match(tiles, /Approved volume85\.59 EUR/);
    assert.match(tiles, /Cardholders waiting for review1/);
    // The card network link (no link in this test): nothing forced, no debt, no connection.
    assert.match(tiles, /Forced posts today0 \| Card debt0 cards · 0\.00 EUR0 cards · 0\.00 USDT \| Connections \(this instance\)0/);
    assert.ok(await page.getByRole('img', { name: /Authorizations per hour today: 5 in all/ }).isVisible(), 'the chart');
    await shot(page, 'console-overview');

    // The review queue: approve the waiting cardholder.
    await page.getByRole('link', { name: 'Reviews' }).click();
    await shot(page, 'console-reviews');
    await page.getByRole('link', { name: 'Maria Garcia' }).click();
    assert.match((await page.locator('dl.kv').textContent()) ?? '', /maria\.garcia@example\.com/);
    await page.getByRole('button', { name: 'Approve' }).click();
    assert.match((await page.getByRole('status').textContent()) ?? '', /review was recorded/);
    const approved = await db
      .selectFrom('cardholders')
      .select('audit_status')
      .where('id', '=', waiting.body.holderId)
      .executeTakeFirstOrThrow();
    assert.equal(approved.audit_status, 2);

    // The merchant issues the approved cardholder a card; the operator finds it by BIN and last four and freezes it.
    const issued = await h.call('/api/network/cardApply.html', {
      holderId: waiting.body.holderId,
      currency: 'EUR',
      randomStr: randomStr(),
    });
    assert.equal(issued.status, 200, JSON.stringify(issued.body));
    const mariaCard: string = issued.body.model.cardId;
    const mariaNo: string = issued.body.model.cardNo;
    await page.getByRole('link', { name: 'Search' }).click();
    await page.getByLabel('Find').fill(`${mariaNo.slice(0, 6)} ${mariaNo.slice(-4)}`);
    // One match: the card's page opens at once.
    await Promise.all([page.waitForURL(`${base}/console/cards/${mariaCard}`), page.getByRole('button', { name: 'Search' }).click()]);
    assert.match((await page.getByRole('heading', { level: 1 }).textContent()) ?? '', new RegExp(`Card ${mariaNo.replace(/\*/g, '\\*')}`));
    assert.match((await page.locator('dl.kv').textContent()) ?? '', /Maria Garcia/);
    await page.getByLabel('Reason').first().fill('reported stolen by phone');
    await page.getByRole('button', { name: 'Freeze card' }).click();
    assert.match((await page.getByRole('status').textContent()) ?? '', /frozen by the operator/);
    const frozen = await db.selectFrom('cards').select(['status', 'status_source']).where('id', '=', mariaCard).executeTakeFirstOrThrow();
    assert.deepEqual(frozen, { status: 'frozen', status_source: 'operator' });
    assert.equal((await h.call('/sandbox/network/authorize', { cardId: mariaCard, amount: 1, randomStr: randomStr() })).body.code, '2724');
    // The busier card's page, for the docs.
    await page.goto(`${base}/console/cards/${cardId}`);
    assert.match((await page.getByRole('heading', { level: 1 }).textContent()) ?? '', new RegExp(`Card ${cardNo.replace(/\*/g, '\\*')}`));
    await shot(page, 'console-card');

    // The failed callbacks: resend one from its page.
    await page.getByRole('link', { name: 'Callbacks' }).click();
    await page.getByLabel('Show').selectOption('failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await shot(page, 'console-callbacks');
    const one = failed[0] as (typeof failed)[number];
    await page.getByRole('link', { name: one.id }).click();
    assert.match((await page.locator('table').textContent()) ?? '', /503/);
    await page.getByRole('button', { name: 'Resend now' }).click();
    assert.match((await page.getByRole('status').textContent()) ?? '', /queued for delivery/);
    await worker.pass();
    assert.ok(
      rx.received.some((r) => r.body.eventId === one.id && r.verified),
      'delivered, signed, once resent',
    );

    // The audit trail shows each action, by whom and from where.
    await page.getByRole('link', { name: 'Audit trail' }).click();
    const trail = (await page.locator('tbody').textContent()) ?? '';
    for (const action of ['operator.setup', 'operator.login', 'holder.view', 'holder.review', 'card.freeze', 'callbacks.retry']) {
      assert.ok(trail.includes(action), `the trail shows ${action}`);
    }
    assert.ok(trail.includes('ada@example.com') && trail.includes('127.0.0.1'));
    await shot(page, 'console-audit');

    // The merchant page (admin: disable, fund, domains).
    await page.getByRole('link', { name: 'Merchants' }).click();
    await page.getByRole('link', { name: 'Northwind Wallet' }).click();
    await shot(page, 'console-merchant');
    for (const p of [page]) {
      const html = await p.content();
      assert.ok(!html.includes(details.cardNo) && !html.includes(`>${details.cvv}<`), 'no full card number or CVV');
    }
    assert.deepEqual(cspErrors, [], 'the console needs nothing the CSP forbids');

    // A viewer, in another browser: the card page offers no change, and the operators page is refused.
    const viewer = await makeOperator(h, 'vic@example.com', 'viewer');
    const other = await (await browser.newContext()).newPage();
    await loginInBrowser(h, other, base, viewer);
    assert.equal(await other.getByRole('link', { name: 'Operators' }).count(), 0, 'not in the viewer’s navigation');
    await other.goto(`${base}/console/cards/${cardId}`);
    assert.equal(await other.getByRole('button', { name: /Unfreeze card|Close card/ }).count(), 0);
    const auditBefore = await db.selectFrom('audit_events').select('id').execute();
    const refused = await other.goto(`${base}/console/operators`);
    assert.equal(refused?.status(), 403);
    assert.match((await other.textContent('main')) ?? '', /Your role, viewer, may not manage operators/);
    assert.equal((await db.selectFrom('audit_events').select('id').execute()).length, auditBefore.length, 'nothing written');
  });
});
