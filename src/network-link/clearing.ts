import type { Services } from '../context.js';
import { decode, encode, Iso8583Error, type IsoMessage } from '../iso8583/codec.js';
import { FrameError, FrameReader, frame } from '../iso8583/frame.js';
import { exponent } from '../money/currency.js';
import { type LinkAnswer, type LinkClass, storedAnswer } from '../network/link.js';
import { messagesWithTrades } from '../trades/network-reads.js';
import { NUMERIC } from './amounts.js';
import { contentHash, maskedPan } from './card-data.js';
import { codeMeaning } from './client.js';
import { financialAdvice } from './financial.js';
import { reversalAnswer } from './reversal.js';

/**
 * The clearing file (decisions §12.10): the network's day of advices as a sequence of framed
 * messages, exactly as on the link (2-byte big-endian length, then the message): 0220 clearings and
 * refunds, 0420 reversals. Each is posted by the same path as on the link (financialAdvice,
 * reversalAnswer: the same verbs, the same claim in network_messages), so a message imported again,
 * or also sent over the link, posts nothing.
 */

export type ClearingOutcome = 'matched' | 'matched-difference' | 'forced' | 'duplicate' | 'refused';

export interface ClearingLine {
  /** 1-based position in the file. */
  index: number;
  mti: string | null;
  stan: string | null;
  /** Field 7. */
  transmitted: string | null;
  /** Field 32. */
  acquirer: string | null;
  /** Field 2, masked. */
  pan: string | null;
  /** `clearing`, `refund` or `reversal`; null for a message that is none of them. */
  kind: 'clearing' | 'refund' | 'reversal' | null;
  /** Field 49 as a currency code (ISO 4217 alpha), null when absent or unknown. */
  currency: string | null;
  /** Field 4, major units of `currency`. */
  amount: number | null;
  outcome: ClearingOutcome;
  /** Field 39 of the answer the link would give (for a duplicate, the first answer's). */
  code: string | null;
  /** Why (refused, duplicate), or what differs (matched-difference). */
  reason?: string;
  /** A clearing's amount minus its authorization's (major units), for matched-difference. */
  difference?: number;
  /** The trade the message posted (payment, refund, reversal record). */
  tradeId?: string;
  /** A reversal's amount reversed: field 4, less field 95's actual amount of a partial one (major units). */
  reversing?: number;
}

export interface ClearingTotals {
  currency: string;
  messages: number;
  matched: number;
  matchedDifference: number;
  forced: number;
  duplicate: number;
  refused: number;
  /** Posted by this import, major units of the currency (field 4; a partial reversal: what it reversed). */
  cleared: number;
  refunded: number;
  reversed: number;
}

export interface ClearingReport {
  lines: ClearingLine[];
  totals: ClearingTotals[];
}

/** A clearing file of these messages: each framed as on the link. */
export function clearingFile(messages: IsoMessage[]): Buffer {
  return Buffer.concat(messages.map((m) => frame(encode(m))));
}

/** A file's frames; a length of 0, or bytes left that do not make a whole frame, is an error naming where. */
export function clearingFrames(file: Uint8Array): Buffer[] {
  const reader = new FrameReader(65535);
  let frames: Buffer[];
  try {
    frames = reader.push(file);
  } catch (err) {
    if (err instanceof FrameError) throw new ClearingFileError(`not a clearing file: ${err.message}`);
    throw err;
  }
  if (reader.pending) throw new ClearingFileError(`not a clearing file: it ends inside a frame after ${frames.length} whole messages`);
  return frames;
}

export class ClearingFileError extends Error {
  override name = 'ClearingFileError';
}

const currencyOf = (f49: string | undefined) => (f49 === undefined ? null : (NUMERIC[f49] ?? null));
const majorOf = (minor: number, currency: string | null) => {
  try {
    return minor / 10 ** exponent(currency ?? 'EUR');
  } catch {
    return minor / 100;
  }
};

