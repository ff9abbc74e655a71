import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { ARTIFACTS, browserPage, listenOnLoopback, skip } from './helpers/browser.js';
import { fundedCard, ok } from './helpers/cards.js';
import { buildConsole, loginInBrowser, makeOperator } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';

/**
 * The console's 3-D Secure (decisions §14.6, issue 41 item 5): a card's page lists its
 * authentications (outcome, reason, method, merchant, amount, the authorization that used the
 * value), the overview counts today's by outcome and the refusals by reason. In Chromium, with
 * screenshots kept in test-artifacts/.
 */
eachDialect('the console’s 3-D Secure in a real browser (Chromium)', (dialect) => {
  it('a card’s authentications on its page, today’s counts on the overview', { skip }, async (t) => {
    const h = await buildConsole(t, dialect);
    const base = await listenOnLoopback(h.app);
    h.app.svc.config.publicUrl = base;
    const { cardId } = await fundedCard(h, { topUp: 500 });
    // Two frictionless authentications (the low-value exemption), one used by an authorization; then a
    // refused one (the card frozen: N/12) and one the merchant has no way to challenge (N/13).
    const first = (await ok(h, '/sandbox/3ds/authenticate', { cardId, amount: 12.5, merchantName: 'Fahrrad Haus' })).ares;
    assert.equal(first.transStatus, 'Y');
    const paid = await ok(h, '/sandbox/network/authorize', {
      cardId,
      amount: 12.5,
      channel: 'ecommerce',
      eci: first.eci,
      authenticationValue: first.authenticationValue,
    });
    // The console's clock stands still unless moved: a second between them orders them.
    h.advance(1000);
    await ok(h, '/sandbox/3ds/authenticate', { cardId, amount: 4, merchantName: 'Café Central' });
    h.advance(1000);
    const challenged = (await ok(h, '/sandbox/3ds/authenticate', { cardId, amount: 80, merchantName: 'Möbel Haus' })).ares;
    assert.deepEqual([challenged.transStatus, challenged.transStatusReason], ['N', '13'], 'no notify URL: no way to the cardholder');
    await ok(h, '/api/network/cardFreeze.html', { cardId });
    h.advance(1000);
    const refused = (await ok(h, '/sandbox/3ds/authenticate', { cardId, amount: 5, merchantName: 'Kiosk' })).ares;
    assert.deepEqual([refused.transStatus, refused.transStatusReason], ['N', '12']);

    const op = await makeOperator(h, 'ada@example.com', 'viewer');
    const { page } = await browserPage(t, { viewport: { width: 1280, height: 900 } });
    mkdirSync(ARTIFACTS, { recursive: true });
    await loginInBrowser(h, page, base, op);

    // The overview: today's authentications by outcome, the refusals by reason.
    const section = page.locator('h2', { hasText: '3-D Secure' });
    await section.waitFor();
    const tile = (label: string) => page.locator('.tile', { hasText: label });
    assert.match((await tile('Authentications today').textContent()) ?? '', /4/);
    assert.match((await tile('Authenticated (Y)').textContent()) ?? '', /2/);
    assert.match((await tile('Refused (N, R)').textContent()) ?? '', /2/);
    const body = (await page.textContent('main')) ?? '';
    assert.match(body, /N \/ 12/);
    assert.match(body, /N \/ 13/);
    await page.screenshot({ path: join(ARTIFACTS, 'console-3ds-overview.png'), fullPage: true });

    // The card's page: its authentications, newest first.
    await page.goto(`${base}/console/cards/${cardId}`);
    await page.getByRole('heading', { name: 'Authentications (3-D Secure)' }).waitFor();
    const rows = page.locator('table', { hasText: 'The last 20 authentications' }).locator('tbody tr');
    assert.equal(await rows.count(), 4);
    const texts = await rows.allTextContents();
    assert.match(texts[0] ?? '', /N refused.*12.*Kiosk.*5\.00 EUR/s);
    assert.match(texts[1] ?? '', /N refused.*13.*Möbel Haus.*80\.00 EUR/s);
    assert.match(texts[2] ?? '', /Y authenticated.*exemption.*Café Central.*4\.00 EUR/s);
    assert.match(texts[3] ?? '', new RegExp(`Y authenticated.*exemption.*Fahrrad Haus.*12\\.50 EUR.*${paid.tradeId}`, 's'));
    await page.screenshot({ path: join(ARTIFACTS, 'console-3ds-card.png'), fullPage: true });
  });
});
