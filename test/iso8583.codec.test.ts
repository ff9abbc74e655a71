import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { answerMti, decode, encode, Iso8583Error, message } from '../src/iso8583/codec.js';
import { FIELDS } from '../src/iso8583/fields.js';
import { FrameError, FrameReader, frame } from '../src/iso8583/frame.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex').toUpperCase();
const ascii = (s: string) => Buffer.from(s, 'latin1');

describe('ISO 8583 codec (decisions §12.2)', () => {
  it('encodes an echo as its golden bytes, primary bitmap only', () => {
    const bytes = encode(message('0800', { 7: '1125171500', 11: '000001', 70: '301' }));
    // 0800, bitmap with fields 1 (secondary: 70), 7, 11; secondary with field 70.
    assert.equal(bytes.toString('latin1'), '0800' + '8220000000000000' + '0400000000000000' + '1125171500' + '000001' + '301');
    const back = decode(bytes);
    assert.equal(back.mti, '0800');
    assert.deepEqual(
      [...back.fields],
      [
        [7, '1125171500'],
        [11, '000001'],
        [70, '301'],
      ],
    );
  });

  it('pads fixed fields (n right-justified with zeros, an/ans left-justified with spaces) and writes LL/LLL lengths', () => {
    const bytes = encode(message('0100', { 2: '4242420000000000', 4: '420', 41: 'T1', 48: '9203123' }));
    assert.equal(bytes.toString('latin1'), '0100' + '5000000000810000' + '164242420000000000' + '000000000420' + 'T1      ' + '0079203123');
  });

  it('refuses what the field table forbids, naming the field', () => {
    assert.throws(
      () => encode(message('0100', { 4: '1234567890123' })),
      (e: Iso8583Error) => e.where === 4,
    );
    assert.throws(
      () => encode(message('0100', { 11: '12a456' })),
      (e: Iso8583Error) => e.where === 11,
    );
    assert.throws(
      () => encode(message('0100', { 2: '1'.repeat(20) })),
      (e: Iso8583Error) => e.where === 2,
    );
    assert.throws(
      () => encode(message('010', { 11: '1' })),
      (e: Iso8583Error) => e.where === 'mti',
    );
  });

  it('decodes strictly: bad bitmap, non-digits in n, a length too long, truncation, trailing bytes', () => {
    const ok = '0800' + '0220000000000000' + '1125171500' + '000001';
    assert.equal(decode(ascii(ok)).fields.get(11), '000001');
    const cases: Array<[string, Iso8583Error['where']]> = [
      ['08X0' + ok.slice(4), 'mti'],
      ['0800' + '0220000000000zz0' + ok.slice(20), 'bitmap'],
      ['0800' + '0220000000000000'.toLowerCase().replace('2', 'a') + ok.slice(20), 'bitmap'],
      [`${ok.slice(0, -6)}00000A`, 11],
      [ok.slice(0, -2), 11],
      [`${ok}12`, 'trailing'],
      ['0100' + '4000000000000000' + '20' + '4'.repeat(20), 2],
      ['0100' + '4000000000000000' + '1X' + '4'.repeat(16), 2],
      ['0800' + '8000000000000000' + '000000000000000G', 1],
      ['0800' + '0000000000000000', 'bitmap'],
    ];
    for (const [text, where] of cases) {
      assert.throws(
        () => decode(ascii(text)),
        (e: unknown) => e instanceof Iso8583Error && e.where === where,
        `${text} → ${where}`,
      );
    }
    // The MTI and the fields read before the error are kept, to answer 30 when the STAN is there.
    try {
      decode(ascii('0100' + '0030000000000000' + '123456' + '12345'));
      assert.fail('decoded');
    } catch (e) {
      assert.ok(e instanceof Iso8583Error);
      assert.equal(e.partial.mti, '0100');
      assert.equal(e.partial.fields.get(11), '123456');
      assert.equal(e.where, 12);
    }
  });

  it('skips fields it gives no meaning to: every field 1–128 has a known format', () => {
    for (let f = 2; f <= 128; f++) {
      const spec = FIELDS[f];
      assert.ok(spec && spec.length > 0, `field ${f}`);
    }
    // An empty secondary bitmap is read as none.
    assert.deepEqual(
      [...decode(ascii('0800A2200000000000000000000000000000' + '000000' + '1125171500' + '000001')).fields.keys()],
      [3, 7, 11],
    );
    const bytes = encode(message('0100', { 11: '000007', 46: 'hello', 63: 'x', 104: 'description', 127: 'private' }));
    assert.deepEqual(decode(bytes).fields.get(127), 'private');
  });

  it('answers a request with its response MTI', () => {
    assert.deepEqual(['0100', '0101', '0120', '0200', '0221', '0400', '0420', '0800'].map(answerMti), [
      '0110',
      '0110',
      '0130',
      '0210',
      '0230',
      '0410',
      '0430',
      '0810',
    ]);
  });

  it('round-trips any message the table allows (fast-check)', () => {
    const fieldArb = fc.integer({ min: 2, max: 128 }).chain((f) => {
      const spec = FIELDS[f] as (typeof FIELDS)[number];
      const chars =
        spec.cls === 'n'
          ? '0123456789'
          : spec.cls === 'b'
            ? '0123456789ABCDEF'
            : spec.cls === 'z'
              ? '0123456789=D'
              : spec.cls === 'xn' || spec.cls === 'ns'
                ? '0123456789'
                : 'ABCxyz019 ';
      const len =
        spec.var === 0 ? fc.constant(spec.length - (spec.cls === 'xn' ? 1 : 0)) : fc.integer({ min: 0, max: Math.min(spec.length, 30) });
      return len.chain((n) =>
        fc
          .array(fc.constantFrom(...chars.split('')), { minLength: n, maxLength: n })
          .map((a) => [f, (spec.cls === 'xn' ? 'C' : '') + a.join('')] as [number, string]),
      );
    });
    fc.assert(
      fc.property(fc.uniqueArray(fieldArb, { selector: ([f]) => f, minLength: 1, maxLength: 12 }), (entries) => {
        // Trailing spaces of an an/ans fixed field are its padding.
        const fields = new Map(entries);
        const back = decode(encode({ mti: '0200', fields }));
        assert.deepEqual(new Map([...back.fields].sort(([a], [b]) => a - b)), new Map([...fields].sort(([a], [b]) => a - b)));
      }),
      { numRuns: 300, seed: 28 },
    );
  });
});

describe('framing (decisions §12.1)', () => {
  it('cuts frames out of any split of the stream', () => {
    const a = frame(ascii('0800abc'));
    const b = frame(ascii('0810defg'));
    assert.equal(hex(a.subarray(0, 2)), '0007');
    const stream = Buffer.concat([a, b]);
    for (let cut = 0; cut <= stream.length; cut++) {
      const r = new FrameReader(100);
      const got = [...r.push(stream.subarray(0, cut)), ...r.push(stream.subarray(cut))];
      assert.deepEqual(
        got.map((g) => g.toString('latin1')),
        ['0800abc', '0810defg'],
      );
      assert.equal(r.pending, false);
    }
  });

  it('refuses a length over the limit, or 0, at the header', () => {
    assert.throws(() => new FrameReader(64).push(Buffer.from([0, 65])), FrameError);
    assert.throws(() => new FrameReader(64).push(Buffer.from([0, 0])), FrameError);
  });
});