/** The original named by field 90 (class, STAN, field 7, acquirer n11), with its request's field 4 and its trade's state. */
async function original(svc: Services, msgClass: LinkClass, f90: string) {
  const rows = await messagesWithTrades(svc.database.db, msgClass, f90.slice(4, 10), f90.slice(10, 20));
  const acquirer = f90.slice(20, 31).replace(/^0+/, '');
  return rows.find((r) => r.acquirer.replace(/^0+/, '') === acquirer && r.response_code === '00') ?? null;
}

/**
 * Whether posting this clearing would be a forced post (§12.7): no approved original, an
 * authorization that holds nothing any more, or an amount above what it holds. Null: it is not.
 */
async function forcedBecause(svc: Services, fields: Map<number, string>): Promise<string | null> {
  const f90 = fields.get(90);
  const kind = fields.get(3)?.slice(0, 2);
  if (!f90 || f90.length < 31) return 'no original named (field 90)';
  if (kind === '20') {
    const o = await original(svc, 'financial', f90);
    return o?.trade_id ? null : 'no approved payment matches field 90';
  }
  const o = await original(svc, 'authorization', f90);
  if (!o?.trade_id || o.held === null) return 'no approved authorization matches field 90';
  if (o.held <= 0) return 'its authorization holds nothing any more (cleared, reversed or released)';
  const f4 = Number(fields.get(4) ?? 0);
  const inCard = o.txn_amount === o.amount || !o.txn_amount ? f4 : Math.round((f4 * (o.amount as number)) / o.txn_amount);
  if (inCard > o.held) return `its amount is above what its authorization holds (${inCard} > ${o.held} minor units)`;
  return null;
}

/** Imports a clearing file: each message posted once, in the file's order; the reconciliation. */
export async function importClearing(svc: Services, file: Uint8Array): Promise<ClearingReport> {
  const lines: ClearingLine[] = [];
  let index = 0;
  for (const bytes of clearingFrames(file)) {
    index++;
    let msg: IsoMessage;
    try {
      msg = decode(bytes);
    } catch (err) {
      if (!(err instanceof Iso8583Error)) throw err;
      const { mti, fields } = err.partial;
      lines.push({
        ...describe(index, mti, fields),
        outcome: 'refused',
        code: '30',
        reason: `30 format error: ${err.message}`,
      });
      continue;
    }
    lines.push(await importOne(svc, index, msg));
  }
  return { lines, totals: totalsOf(lines) };
}

function describe(index: number, mti: string | null, fields: Map<number, string>): Omit<ClearingLine, 'outcome' | 'code'> {
  const processing = fields.get(3)?.slice(0, 2);
  const kind = mti?.startsWith('022') ? (processing === '20' ? 'refund' : 'clearing') : mti?.startsWith('042') ? 'reversal' : null;
  const currency = currencyOf(fields.get(49));
  const f4 = fields.get(4);
  const pan = fields.get(2);
  return {
    index,
    mti,
    stan: fields.get(11) ?? null,
    transmitted: fields.get(7) ?? null,
    acquirer: fields.get(32) ?? null,
    pan: pan === undefined ? null : maskedPan(pan),
    kind,
    currency,
    amount: f4 === undefined ? null : majorOf(Number(f4), currency),
    ...(kind === 'reversal' && f4 !== undefined
      ? { reversing: majorOf(Number(f4) - (/^\d{12}/.test(fields.get(95) ?? '') ? Number(fields.get(95)?.slice(0, 12)) : 0), currency) }
      : {}),
  };
}

