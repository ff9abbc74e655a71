import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { build, randomStr } from './helpers/app.js';
import { ARTIFACTS, browserPage, listenOnLoopback, skip } from './helpers/browser.js';
import { balances, fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

eachDialect('the card page in a real browser (Chromium)', (dialect) => {
  it('opens the link, shows the card and transactions, reveals details by keyboard, freezes the card; the link works once', {
    skip,
  }, async (t) => {
    const h = await build(t, dialect);
    const base = await listenOnLoopback(h.app);
    h.app.svc.config.publicUrl = base;

    await h.db.database.db.updateTable('merchants').set({ name: 'Northwind Wallet' }).execute();
    const { cardId, cardNo } = await fundedCard(h, { topUp: 250 });
    const pay = async (amount: number, remark: string) => {
      const auth = await ok(h, '/sandbox/network/authorize', { cardId, amount, remark });
      await ok(h, '/sandbox/network/clear', { tradeId: auth.tradeId });
    };
    await pay(18.4, 'Bookshop Lindqvist');
    await pay(4.2, 'Café Central');
    await ok(h, '/sandbox/network/authorize', { cardId, amount: 62.99, remark: 'Rail ticket' });
    const details = (await h.call('/sandbox/network/cardDetails', { cardId, randomStr: randomStr() })).body.model;
    const link = await h.call('/open/merchant/api/v2', { email: 'alice@example.com' });
    const webUrl: string = link.body.model.webUrl;
    assert.ok(webUrl.startsWith(`${base}/page/open?token=`));

    const { browser, page, cspErrors } = await browserPage(t, { viewport: { width: 1100, height: 900 } });

    const landed = await page.goto(webUrl);
    assert.equal(landed?.status(), 200);
    assert.equal(new URL(page.url()).pathname, '/page', 'the token is gone from the address bar');
    assert.equal(new URL(page.url()).search, '');
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Alice Schmidt');
    assert.equal(await page.locator('header .brand').textContent(), 'Northwind Wallet', 'the merchant’s name');
    const card = page.getByRole('region', { name: `EUR card ending ${cardNo.slice(-4)}` });
    assert.ok(((await card.textContent()) ?? '').includes(cardNo.replace(/(.{4})/g, '$1 ').trim()), 'the masked number');
    assert.ok(!(await page.content()).includes(details.cardNo), 'masked until revealed');
    assert.match((await card.textContent()) ?? '', /Available\s*164\.41 EUR/);
    const rows = page.locator('tbody tr');
    assert.deepEqual(
      // Each line's text without its "I don't recognise this" disclosure (test/page.disputes.browser.test.ts).
      (
        await rows.evaluateAll((trs) =>
          trs.map((tr) => {
            const copy = tr.cloneNode(true) as typeof tr;
            for (const d of copy.querySelectorAll('details')) d.remove();
            return copy.textContent ?? '';
          }),
        )
      ).map((r) => r.replace(/^\d{4}-\d\d-\d\d/, '')),
      [
        'Rail ticketCard payment · Pending−62.99 EUR',
        'Café CentralCard payment · Posted−4.20 EUR',
        'Bookshop LindqvistCard payment · Posted−18.40 EUR',
        'Top-upTop-up · Posted+250.00 EUR',
      ],
    );
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'card-page.png'), fullPage: true });

    // Keyboard: focus reaches the button and Enter presses it.
    const reveal = page.getByRole('button', { name: 'Show card details' });
    await reveal.focus();
    assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Show card details');
    await Promise.all([page.waitForURL(/\/page\/cards\/.*\/reveal$/), page.keyboard.press('Enter')]);
    const shown = (await page.getByRole('region', { name: `EUR card ending ${cardNo.slice(-4)}` }).textContent()) ?? '';
    assert.ok(shown.includes(details.cardNo.replace(/(.{4})/g, '$1 ').trim()), 'the full number');
    assert.ok(shown.includes(details.expiry) && shown.includes(details.cvv), 'expiry and CVV');
    assert.match((await page.locator('meta[http-equiv="refresh"]').getAttribute('content')) ?? '', /^30;url=\/page$/);
    const revealsRecorded = await h.db.database.db.selectFrom('card_reveals').select('card_id').execute();
    assert.deepEqual(revealsRecorded, [{ card_id: cardId }]);
    await page.getByRole('link', { name: 'Hide card details' }).click();
    await page.waitForURL(`${base}/page`);
    assert.ok(!(await page.content()).includes(details.cardNo), 'hidden again');

    // Freeze: the card declines until it is unfrozen.
    await Promise.all([page.waitForURL(`${base}/page?done=frozen`), page.getByRole('button', { name: 'Freeze card' }).click()]);
    assert.match((await page.getByRole('status').textContent()) ?? '', /Your card is frozen/);
    assert.match((await page.getByRole('region', { name: /EUR card ending/ }).textContent()) ?? '', /Frozen/);
    assert.equal((await balances(h, cardId)).status, 'frozen');
    const declined = await h.call('/sandbox/network/authorize', { cardId, amount: 1, randomStr: randomStr() });
    assert.equal(declined.body.code, '2724');
    assert.equal(await page.getByRole('button', { name: 'Show card details' }).count(), 0);
    await page.getByRole('button', { name: 'Unfreeze card' }).focus();

    // Small screens: one column, nothing wider than the viewport.
    await page.setViewportSize({ width: 375, height: 800 });
    assert.ok(await page.evaluate('document.documentElement.scrollWidth <= 375'), 'no horizontal scroll at 375 px');
    await page.screenshot({ path: join(ARTIFACTS, 'card-page-mobile.png'), fullPage: true });
    assert.deepEqual(cspErrors, [], 'the page needs nothing the CSP forbids');

    // A second open of the same link, in a fresh browser profile: refused, no data.
    const stranger = await (await browser.newContext()).newPage();
    const second = await stranger.goto(webUrl);
    assert.equal(second?.status(), 410);
    assert.match((await stranger.textContent('h1')) ?? '', /Link expired or already used/);
    assert.doesNotMatch(await stranger.content(), /Alice|Schmidt|424242/);

    // The API reference renders in the browser from the service's own assets and document.
    const docs = await (await browser.newContext()).newPage();
    const docsErrors: string[] = [];
    docs.on('pageerror', (e) => docsErrors.push(e.message));
    await docs.goto(`${base}/docs/`);
    await docs.getByText('Create a cardholder (interface 4.2)').first().waitFor({ timeout: 15_000 });
    assert.ok(await docs.getByText('/api/network/networkAuthTradeList.html').first().isVisible());
    assert.deepEqual(docsErrors, []);
  });
});
