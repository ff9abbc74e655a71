import assert from 'node:assert/strict';
import { it } from 'node:test';
import { build, type Harness, randomStr } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

// The card page's activity (src/page/activity.ts, docs/login-free-page.md): each purchase once.
const N = '/sandbox/network';

async function signIn(h: Harness) {
  const res = await h.call('/open/merchant/api/v2', { email: 'alice@example.com' });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const url = new URL(res.body.model.webUrl);
  const opened = await h.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
  return String(opened.headers['set-cookie']).split(';')[0] ?? '';
}

/** The page's lines as text: date, description (title · kind · state · notes), amount. */
async function lines(h: Harness, cookie: string, query = '') {
  const res = await h.app.inject({ method: 'GET', url: `/page${query}`, headers: { cookie } });
  assert.equal(res.statusCode, 200);
  const body = res.body;
  const rows = [...body.matchAll(/<tr><td>([^<]*)<\/td><td>(.*?)<\/td><td class="amt">(.*?)<\/td><\/tr>/g)].map((m) => {
    const text = (html: string) =>
      html
        // A line's words without its "I don't recognise this" form (test/page.disputes.test.ts tests it).
        .replace(/<details class="report">.*?<\/details>/g, '')
        .replace(/<br>/g, ' | ')
        .replace(/<[^>]+>/g, '')
        .replace(/&#(\d+);/g, (_x, c) => String.fromCharCode(Number(c)));
    return `${text(m[2] ?? '')} = ${text(m[3] ?? '')}`;
  });
  const older = /href="\/page\?card=[^&]+&amp;older=([^"#]+)#/.exec(body)?.[1];
  return { rows, older, body };
}

eachDialect('card page: each purchase once', (dialect) => {
  it('hold, clearing, reversal, void, refund and decline: one line per purchase, pending then posted, signs as a bank shows them', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const cookie = await signIn(h);
    const acceptor = { merchantName: 'Café Central', merchantCity: 'Vienna', merchantCountry: 'AT', mcc: '5814', channel: 'pos' };

    // A hold is one pending line, money out.
    const coffee = await ok(h, `${N}/authorize`, { cardId, amount: 4.2, ...acceptor });
    assert.deepEqual((await lines(h, cookie)).rows, [
      'Café Central | Card payment · Pending | Vienna, AT = −4.20 EUR',
      'Top-up | Top-up · Posted = +100.00 EUR',
    ]);
    // Cleared: the same line, posted.
    await ok(h, `${N}/clear`, { tradeId: coffee.tradeId });
    assert.deepEqual((await lines(h, cookie)).rows[0], 'Café Central | Card payment · Posted | Vienna, AT = −4.20 EUR');

    // A partial clearing posts what was paid and says the rest was released.
    const hotel = await ok(h, `${N}/authorize`, { cardId, amount: 50, remark: 'Hotel Sacher' });
    await ok(h, `${N}/clear`, { tradeId: hotel.tradeId, amount: 42.5 });
    // A partial reversal leaves it pending with less; a full one cancels it.
    const fuel = await ok(h, `${N}/authorize`, { cardId, amount: 30, remark: 'Fuel' });
    await ok(h, `${N}/reverse`, { tradeId: fuel.tradeId, amount: 10 });
    const taxi = await ok(h, `${N}/authorize`, { cardId, amount: 12, remark: 'Taxi' });
    await ok(h, `${N}/reverse`, { tradeId: taxi.tradeId });
    const tickets = await ok(h, `${N}/authorize`, { cardId, amount: 8, remark: 'Tickets' });
    await ok(h, `${N}/void`, { tradeId: tickets.tradeId });
    // A refund is told on its purchase.
    const shoes = await ok(h, `${N}/authorize`, { cardId, amount: 20, remark: 'Shoes' });
    const paid = await ok(h, `${N}/clear`, { tradeId: shoes.tradeId });
    await ok(h, `${N}/refund`, { tradeId: paid.tradeId, amount: 5 });
    // A decline is shown, with its reason in words, and takes nothing.
    const declined = await h.call(`${N}/authorize`, { cardId, amount: 500, merchantName: 'Jeweller', randomStr: randomStr() });
    assert.equal(declined.body.code, '2725');

    const today = new Date().toISOString().slice(0, 10);
    const { rows, body } = await lines(h, cookie);
    assert.deepEqual(rows, [
      'Jeweller | Card payment · Declined | Declined: not enough money on the card = 500.00 EUR',
      `Shoes | Card payment · Posted | Refunded 5.00 EUR on ${today} = −15.00 EUR`,
      'Tickets | Card payment · Cancelled = 8.00 EUR',
      'Taxi | Card payment · Reversed = 12.00 EUR',
      'Fuel | Card payment · Pending | 10.00 EUR of the hold released = −20.00 EUR',
      'Hotel Sacher | Card payment · Posted | 7.50 EUR of the hold released = −42.50 EUR',
      'Café Central | Card payment · Posted | Vienna, AT = −4.20 EUR',
      'Top-up | Top-up · Posted = +100.00 EUR',
    ]);
    assert.match(body, /<s aria-label="Declined, nothing taken">500\.00 EUR<\/s>/);
    // The lines add up to the balance: 100 − 15 − 20 − 42.50 − 4.20 = 18.30 available.
    const card = await h.call('/api/network/cardQuery.html', { cardId, randomStr: randomStr() });
    assert.equal(card.body.model.availableBalance, 18.3);

    // The merchant's 4.1 list is unchanged: records, not purchases.
    const list = await h.call('/api/network/networkAuthTradeList.html', {
      cardId,
      beginDate: today,
      endDate: today,
      start: 0,
      maxSize: 30,
      tradeStatusList: [1, 2, 3, 6, 7, 10],
      randomStr: randomStr(),
    });
    assert.equal(list.body.total, 14, 'a top-up, 6 authorizations (one voided), 3 payments, 2 reversal records, a void record, a refund');
  });

  it('fees are folded into their purchase; transfers, withdrawals and fees have their own signed lines', async (t) => {
    const h = await build(t, dialect);
    // The other card's holder first: the page shows the newest cardholder of the e-mail.
    const other = await fundedCard(h, { topUp: 0 });
    const { cardId } = await fundedCard(h, { topUp: 60 });
    const cookie = await signIn(h);
    await ok(h, `${N}/withdraw`, { cardId, amount: 10, remark: 'ATM Hauptbahnhof' });
    await ok(h, `${N}/transfer`, { cardId, toCardId: other.cardId, amount: 5, remark: 'To Bob' });
    await ok(h, `${N}/fee`, { cardId, amount: 1.5, remark: 'Card fee' });
    await ok(h, `${N}/balanceInquiry`, { cardId });
    // Paid in dollars: the 1.5 % FX fee (DEFAULT_FEES) is part of what the purchase cost.
    const fx = await ok(h, `${N}/authorize`, { cardId, amount: 10, currencyTxn: 'USD', remark: 'Diner' });
    await ok(h, `${N}/clear`, { tradeId: fx.tradeId });
    const { rows } = await lines(h, cookie);
    assert.deepEqual(
      rows,
      [
        'Diner | Card payment · Posted | Includes a 0.15 EUR fee = −10.15 EUR',
        'Card fee | Fee · Posted = −1.50 EUR',
        'To Bob | Transfer out · Posted = −5.00 EUR',
        'ATM Hauptbahnhof | Cash withdrawal · Posted | Includes a 2.00 EUR fee = −12.00 EUR',
        'Top-up | Top-up · Posted = +60.00 EUR',
      ],
      'a balance inquiry moves no money and is not shown',
    );
    // The lines add up to what is available: 60 − 12 − 5 − 1.50 − 10.15.
    const card = await h.call('/api/network/cardQuery.html', { cardId, randomStr: randomStr() });
    assert.equal(card.body.model.availableBalance, 31.35);
  });

  it('paging: ten lines a page by position, a purchase’s records never split across pages, declines merged in order', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 1000 });
    const cookie = await signIn(h);
    // 24 purchases on consecutive days (oldest first), each cleared the next day (its payment
    // record dated later than the hold), and a decline on every fifth day.
    const day = (n: number) => new Date(Date.now() - (30 - n) * 86_400_000).toISOString().slice(0, 10);
    for (let i = 0; i < 24; i++) {
      const a = await ok(h, `${N}/authorize`, { cardId, amount: i + 1, remark: `Shop ${i}`, businessDate: day(i) });
      await ok(h, `${N}/clear`, { tradeId: a.tradeId, businessDate: day(i + 1) });
      if (i % 5 === 0) {
        const d = await h.call(`${N}/authorize`, {
          cardId,
          amount: 5000,
          remark: `Declined ${i}`,
          businessDate: day(i),
          randomStr: randomStr(),
        });
        assert.equal(d.body.code, '2725');
      }
    }
    const seen: string[] = [];
    let query = '';
    for (let pages = 0; pages < 10; pages++) {
      const page = await lines(h, cookie, query);
      assert.ok(page.rows.length <= 10);
      seen.push(...page.rows);
      if (!page.older) break;
      query = `?card=${cardId}&older=${page.older}`;
    }
    const titles = seen.map((r) => r.split(' | ')[0]);
    const expected = [
      'Top-up',
      ...Array.from({ length: 24 }, (_x, i) => 23 - i).flatMap((i) => (i % 5 === 0 ? [`Shop ${i}`, `Declined ${i}`] : [`Shop ${i}`])),
    ];
    // Same day: the decline was written after the purchase, so it comes first (newest first).
    const sameDay = expected.map((x, k) => (x.startsWith('Declined') ? [k - 1, k] : null)).filter(Boolean) as number[][];
    for (const [a, b] of sameDay)
      [expected[a as number], expected[b as number]] = [expected[b as number] as string, expected[a as number] as string];
    assert.deepEqual(titles, expected, 'every line once, in order, across pages');
    assert.ok(
      seen.every((r) => !r.startsWith('Shop') || r.includes('Posted')),
      'each purchase is posted, on one line',
    );
    // A malformed cursor shows the newest page; another card's id shows nothing of it.
    for (const q of [
      '?card=x&older=T2026-01-01.5',
      `?card=${cardId}&older=garbage`,
      `?card=${cardId}&older=${'T2026-01-01.1~'.repeat(20)}`,
    ]) {
      const r = await lines(h, cookie, q);
      assert.equal(r.rows[0]?.split(' | ')[0], 'Top-up', q);
      assert.equal(r.rows.length, 10, q);
    }
  });
});