async function importOne(svc: Services, index: number, msg: IsoMessage): Promise<ClearingLine> {
  const { mti, fields } = msg;
  const line = describe(index, mti, fields);
  const refused = (code: string | null, reason: string): ClearingLine => ({ ...line, outcome: 'refused', code, reason });
  if (!['0220', '0221', '0420', '0421'].includes(mti)) {
    return refused(null, `not a clearing advice: MTI ${mti} (a clearing file holds 0220 and 0420)`);
  }
  const acquirer = fields.get(32);
  const transmitted = fields.get(7);
  const stan = fields.get(11);
  if (!acquirer || !transmitted || !stan) return refused('30', '30 format error: fields 7, 11 and 32 identify a message');
  const reversal = line.kind === 'reversal';
  const identity = { msgClass: (reversal ? 'reversal' : 'financial') as LinkClass, acquirer, stan, transmitted };
  const hash = await contentHash(svc, fields);
  const before = await storedAnswer(svc.database.db, identity, hash);
  if (before) {
    if (before.code === '94') return refused('94', '94 duplicate: another message with this identity (fields 32, 11, 7) and other content');
    return {
      ...line,
      outcome: 'duplicate',
      code: before.code,
      reason: `posted before (answered ${before.code}, ${codeMeaning(before.code)})`,
      ...(before.tradeId ? { tradeId: before.tradeId } : {}),
    };
  }
  const forced = reversal ? null : await forcedBecause(svc, fields);
  const origin =
    reversal || !fields.get(90)
      ? null
      : await original(svc, line.kind === 'refund' ? 'financial' : 'authorization', fields.get(90) as string);
  let answer: LinkAnswer;
  try {
    answer = reversal ? await reversalAnswer(svc, mti, fields) : await financialAdvice(svc, mti, fields);
  } catch (err) {
    svc.log.warn({ err: { name: (err as Error).name, message: (err as Error).message }, stan }, 'clearing import: message failed');
    answer = { code: '96' };
  }
  const posted = answer.tradeId ? { tradeId: answer.tradeId } : {};
  if (answer.code !== '00') {
    if (forced && answer.code === '12') return refused('12', `a forced post (${forced}): not supported yet, answered 12`);
    return refused(answer.code, `${answer.code} ${codeMeaning(answer.code)}`);
  }
  if (forced) {
    // Above the forced posts' ceilings (§12.13) it is held for an operator, not on the card: say which exception.
    const held = answer.exceptionId ? `; held in suspense above the ceilings as ${answer.exceptionId}` : '';
    return { ...line, outcome: 'forced', code: '00', reason: `${forced}${held}`, ...posted };
  }
  if (line.kind === 'clearing' && origin) {
    const authorized = Number((JSON.parse(origin.request) as Record<string, string>)['4'] ?? 0);
    const cleared = Number(fields.get(4) ?? 0);
    if (authorized !== cleared) {
      const difference = majorOf(cleared - authorized, line.currency);
      return {
        ...line,
        outcome: 'matched-difference',
        code: '00',
        difference,
        reason: `cleared ${majorOf(cleared, line.currency)}, authorized ${majorOf(authorized, line.currency)}`,
        ...posted,
      };
    }
  }
  return { ...line, outcome: 'matched', code: '00', ...posted };
}

function totalsOf(lines: ClearingLine[]): ClearingTotals[] {
  const by = new Map<string, ClearingTotals>();
  for (const l of lines) {
    const currency = l.currency ?? 'unknown';
    let t = by.get(currency);
    if (!t) {
      t = {
        currency,
        messages: 0,
        matched: 0,
        matchedDifference: 0,
        forced: 0,
        duplicate: 0,
        refused: 0,
        cleared: 0,
        refunded: 0,
        reversed: 0,
      };
      by.set(currency, t);
    }
    t.messages++;
    if (l.outcome === 'matched-difference') t.matchedDifference++;
    else t[l.outcome]++;
    if (['matched', 'matched-difference', 'forced'].includes(l.outcome) && l.amount !== null) {
      if (l.kind === 'clearing') t.cleared += l.amount;
      else if (l.kind === 'refund') t.refunded += l.amount;
      else if (l.kind === 'reversal') t.reversed += l.reversing ?? l.amount;
    }
  }
  const round = (n: number) => Math.round(n * 1e6) / 1e6;
  return [...by.values()]
    .map((t) => ({ ...t, cleared: round(t.cleared), refunded: round(t.refunded), reversed: round(t.reversed) }))
    .sort((a, b) => a.currency.localeCompare(b.currency));
}
