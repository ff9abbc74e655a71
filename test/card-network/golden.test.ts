import assert from 'node:assert/strict';
import { it } from 'node:test';
import { settlement } from '../../src/card-network/settlement.js';
import { decode, type IsoMessage } from '../../src/iso8583/codec.js';
import { checkLedger } from '../../src/ledger/check.js';
import { AUTH_CODE, GOLDEN, type Golden, PLACEHOLDER } from '../fixtures/iso8583-golden.js';
import { build } from '../helpers/app.js';
import { balances, fundedCard } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { cardSecrets, linkOf, Peer } from '../helpers/link.js';

/**
 * Golden frames for every message class of decisions §12.4 (issue 28, "Done when"): each request of
 * test/fixtures/iso8583-golden.ts is written literally to a real socket of the real app (the card's
 * PAN, expiry and CVV2 put in place of the placeholders), and its answer is checked byte for byte
 * (field 38 aside, drawn at random: its format) and field by field.
 */

const hexOf = (b: Uint8Array) => Buffer.from(b).toString('hex').toUpperCase();
const hexAscii = (s: string) => hexOf(Buffer.from(s, 'latin1'));

type Card = { pan: string; expiry: string; cvv: string };

/** The template with the card's data at the placeholders' places (each at most once, of the same length). */
function forCard(template: string, card: Card): string {
  let out = template;
  const swaps: Array<[string, string]> = [
    [PLACEHOLDER.pan, card.pan],
    [PLACEHOLDER.expiry, card.expiry],
    // Field 48: LLL 007, tag 92, length 03, the CVV2.
    [`0079203${PLACEHOLDER.cvv}`, `0079203${card.cvv}`],
  ];
  for (const [from, to] of swaps) {
    assert.equal(from.length, to.length, 'the card data fits the template');
    const at = out.indexOf(hexAscii(from));
    if (at < 0) continue;
    assert.equal(out.indexOf(hexAscii(from), at + 1), -1, `${from} once in the template`);
    out = `${out.slice(0, at)}${hexAscii(to)}${out.slice(at + from.length * 2)}`;
  }
  return out;
}

/** An answer as decoded, and its frame (hex) as it came. */
type Answered = IsoMessage & { wire: string };

/** A frame received, as hex with its 2-byte length. */
const wireOf = (body: Buffer) => `${hexOf(Buffer.from([body.length >> 8, body.length & 0xff]))}${hexOf(body)}`;

/**
 * Sends a golden request and checks its answer: the MTI, the bitmap, every field (those echoed equal
 * to the request's), and the exact bytes but field 38's. Returns the answer.
 */
async function exchange(peer: Peer, golden: Golden, card: Card): Promise<Answered> {
  const request = forCard(golden.request, card);
  const sent = decode(Buffer.from(request, 'hex').subarray(2));
  if (sent.fields.has(2)) assert.equal(sent.fields.get(2), card.pan, 'the template carries the card');
  peer.writeRaw(Buffer.from(request, 'hex'));
  const body = await peer.next();
  const wire = wireOf(body);
  const answer = decode(body);
  const got = Object.fromEntries(answer.fields) as Record<number, string>;
  const label = `${golden.mti} to STAN ${sent.fields.get(11)}: ${JSON.stringify(got)}`;
  assert.equal(answer.mti, golden.mti, label);
  // The primary bitmap (and the secondary when field 1 says so), characters 6–21 (and 22–37) of the frame.
  const bitmaps = (hex: string) => Buffer.from(hex.slice(12, 12 + (Number.parseInt(hex.slice(12, 14), 16) & 0x80 ? 64 : 32)), 'hex');
  assert.equal(bitmaps(wire).toString('latin1'), bitmaps(golden.answer).toString('latin1'), `bitmap of ${label}`);
  if (golden.fields[38] !== undefined) assert.match(got[38] ?? '', /^\d{6}$/, `field 38 of ${label}`);
  assert.deepEqual({ ...got, ...(got[38] === undefined ? {} : { 38: AUTH_CODE }) }, golden.fields, label);
  for (const [n, v] of answer.fields) {
    if (n !== 38 && n !== 39 && n !== 54) assert.equal(v, sent.fields.get(n), `field ${n} echoed in ${label}`);
  }
  for (const n of [2, 14, 48]) assert.equal(answer.fields.get(n), undefined, `field ${n} never in an answer`);
  const expected = got[38] === undefined ? golden.answer : golden.answer.replace(hexAscii(AUTH_CODE), hexAscii(got[38]));
  assert.equal(wire, expected, `the bytes of ${label}`);
  return { ...answer, wire };
}

