import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { type IsoMessage, message } from '../src/iso8583/codec.js';
import { ARTIFACTS, browserPage, listenOnLoopback, skip } from './helpers/browser.js';
import { fundedCard } from './helpers/cards.js';
import { buildConsole, loginInBrowser, makeOperator } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer, trace } from './helpers/link.js';

/**
 * Issue 43 in Chromium, screenshots kept (test-artifacts/): the overview's link panel gives each
 * response code its meaning (the CLI's table), the card debt as an amount with its currency, and the
 * day's clearing and settlement (item 12); the card page reads as a statement, a forced post marked,
 * the hold cleared by its payments or still held (item 2).
 */
const f90 = (m: IsoMessage) =>
  `${m.mti}${m.fields.get(11)}${m.fields.get(7)}${(m.fields.get(32) as string).padStart(11, '0')}${'0'.repeat(11)}`;

eachDialect('the console’s link panel and statement in Chromium (issue 43)', (dialect) => {
  it('response codes with their meanings, the debt as an amount, the day’s settlement; the card page’s forced marks', {
    skip,
  }, async (t) => {
    const h = await buildConsole(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const card = await cardSecrets(h, cardId);
    const peer = await Peer.open(t, (await linkOf(t, h)).port);
    assert.equal((await peer.ask(message('0800', { 7: '1125171500', 11: '000001', 70: '001' }))).fields.get(39), '00');
    const auth = authorizationRequest(card, { amount: 4250 });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    assert.equal((await peer.ask(authorizationRequest(card, { amount: 100_000 }))).fields.get(39), '51');
    const clearing = () => message('0220', { 3: '000000', 4: '000000004250', ...trace(), 32: '12345678', 49: '978', 90: f90(auth) });
    assert.equal((await peer.ask(clearing())).fields.get(39), '00');
    assert.equal((await peer.ask(clearing())).fields.get(39), '00', 'the second: a forced post');
    assert.equal((await peer.ask(authorizationRequest(card, { amount: 500 }))).fields.get(39), '00');

    const base = await listenOnLoopback(h.app);
    const op = await makeOperator(h, 'olga@example.com', 'viewer');
    const { page, cspErrors } = await browserPage(t, { viewport: { width: 1280, height: 900 } });
    mkdirSync(ARTIFACTS, { recursive: true });
    await loginInBrowser(h, page, base, op);

    const tiles = (await page.locator('.tile').allTextContents()).join(' | ');
    assert.match(tiles, /Card debt0 cards · 0\.00 EUR0 cards · 0\.00 USDT/, 'an amount with its currency');
    const answers = page.getByRole('table', { name: /Answers this instance sent/ });
    const answerRows = (await answers.locator('tbody tr').allInnerTexts()).map((r) => r.split('\t').join(' | '));
    assert.deepEqual(answerRows, [
      '0110 | 00 | approved | 2',
      '0110 | 51 | insufficient funds | 1',
      '0230 | 00 | approved | 2',
      '0810 | 00 | approved | 1',
    ]);
    const settled = page.getByRole('table', { name: /Clearing and settlement of \d{4}-\d\d-\d\d/ });
    const head = (await settled.locator('thead th').allInnerTexts()).join(' | ');
    assert.equal(
      head,
      'Currency | Cleared | Refunded | Reversed | Disputes won | Disputes lost | Exceptions held | Exceptions returned | Net owed to the network',
    );
    const eur = (await settled.locator('tbody tr').allInnerTexts()).map((r) => r.split('\t').join(' | '));
    assert.deepEqual(eur, ['EUR | 85.00 EUR (2) | 0.00 EUR | 0.00 EUR | 0.00 EUR | 0.00 EUR | 0.00 EUR | 0.00 EUR | 85.00 EUR']);
    // It fits its box at 1280 px: "Net owed to the network" is not behind a horizontal scrollbar.
    const fits = await settled.evaluate((t) => {
      const box = t.parentElement as { clientWidth: number; scrollWidth: number };
      return { table: t.scrollWidth, box: box.clientWidth, boxScroll: box.scrollWidth };
    });
    assert.ok(fits.boxScroll <= fits.box && fits.table <= fits.box, JSON.stringify(fits));
    await page.getByRole('heading', { name: 'Card network link' }).scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(ARTIFACTS, 'console-link-panel.png'), fullPage: true });

    await page.goto(`${base}/console/cards/${cardId}`);
    const statement = page.getByRole('table', { name: /the transaction list of interface 4\.1/ });
    const rows = (await statement.locator('tbody tr').allInnerTexts()).map((r) => r.split('\t').slice(2).join(' | ').replace(/\n/g, ' / '));
    assert.ok(
      rows.some((r) => /^Authorization \(hold\) \| Held \| Corner Grocery, Berlin \| −5\.00 EUR$/.test(r)),
      rows.join('\n'),
    );
    assert.ok(
      rows.some((r) =>
        /^Authorization \(hold\) \| Cleared \| Corner Grocery, Berlin \/ hold consumed by trd_\w+ \| \(42\.50 EUR\)$/.test(r),
      ),
      rows.join('\n'),
    );
    assert.equal(
      rows.filter((r) =>
        /^Payment \(cleared\) forced post \| Done \| Corner Grocery, Berlin \/ no hold \(already cleared by trd_\w+\) \| −42\.50 EUR$/.test(
          r,
        ),
      ).length,
      1,
    );
    assert.equal(
      rows.filter((r) => /^Payment \(cleared\) \| Done \| Corner Grocery, Berlin \/ clears hold trd_\w+ \| −42\.50 EUR$/.test(r)).length,
      1,
    );
    assert.ok(await page.locator('.pill', { hasText: 'forced post' }).isVisible(), 'the mark is shown');
    await page.getByRole('heading', { name: 'Transactions' }).scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(ARTIFACTS, 'console-card-statement.png'), fullPage: true });
    assert.deepEqual(cspErrors, []);
  });
});
