import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { withTrades } from '../../src/db/trades-table.js';
import { decode, encode, type IsoMessage, message } from '../../src/iso8583/codec.js';
import { frame } from '../../src/iso8583/frame.js';
import { build, type Harness } from '../helpers/app.js';
import { fundedCard } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer } from '../helpers/link.js';

/** Frames per database in `npm test`; `npm run fuzz` sets FUZZ_NETWORK_RUNS (10,000 in its full run). */
const RUNS = Number(process.env.FUZZ_NETWORK_RUNS ?? 200);
const SEED = Number(process.env.FUZZ_SEED ?? 20261125);

const TABLES = ['network_messages', 'trades', 'authorizations', 'ledger_postings', 'callback_events'] as const;

/** Rows of the tables a message could write: a refused message leaves them as they were. */
async function counts(h: Harness): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of TABLES) {
    const row = await withTrades(h.db.database.db)
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    out[table] = Number(row.n);
  }
  return out;
}

const latin1 = (s: string) => Buffer.from(s, 'latin1');
const framed = (body: string | Buffer) => {
  const b = typeof body === 'string' ? latin1(body) : body;
  const header = Buffer.alloc(2);
  header.writeUInt16BE(b.length);
  return Buffer.concat([header, b]);
};
const ECHO = () => message('0800', { 7: '1125171500', 11: '777777', 70: '301' });

/** A healthy 0100 for a PAN no card has (answered 14: nothing written whatever the fuzzer does to it). */
const STRANGER = authorizationRequest({ pan: '4000000000000002', expiry: '3012', cvv: '123' }, { amount: 999 });

async function setup(t: Parameters<typeof build>[0], dialect: Parameters<typeof build>[1], idleMs: number) {
  const h = await build(t, dialect);
  const { cardId } = await fundedCard(h, { topUp: 10 });
  const card = await cardSecrets(h, cardId);
  h.app.svc.config.network = { ...h.app.svc.config.network, idleMs };
  const link = await linkOf(t, h);
  const bystander = await Peer.open(t, link.port);
  return { h, card, link, bystander };
}

async function closedWithoutAnswer(peer: Peer): Promise<void> {
  await assert.rejects(peer.next(), /connection closed/);
}

eachDialect('network link: bad input (issue 28)', (dialect) => {
  it('answers 30 when MTI and STAN can be read, closes the connection otherwise; writes nothing; other connections carry on', async (t) => {
    const { h, card, link, bystander } = await setup(t, dialect, 400);
    const before = await counts(h);
    const goodMessage = authorizationRequest(card);
    const good = encode(goodMessage).toString('latin1');
    const formatError: Array<[string, string]> = [
      // A field too long (field 32: LL 12 > 11), after the STAN.
      ['0100' + '0020000100000000' + '123456' + '12' + '123456789012', 'field 32 too long'],
      // Non-digits in an n field after the STAN (field 12), and before it (field 4: the STAN is found by the lengths).
      ['0100' + '0030000000000000' + '123456' + '12345X', 'field 12 non-digits'],
      ['0100' + '1020000000000000' + '00000000X000' + '123456', 'field 4 non-digits'],
      // A field too long before the STAN (the PAN, LL 20 > 19): the STAN is found by the lengths.
      ['0100' + '4020000000000000' + '20' + '4'.repeat(20) + '123456', 'PAN too long'],
      // Truncated inside a field after the STAN.
      [good.slice(0, good.length - 5), 'truncated'],
      // Unknown MTI; a known one without its required fields.
      ['0300' + '0020000000000000' + '123456', 'unknown MTI'],
      ['0100' + '0020000000000000' + '123456', 'no PAN'],
      // Trailing bytes after the last field.
      ['0800' + '0020000000000000' + '123456' + 'xyz', 'trailing bytes'],
    ];
    const peer = await Peer.open(t, link.port);
    for (const [body, what] of formatError) {
      peer.writeRaw(framed(body));
      const answer = decode(await peer.next());
      assert.equal(answer.fields.get(39), '30', what);
      assert.equal(answer.fields.get(11), what === 'truncated' ? goodMessage.fields.get(11) : '123456', what);
      assert.match(answer.mti, /^0[138]10$/, what);
    }

    const closing: Array<[Buffer, string]> = [
      [framed('01X0' + '0020000000000000' + '123456'), 'unreadable MTI'],
      [framed('0100' + '00200000000000zz' + '123456'), 'bad bitmap'],
      [framed('0100' + '0020000000000000' + '12345'), 'truncated STAN'],
      [Buffer.from([0x10, 0x01, ...latin1('0800')]), 'a length over the limit'],
      [Buffer.from([0x00, 0x00]), 'a frame of length 0'],
    ];
    for (const [bytes, what] of closing) {
      const p = await Peer.open(t, link.port);
      p.writeRaw(bytes);
      await closedWithoutAnswer(p).catch((err) => assert.fail(`${what}: ${err}`));
    }
    // A frame begun and never finished, and a silent peer: closed after the idle time.
    const slow = await Peer.open(t, link.port);
    slow.writeRaw(Buffer.from([0x00, 0x40, 0x30]));
    const silent = await Peer.open(t, link.port);
    // The bystander keeps its connection alive meanwhile (an echo is traffic).
    assert.equal((await bystander.ask(ECHO())).fields.get(39), '00', 'the other connection carries on');
    await Promise.all([closedWithoutAnswer(slow), closedWithoutAnswer(silent)]);
    assert.deepEqual(await counts(h), before, 'nothing written');
  });

  it(`fuzz: ${RUNS} generated and mutated frames, each answered or its connection closed; nothing written, the link keeps serving`, async (t) => {
    const { h, link, bystander } = await setup(t, dialect, 120_000);
    const before = await counts(h);
    const seeds: IsoMessage[] = [STRANGER, ECHO(), message('0400', { 2: '4000000000000002', 7: '1125171500', 11: '000009', 32: '1234' })];
    const bodies = seeds.map((m) => encode(m));
    const mutated = fc
      .tuple(
        fc.constantFrom(...bodies),
        fc.array(
          fc.oneof(
            fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
            fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
            fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: fc.string({ maxLength: 8 }) }),
          ),
          { minLength: 1, maxLength: 4 },
        ),
      )
      .map(([body, edits]) => {
        let b = Buffer.from(body);
        for (const e of edits) {
          const at = b.length === 0 ? 0 : e.at % b.length;
          if (e.kind === 'flip') b[at] = e.byte;
          else if (e.kind === 'cut') b = b.subarray(0, at);
          else b = Buffer.concat([b.subarray(0, at), latin1(e.text), b.subarray(at)]);
        }
        return b;
      });
    const generated = fc.uint8Array({ minLength: 0, maxLength: 300 }).map((a) => Buffer.from(a));
    let peer = await Peer.open(t, link.port);
    await fc.assert(
      fc.asyncProperty(fc.oneof(mutated, generated), async (body) => {
        if (peer.socket.destroyed) peer = await Peer.open(t, link.port);
        peer.writeRaw(body.length === 0 ? Buffer.from([0, 0]) : frame(body));
        try {
          const answer = decode(await peer.next());
          assert.match(answer.mti, /^\d{4}$/);
          assert.match(answer.fields.get(39) ?? '', /^\d\d$/);
        } catch (err) {
          if (!/connection closed/.test(String(err))) throw err;
          peer = await Peer.open(t, link.port);
        }
      }),
      { numRuns: RUNS, seed: SEED },
    );
    assert.equal((await bystander.ask(ECHO())).fields.get(39), '00', 'the link keeps serving');
    assert.deepEqual(await counts(h), before, 'nothing written');
  });
});