/**
 * A repeat MTI (decisions §12.6): the golden request's frame with only its MTI (bytes 2–5) changed;
 * its answer must be the first's, byte for byte, field 38 included.
 */
async function repeat(peer: Peer, golden: Golden, card: Card, mti: string, first: Answered): Promise<void> {
  const request = forCard(golden.request, card);
  peer.writeRaw(Buffer.from(`${request.slice(0, 4)}${hexAscii(mti)}${request.slice(12)}`, 'hex'));
  assert.equal(wireOf(await peer.next()), first.wire, `${mti}: the first answer again`);
}

async function setup(t: Parameters<typeof build>[0], dialect: Parameters<typeof build>[1]) {
  const h = await build(t, dialect);
  const { cardId } = await fundedCard(h, { topUp: 100 });
  const card = await cardSecrets(h, cardId);
  const link = await linkOf(t, h);
  const peer = await Peer.open(t, link.port);
  const send = (g: Golden, over: Partial<Card> = {}) => exchange(peer, g, { ...card, ...over });
  const again = (g: Golden, mti: string, first: Answered) => repeat(peer, g, card, mti, first);
  return { h, cardId, card, send, again };
}

async function clean(h: Awaited<ReturnType<typeof setup>>['h']) {
  assert.deepEqual((await checkLedger(h.db.database)).problems, []);
}

