// The API reference at /docs in a real browser (Debian's Chromium, as test/page.browser.test.ts):
// it renders the operations, the signing explanation and the example bodies from the service's own
// assets, and asks nothing of another origin.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { chromium } from 'playwright-core';
import { build } from './helpers/app.js';
import { ARTIFACTS, CHROMIUM, FLAGS, listenOnLoopback, skip } from './helpers/browser.js';
import { eachDialect } from './helpers/dialects.js';

eachDialect('the API reference in a real browser (Chromium)', (dialect) => {
  it('renders every operation, the signing and an example body; nothing from another origin, nothing the CSP refuses', {
    skip,
  }, async (t) => {
    const h = await build(t, dialect);
    const origin = await listenOnLoopback(h.app);

    const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
    t.after(() => browser.close());
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    const elsewhere: string[] = [];
    const refused: string[] = [];
    const errors: string[] = [];
    page.on('request', (req) => {
      const url = req.url();
      if (!url.startsWith(`${origin}/`) && !url.startsWith('data:') && !url.startsWith('blob:')) elsewhere.push(url);
    });
    page.on('console', (msg) => {
      if (/Content Security Policy|Refused to/i.test(msg.text())) refused.push(msg.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));

    const res = await page.goto(`${origin}/docs`);
    assert.equal(res?.status(), 200);
    await page.getByText('Signing every request').first().waitFor({ timeout: 30_000 });
    assert.equal(await page.title(), 'cardprogram API reference');
    for (const summary of ['Create a cardholder (interface 4.2)', 'Authorize a card payment']) {
      await page.getByText(summary, { exact: false }).first().waitFor({ timeout: 15_000 });
    }
    assert.ok(await page.getByText('/api/network/networkAuthTradeList.html').count(), 'paths are shown');
    // An operation's example body (src/docs/examples.ts), in its request example, ready to copy.
    await page.getByText('Query a card, its balances, its spending controls and what its limits have left').first().click();
    await page
      .getByText(/card_7Hq2Lm8Np4Rt6Vb1Cd3Fg5Hj/)
      .first()
      .waitFor({ timeout: 15_000 });
    assert.equal(await page.getByText('Swagger').count(), 0);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, `api-reference-${dialect.name}.png`) });
    assert.deepEqual(elsewhere, [], 'no request to another origin');
    assert.deepEqual(refused, [], 'nothing the CSP forbids');
    assert.deepEqual(errors, []);
  });
});
