import assert from 'node:assert/strict';
import { it } from 'node:test';
import { type IsoMessage, message } from '../src/iso8583/codec.js';
import { balances, fundedCard } from './helpers/cards.js';
import { buildConsole, type ConsoleHarness, consoleGet, login, makeOperator } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer, trace } from './helpers/link.js';

/**
 * Forced posts marked (issue 43, item 2): after an authorization cleared twice (the second a forced
 * post), a clearing with no authorization and a hold still open, the console's card page marks the
 * forced lines, shows the hold as cleared (naming the payments that consumed it, not a forced post
 * that found it cleared already) or held, each payment the hold it cleared (or "no hold (already
 * cleared by …)"), and its signed amounts sum to what the card's balance moved, not more;
 * the cardholder's card page names each clearing and marks the forced ones.
 */
const f90 = (m: IsoMessage) =>
  `${m.mti}${m.fields.get(11)}${m.fields.get(7)}${(m.fields.get(32) as string).padStart(11, '0')}${'0'.repeat(11)}`;

const text = (html: string) =>
  html
    .replace(/<br>/g, ' | ')
    .replace(/<[^>]+>/g, '')
    .replace(/&#(\d+);/g, (_x, c) => String.fromCharCode(Number(c)))
    .replace(/\s+/g, ' ')
    .trim();

/** The console card page's transaction rows: cells as text. */
async function consoleRows(h: ConsoleHarness, cookie: { cookie: string; csrf: string }, cardId: string) {
  const page = await consoleGet(h, cookie, `/console/cards/${cardId}`);
  assert.equal(page.statusCode, 200);
  const table = /<caption>[^<]*the transaction list of interface 4\.1[^<]*<\/caption>.*?<tbody>(.*?)<\/tbody>/s.exec(page.body)?.[1] ?? '';
  return [...table.matchAll(/<tr>(.*?)<\/tr>/g)].map((r) =>
    [...(r[1] ?? '').matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((c) => text(c[1] ?? '')),
  );
}

eachDialect('statement: forced posts marked, holds held then cleared (issue 43)', (dialect) => {
  it('console and card page: forced marked, the hold cleared by its payments, the signed column sums to what moved', async (t) => {
    const h = await buildConsole(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const card = await cardSecrets(h, cardId);
    const peer = await Peer.open(t, (await linkOf(t, h)).port);
    const auth = authorizationRequest(card, { amount: 4250 });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    const clearing = () => message('0220', { 3: '000000', 4: '000000004250', ...trace(), 32: '12345678', 49: '978', 90: f90(auth) });
    assert.equal((await peer.ask(clearing())).fields.get(39), '00');
    // The same clearing again under another identity: nothing is held any more, a forced post.
    assert.equal((await peer.ask(clearing())).fields.get(39), '00');
    const alone = message('0220', {
      2: card.pan,
      3: '000000',
      4: '000000000300',
      ...trace(),
      32: '12345678',
      43: `${'Kiosk'.padEnd(38)}DE`,
      49: '978',
    });
    assert.equal((await peer.ask(alone)).fields.get(39), '00');
    assert.equal((await peer.ask(authorizationRequest(card, { amount: 500 }))).fields.get(39), '00');
    const b = await balances(h, cardId);
    assert.deepEqual(b, { available: 7, ledger: 12, status: 'active' });

    const messages = await h.db.database.db
      .selectFrom('network_messages')
      .select(['mti', 'stan', 'trade_id'])
      .orderBy('created_at')
      .execute();
    const [authId, p1, p2, p3, openId] = messages.map((m) => m.trade_id as string);

    const op = await makeOperator(h, 'support@example.test', 'viewer');
    const rows = await consoleRows(h, await login(h, op), cardId);
    const row = (id: string | undefined) => rows.find((r) => r[1] === id) as string[];
    // [day, id, type, status, description, amount]
    assert.deepEqual(row(authId).slice(2), [
      'Authorization (hold)',
      'Cleared',
      // The forced post found nothing held: it did not consume the hold (issue 43c).
      `Corner Grocery, Berlin | hold consumed by ${p1}`,
      '(42.50 EUR)',
    ]);
    assert.deepEqual(row(p1).slice(2), ['Payment (cleared)', 'Done', `Corner Grocery, Berlin | clears hold ${authId}`, '−42.50 EUR']);
    assert.deepEqual(row(p2).slice(2), [
      'Payment (cleared) forced post',
      'Done',
      `Corner Grocery, Berlin | no hold (already cleared by ${p1})`,
      '−42.50 EUR',
    ]);
    assert.deepEqual(row(p3).slice(2), [
      'Payment (cleared) forced post',
      'Done',
      'Kiosk | no hold: cleared without an authorization',
      '−3.00 EUR',
    ]);
    assert.deepEqual(row(openId).slice(2), ['Authorization (hold)', 'Held', 'Corner Grocery, Berlin', '−5.00 EUR']);
    // The signed amounts sum to what the card's available balance moved: 100 in, 93 out; not 135.50.
    const signed = rows
      .map((r) => r[5] ?? '')
      .filter((a) => /^[+−]/.test(a))
      .reduce((s, a) => s + (a.startsWith('+') ? 1 : -1) * Number.parseFloat(a.slice(1)), 0);
    assert.equal(Math.round(signed * 100), b.available * 100);

    // The cardholder's card page: one line for the purchase, each clearing named, the forced one marked.
    const link = await h.call('/open/merchant/api/v2', { email: 'alice@example.com' });
    const url = new URL(link.body.model.webUrl);
    const opened = await h.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
    const cookie = String(opened.headers['set-cookie']).split(';')[0] ?? '';
    const page = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } });
    const lines = [...page.body.matchAll(/<tr><td>[^<]*<\/td><td>(.*?)<\/td><td class="amt">(.*?)<\/td><\/tr>/g)].map(
      (m) => `${text((m[1] ?? '').replace(/<details class="report">.*?<\/details>/g, ''))} = ${text(m[2] ?? '')}`,
    );
    const purchase = lines.find((l) => l.includes('Cleared 1 of 2'));
    assert.ok(purchase, lines.join('\n'));
    assert.match(
      purchase,
      /Cleared 1 of 2: 42\.50 EUR on \d{4}-\d\d-\d\d \| Cleared 2 of 2: 42\.50 EUR on \d{4}-\d\d-\d\d \(a forced post/,
    );
    assert.match(purchase, /= −85\.00 EUR$/);
    assert.ok(
      lines.some((l) =>
        /^Kiosk \| Card payment · Posted \| A forced post: the card network charged it without an authorization = −3\.00 EUR$/.test(l),
      ),
      lines.join('\n'),
    );
  });
});