eachDialect('network link: golden frames (decisions §12.4)', (dialect) => {
  it('0800: sign-on, echo, sign-off', async (t) => {
    const { send } = await setup(t, dialect);
    await send(GOLDEN.signOn);
    await send(GOLDEN.echo);
    await send(GOLDEN.signOff);
  });

  it('0100: a purchase and its repeat, declines (51, 82, 54), a balance inquiry; 0400/0420: partial and full reversals and their repeats, 12, 25', async (t) => {
    const { h, cardId, card, send, again } = await setup(t, dialect);
    const purchase = await send(GOLDEN.purchase);
    const code = purchase.fields.get(38);
    assert.deepEqual(await balances(h, cardId), { available: 87.66, ledger: 100, status: 'active' });
    await again(GOLDEN.purchase, '0101', purchase);
    await send(GOLDEN.insufficientFunds);
    await send(GOLDEN.badCvv, { cvv: card.cvv === '000' ? '001' : '000' });
    await send(GOLDEN.expired);
    await send(GOLDEN.balance);
    assert.deepEqual(
      await balances(h, cardId),
      { available: 87.66, ledger: 100, status: 'active' },
      'declines and the inquiry hold nothing',
    );

    // A reversal carries its authorization's code in field 38 (docs/transactions.md, "Authorization codes").
    const partial = await send(GOLDEN.reversalPartial);
    assert.equal(partial.fields.get(38), code);
    assert.deepEqual(await balances(h, cardId), { available: 90, ledger: 100, status: 'active' }, '10.00 still held');
    await again(GOLDEN.reversalPartial, '0401', partial);
    const full = await send(GOLDEN.reversalAdviceFull);
    assert.equal(full.fields.get(38), code);
    await again(GOLDEN.reversalAdviceFull, '0421', full);
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'active' });
    await send(GOLDEN.reversalNothingHeld);
    await send(GOLDEN.reversalNoOriginal);
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'active' });
    await clean(h);
  });

  it('0220: a clearing in full and its repeat, one with an amount difference, a forced one, a refund; 0120 and 0121; 0200, 0201, and 0200 refund (12)', async (t) => {
    const { h, cardId, send, again } = await setup(t, dialect);
    const auth = await send(GOLDEN.authToClear);
    const cleared = await send(GOLDEN.clearingFull);
    assert.equal(cleared.fields.get(38), auth.fields.get(38), 'the payment carries its authorization’s code');
    await again(GOLDEN.clearingFull, '0221', cleared);
    assert.deepEqual(await balances(h, cardId), { available: 80, ledger: 80, status: 'active' });
    await send(GOLDEN.authToClearLess);
    await send(GOLDEN.clearingDifference);
    assert.deepEqual(await balances(h, cardId), { available: 68, ledger: 68, status: 'active' }, '12.00 of 15.00 cleared, 3.00 released');
    await send(GOLDEN.clearingForced);
    assert.deepEqual(await balances(h, cardId), { available: 63, ledger: 63, status: 'active' });
    await send(GOLDEN.refundOfClearing);
    assert.deepEqual(await balances(h, cardId), { available: 68, ledger: 68, status: 'active' });
    const advice = await send(GOLDEN.advice);
    await again(GOLDEN.advice, '0121', advice);
    assert.deepEqual(await balances(h, cardId), { available: 61, ledger: 68, status: 'active' });
    const single = await send(GOLDEN.single);
    await again(GOLDEN.single, '0201', single);
    assert.deepEqual(await balances(h, cardId), { available: 58, ledger: 65, status: 'active' });
    await send(GOLDEN.singleRefund);
    assert.deepEqual(await balances(h, cardId), { available: 58, ledger: 65, status: 'active' });
    await clean(h);
  });

  it('0400/0420 of an 0200 and of an 0220: the payment returned in full or down to field 95, once, with its callback; then 12', async (t) => {
    const { h, cardId, send, again } = await setup(t, dialect);
    // The merchant's notify URL: its `trade` callbacks are written (delivered or not, here).
    await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
    await send(GOLDEN.authToClear);
    await send(GOLDEN.clearingFull);
    await send(GOLDEN.authToClearLess);
    const cleared = await send(GOLDEN.clearingDifference);
    const single = await send(GOLDEN.single);
    assert.deepEqual(await balances(h, cardId), { available: 65, ledger: 65, status: 'active' });

    const reversal = await send(GOLDEN.singleReversal);
    assert.equal(reversal.fields.get(38), single.fields.get(38), 'the refund carries its payment’s code');
    assert.deepEqual(await balances(h, cardId), { available: 68, ledger: 68, status: 'active' });
    await send(GOLDEN.singleReversalAgain);
    const partial = await send(GOLDEN.clearingReversalPartial);
    assert.equal(partial.fields.get(38), cleared.fields.get(38));
    await again(GOLDEN.clearingReversalPartial, '0421', partial);
    assert.deepEqual(await balances(h, cardId), { available: 70, ledger: 70, status: 'active' }, '3.00 and 2.00 returned, once each');

    const refunds = (await h.db.database.db.selectFrom('callback_events').select('payload').where('type', '=', 'trade').execute())
      .map((e) => JSON.parse(e.payload) as { tradeStatus: number; amount: number })
      .filter((p) => p.tradeStatus === 10)
      .map((p) => p.amount)
      .sort();
    assert.deepEqual(refunds, [2, 3], 'a trade callback for each refund');
    const day = new Date().toISOString().slice(0, 10);
    const [total] = (await settlement(h.db.database.db, day)).totals;
    const line = (name: string) => total?.lines.find((l) => l.line === name);
    assert.deepEqual(
      [line('cleared')?.count, line('cleared')?.amount, line('refunded')?.count, line('refunded')?.amount, total?.net],
      [3, 35, 2, 5, 30],
      'the day’s settlement counts the returned payments as refunded',
    );
    await clean(h);
  });
});
