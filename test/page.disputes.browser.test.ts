// "I don't recognise this" on the card page in a real browser (Chromium), by keyboard: the disclosure
// opens, the freeze is ticked, the report posts the form; the purchase then shows its dispute, and
// the card is frozen. Screenshot: docs/images/card-page-dispute.png (copied from test-artifacts).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { build, randomStr } from './helpers/app.js';
import { ARTIFACTS, browserPage, listenOnLoopback, skip } from './helpers/browser.js';
import { balances, fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

eachDialect('the card page’s “I don’t recognise this” in a real browser (Chromium)', (dialect) => {
  it('reports a purchase and freezes the card by keyboard; the purchase shows its dispute', { skip }, async (t) => {
    const h = await build(t, dialect);
    const base = await listenOnLoopback(h.app);
    h.app.svc.config.publicUrl = base;
    await h.db.database.db.updateTable('merchants').set({ name: 'Northwind Wallet' }).execute();
    const { cardId } = await fundedCard(h, { topUp: 250 });
    const pay = async (amount: number, remark: string) => {
      const auth = await ok(h, '/sandbox/network/authorize', { cardId, amount, remark });
      await ok(h, '/sandbox/network/clear', { tradeId: auth.tradeId });
      return auth.tradeId as string;
    };
    await pay(18.4, 'Bookshop Lindqvist');
    const strange = await pay(79.99, 'GADGETS-ONLINE-8812');
    await ok(h, '/sandbox/network/authorize', { cardId, amount: 62.99, remark: 'Rail ticket' });
    const link = await h.call('/open/merchant/api/v2', { email: 'alice@example.com' });

    const { page, cspErrors } = await browserPage(t, { viewport: { width: 1100, height: 900 } });
    await page.goto(link.body.model.webUrl);
    const row = page.locator('tbody tr', { hasText: 'GADGETS-ONLINE-8812' });
    // Only the cleared purchases offer it, not the pending one.
    assert.equal(await page.locator('tbody tr', { hasText: 'Rail ticket' }).locator('summary').count(), 0);
    assert.equal(await page.locator('summary', { hasText: 'I don’t recognise this' }).count(), 2);
    const button = row.getByRole('button', { name: 'Report this purchase' });
    assert.equal(await button.isVisible(), false, 'behind the disclosure: one click reports nothing');
    // By keyboard: focus the disclosure, open it, tick the freeze, send.
    await row.locator('summary').focus();
    await page.keyboard.press('Enter');
    await button.waitFor({ state: 'visible' });
    await row.getByLabel('Also freeze the card now').focus();
    await page.keyboard.press('Space');
    assert.ok(await row.getByLabel('Also freeze the card now').isChecked());
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'card-page-dispute.png'), fullPage: true });
    await button.focus();
    await Promise.all([page.waitForURL(`${base}/page?done=reported-frozen`), page.keyboard.press('Enter')]);
    assert.match((await page.getByRole('status').textContent()) ?? '', /reported, and your card is frozen/);
    assert.match(
      (await page.locator('tbody tr', { hasText: 'GADGETS-ONLINE-8812' }).textContent()) ?? '',
      /Reported: your card provider is looking into it/,
    );
    assert.equal(await page.locator('tbody tr', { hasText: 'GADGETS-ONLINE-8812' }).locator('summary').count(), 0);
    assert.ok(await page.getByRole('button', { name: 'Unfreeze card' }).isVisible(), 'frozen by the cardholder: it may unfreeze it');
    assert.equal((await balances(h, cardId)).status, 'frozen');
    const declined = await h.call('/sandbox/network/authorize', { cardId, amount: 1, randomStr: randomStr() });
    assert.equal(declined.body.code, '2724');
    // The merchant finds the dispute on the purchase's clearing.
    const disputes = await h.call('/api/network/disputeList.html', { start: 0, randomStr: randomStr() });
    assert.equal(disputes.body.model.total, 1);
    const d = disputes.body.model.disputes[0];
    assert.deepEqual([d.reason, d.status, d.amount], ['fraudulent', 'unsubmitted', 79.99]);
    const payment = await h.db.database.db.selectFrom('disputes').select('trade_id').executeTakeFirstOrThrow();
    assert.notEqual(payment.trade_id, strange, 'the clearing is disputed, not the hold');
    assert.deepEqual(cspErrors, [], 'the page needs nothing the CSP forbids');
  });
});
