// Messages that name an original (clearings, refunds, reversals of decisions §12.4) for tests of the
// link's money and of the clearing file's reports.
import { type IsoMessage, message } from '../../src/iso8583/codec.js';
import { trace } from './link.js';

/** n12: an amount in minor units as fields 4, 6 and 95's first 12 digits carry it. */
export const amount12 = (minor: number | bigint) => String(minor).padStart(12, '0');

/** Field 90 naming a message: its MTI, STAN, field 7, acquirer n11, forwarding n11 zeros. */
export const f90 = (m: IsoMessage) =>
  `${m.mti}${m.fields.get(11)}${m.fields.get(7)}${(m.fields.get(32) as string).padStart(11, '0')}${'0'.repeat(11)}`;

/** Field 95 with this actual amount (a partial reversal). */
export const f95 = (actual: number | bigint) => `${amount12(actual)}${'0'.repeat(30)}`;

/**
 * A message naming `original` in field 90: an 0220 clearing (processing 000000), an 0220 refund
 * (200000), an 0400/0420 reversal; field 4 `minor`, the original's currency, a fresh STAN and field 7.
 */
export function naming(
  original: IsoMessage,
  mti: string,
  minor: number | bigint,
  opts: { processing?: string; extra?: Record<number, string> } = {},
): IsoMessage {
  return message(mti, {
    2: original.fields.get(2) as string,
    3: opts.processing ?? '000000',
    4: amount12(minor),
    ...trace(),
    32: original.fields.get(32) as string,
    49: original.fields.get(49) as string,
    90: f90(original),
    ...opts.extra,
  });
}
