// The console's disputes queue and a dispute's page in a real browser (Chromium): the queue by
// deadline, the page with its evidence and history, an evidence file downloaded, an outcome recorded.
// Screenshots: docs/images/console-disputes.png and console-dispute.png (copied from test-artifacts).
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import type { Page } from 'playwright-core';
import { updateMerchant } from '../src/merchants/manage.js';
import { runVerb } from '../src/runner.js';
import { ARTIFACTS, browserPage, listenOnLoopback, skip } from './helpers/browser.js';
import { ok } from './helpers/cards.js';
import { buildConsole, loginInBrowser, makeOperator } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';
import { clearedPurchase, disputeOk, file, pdf, png } from './helpers/disputes.js';

const DAY = 86_400_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

eachDialect('the console’s disputes in a real browser (Chromium)', (dialect) => {
  it('queues disputes by deadline, opens one with its evidence and history, downloads a file, records the outcome', { skip }, async (t) => {
    const h = await buildConsole(t, dialect);
    const base = await listenOnLoopback(h.app);
    h.app.svc.config.publicUrl = base;
    const db = h.db.database.db;
    await db.updateTable('merchants').set({ name: 'Northwind Wallet' }).execute();
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, disputeProvisionalCredit: true }, actor: 'test' });
    const now = h.now.ms;
    const purchases: Array<[number, number, string]> = [
      [112, 49.9, 'Electro Discount'],
      [80, 18.4, 'Bookshop Lindqvist'],
      [30, 120, 'Hotel Aurora'],
      [3, 62.99, 'Rail ticket'],
    ];
    const made: string[] = [];
    let cardId: string | undefined;
    for (const [ago, amount, remark] of purchases) {
      const p = await clearedPurchase(h, { topUp: 500, amount, businessDate: dayOf(now - ago * DAY), ...(cardId ? { cardId } : {}) });
      cardId = p.cardId;
      await db
        .updateTable('authorizations')
        .set({ merchant_name: remark, merchant_city: 'Berlin', merchant_country: 'DE' })
        .where('id', '=', p.authId)
        .execute();
      const reason = ago === 30 ? 'not_received' : ago === 3 ? 'duplicate' : 'fraudulent';
      const d = await disputeOk(h, 'create', {
        tradeId: p.tradeId,
        reason,
        explanation: ago === 30 ? 'The room was never provided; the hotel was closed.' : 'The cardholder does not recognise this purchase.',
        evidence:
          ago === 30
            ? [file('booking-confirmation.pdf', 'application/pdf', pdf(2000)), file('closed-sign.png', 'image/png', png(64, 48))]
            : [],
      });
      made.push(d.disputeId);
    }
    await disputeOk(h, 'submit', { disputeId: made[2] });
    await ok(h, '/api/network/cardTopUp.html', { cardId, amount: 10 });
    const admin = await makeOperator(h, 'ada@example.com', 'admin');

    const { page, cspErrors } = await browserPage(t, { viewport: { width: 1280, height: 860 }, acceptDownloads: true });
    mkdirSync(ARTIFACTS, { recursive: true });
    const shot = (p: Page, name: string) => p.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

    await loginInBrowser(h, page, base, admin);
    assert.match((await page.locator('.tile').allTextContents()).join(' | '), /Disputes open4/);

    // The queue, from the navigation: the nearest deadline first.
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Disputes' }).click();
    await page.getByRole('heading', { name: 'Disputes', level: 1 }).waitFor();
    const firstCells = await page.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.querySelectorAll('td')[2]?.textContent));
    assert.deepEqual(firstCells, made);
    assert.match((await page.locator('tbody tr').first().textContent()) ?? '', /8 days/);
    await shot(page, 'console-disputes');
    await page.getByLabel('Status').selectOption('submitted');
    await page.getByRole('button', { name: 'Filter' }).click();
    assert.equal(await page.locator('tbody tr').count(), 1);

    // The submitted dispute's page: transaction, evidence, history, the outcome's forms.
    await page.getByRole('link', { name: made[2] as string }).click();
    await page.getByRole('heading', { name: `Dispute ${made[2]}` }).waitFor();
    const facts = (await page.locator('dl.kv').textContent()) ?? '';
    assert.match(facts, /Hotel Aurora/);
    assert.match(facts, /120\.00 EUR/);
    assert.ok(await page.getByRole('link', { name: /\*{6}/ }).isVisible(), 'the card, masked, linked');
    assert.match((await page.locator('table').last().textContent()) ?? '', /provisional credit/);
    await shot(page, 'console-dispute');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'booking-confirmation.pdf' }).click(),
    ]);
    assert.equal(download.suggestedFilename(), 'booking-confirmation.pdf');
    assert.deepEqual(readFileSync((await download.path()) as string), pdf(2000));

    // Won in full: the network pays the merchant's funding back (it advanced the provisional credit).
    await page.getByLabel(`Amount paid back (EUR)`).fill('120.00');
    await page.locator('#won-confirm').check();
    await page.getByRole('button', { name: 'Record as won' }).click();
    assert.match((await page.getByRole('status').textContent()) ?? '', /recorded as won/);
    assert.match((await page.locator('table').last().textContent()) ?? '', /Won: credit from the network/);
    const row = await db
      .selectFrom('disputes')
      .select(['status', 'decided_by'])
      .where('id', '=', made[2] as string)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { status: 'won', decided_by: 'ada@example.com' });
    await page.getByRole('link', { name: 'Audit trail' }).click();
    const trail = (await page.locator('tbody').textContent()) ?? '';
    for (const action of ['dispute.view', 'dispute.evidence', 'dispute.outcome']) assert.ok(trail.includes(action), action);
    assert.deepEqual(cspErrors, [], 'the pages need nothing the CSP forbids');
  });
});
