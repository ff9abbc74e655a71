import type { Services } from '../context.js';
import { decode, encode, Iso8583Error, type IsoMessage } from '../iso8583/codec.js';
import { FrameError, FrameReader, frame } from '../iso8583/frame.js';
import { codeMeaning, ResponseCode } from '../iso8583/response-codes.js';
import { exponent, toMajor } from '../money/currency.js';
import { currencyAlpha } from '../money/iso4217.js';
import { messagesWithTrades, postedRecord } from '../trades/network-reads.js';
import { cardTotal } from './amounts.js';
import { contentHash, maskedPan } from './card-data.js';
import { financialAdvice } from './clear.js';
import { byValue, type LinkAnswer, type LinkClass, linkIdentity, originalOf, storedAnswer } from './identity.js';
import type { ImportAudit } from './import-audit.js';
import { type Movement, movementOf } from './movements.js';
import { reversalAnswer } from './reverse.js';

/**
 * The clearing file (decisions §12.10): the network's day of advices as a sequence of framed
 * messages, exactly as on the link (2-byte big-endian length, then the message): 0220 clearings and
 * refunds, 0420 reversals. Each is posted by the same path as on the link (financialAdvice,
 * reversalAnswer: the same verbs, the same claim in network_messages), so a message imported again,
 * or also sent over the link, posts nothing. A line reports what its own message posted (§12.13):
 * the record it produced, named as the settlement names it (src/card-network/movements.ts); a message
 * whose claim another import or the link won first, even at the same moment, is `duplicate` here.
 * Its outcome is the answer its verb gave (refused, held in suspense, forced or not), never what a
 * look before posting expected: between the two the link may have moved the original (issue 39's
 * attack pass, F3/F7).
 */

export type ClearingOutcome = 'matched' | 'matched-difference' | 'forced' | 'held' | 'duplicate' | 'refused';

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
  /** The trade the message posted (payment, refund, reversal record); for a duplicate, the first's. */
  tradeId?: string;
  /** What this message posted, from the record it produced (absent when it posted nothing: duplicate, refused, a reversal with nothing to return). */
  posted?: Posted;
}

/** What a message posted: the movement (named as in the settlement), in the card's currency as the journal booked it. */
export interface Posted {
  movement: Movement;
  /** The card's currency. */
  currency: string;
  /** Major units of `currency`. */
  amount: number;
}

export interface ClearingTotals {
  currency: string;
  messages: number;
  matched: number;
  matchedDifference: number;
  forced: number;
  /** Acknowledged but held in suspense as an exception (§12.13): nothing reached the card. */
  held: number;
  duplicate: number;
  refused: number;
  /**
   * What this import posted in this currency (the card's, as booked; the counts above are by field
   * 49), major units, per movement: the sums of the lines' `posted`.
   */
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

const currencyOf = (f49: string | undefined) => (f49 === undefined ? null : currencyAlpha(f49));
const majorOf = (minor: number, currency: string | null) => {
  try {
    return minor / 10 ** exponent(currency ?? 'EUR');
  } catch {
    return minor / 100;
  }
};

/**
 * The original named by field 90 (class, STAN, field 7, acquirer n11), with its request's field 4
 * and its trade's state; only when the message's own field 32 is the original's (by value, decisions
 * §12.13), as the link finds it (originalMessage).
 */
async function original(svc: Services, msgClass: LinkClass, f90: string, ownAcquirer: string) {
  const named = originalOf(f90);
  if (byValue(ownAcquirer) !== named.acquirer) return null;
  const rows = await svc.database.read((db) => messagesWithTrades(db, msgClass, named.stan, named.transmitted));
  return rows.find((r) => byValue(r.acquirer) === named.acquirer && r.response_code === ResponseCode.approved) ?? null;
}

/**
 * Whether posting this clearing would be a forced post (§12.7): no approved original, an
 * authorization that holds nothing any more, or an amount above what it holds. Null: it is not.
 */
async function forcedBecause(svc: Services, fields: Map<number, string>): Promise<string | null> {
  const f90 = fields.get(90);
  const own = fields.get(32) ?? '';
  const kind = fields.get(3)?.slice(0, 2);
  if (!f90 || f90.length < 31) return 'no original named (field 90)';
  if (kind === '20') {
    const o = await original(svc, 'financial', f90, own);
    return o?.trade_id ? null : 'no approved payment matches field 90';
  }
  const o = await original(svc, 'authorization', f90, own);
  if (!o?.trade_id || o.held === null) return 'no approved authorization matches field 90';
  if (o.held <= 0) return 'its authorization holds nothing any more (cleared, reversed or released)';
  // The conversion the clearing will make (src/card-network/clear.ts): a total of a hold, rounded once.
  const inCard = cardTotal({ amount: o.amount ?? 0, txn_amount: o.txn_amount ?? 0 }, Number(fields.get(4) ?? 0));
  if (inCard > o.held) return `its amount is above what its authorization holds (${inCard} > ${o.held} minor units)`;
  return null;
}

/** Imports a clearing file: each message posted once, in the file's order; the reconciliation. */
export async function importClearing(svc: Services, file: Uint8Array, audit?: ImportAudit): Promise<ClearingReport> {
  const lines: Imported[] = [];
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
        line: {
          ...describe(index, mti, fields),
          outcome: 'refused',
          code: ResponseCode.formatError,
          reason: `30 format error: ${err.message}`,
        },
        minor: 0,
      });
      continue;
    }
    lines.push(await importOne(svc, index, msg, audit));
  }
  return { lines: lines.map((l) => l.line), totals: totalsOf(lines) };
}

/** A line, and what it posted in minor units of its posted currency (the totals add these, never major units). */
interface Imported {
  line: ClearingLine;
  minor: number;
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
  };
}

/** A message whose identity another message claimed first: in this file, an earlier import, the link, or an import at the same time. */
function duplicate(line: Omit<ClearingLine, 'outcome' | 'code'>, first: LinkAnswer): Imported {
  if (first.code === ResponseCode.duplicate) {
    return {
      line: {
        ...line,
        outcome: 'refused',
        code: ResponseCode.duplicate,
        reason: '94 duplicate: another message with this identity (fields 32, 11, 7) and other content',
      },
      minor: 0,
    };
  }
  return {
    line: {
      ...line,
      outcome: 'duplicate',
      code: first.code,
      reason: `posted before (answered ${first.code}, ${codeMeaning(first.code)})`,
      ...(first.tradeId ? { tradeId: first.tradeId } : {}),
    },
    minor: 0,
  };
}

/** What the message posted: the record its answer names, as the settlement reads it. */
async function postedBy(svc: Services, msgClass: LinkClass, tradeId: string | undefined): Promise<{ posted?: Posted; minor: number }> {
  const record = tradeId ? await svc.database.read((db) => postedRecord(db, tradeId)) : undefined;
  const movement = record ? movementOf(msgClass, record) : null;
  if (!record || !movement) return { minor: 0 };
  return { posted: { movement, currency: record.currency, amount: toMajor(record.amount, record.currency) }, minor: record.amount };
}

/** Why an exception was held (its reason, as the queue shows it). */
async function heldBecause(svc: Services, exceptionId: string): Promise<string> {
  const row = await svc.database.read((db) =>
    db.selectFrom('network_exceptions').select('reason').where('id', '=', exceptionId).executeTakeFirst(),
  );
  return row?.reason ?? 'above the forced posts’ ceilings';
}

async function importOne(svc: Services, index: number, msg: IsoMessage, audit: ImportAudit | undefined): Promise<Imported> {
  const { mti, fields } = msg;
  const line = describe(index, mti, fields);
  const refused = (code: string | null, reason: string): Imported => ({ line: { ...line, outcome: 'refused', code, reason }, minor: 0 });
  if (!['0220', '0221', '0420', '0421'].includes(mti)) {
    return refused(null, `not a clearing advice: MTI ${mti} (a clearing file holds 0220 and 0420)`);
  }
  const acquirer = fields.get(32);
  const transmitted = fields.get(7);
  const stan = fields.get(11);
  if (!acquirer || !transmitted || !stan)
    return refused(ResponseCode.formatError, '30 format error: fields 7, 11 and 32 identify a message');
  const reversal = line.kind === 'reversal';
  const identity = linkIdentity(reversal ? 'reversal' : 'financial', acquirer, stan, transmitted);
  // Posted before this import started: no need to look further.
  const before = await svc.database.read(async (db) => storedAnswer(db, identity, await contentHash(svc, db, fields)));
  if (before) return duplicate(line, before);
  const forced = reversal ? null : await forcedBecause(svc, fields);
  const origin =
    reversal || !fields.get(90)
      ? null
      : await original(svc, line.kind === 'refund' ? 'financial' : 'authorization', fields.get(90) as string, acquirer);
  let answer: LinkAnswer;
  try {
    answer = reversal ? await reversalAnswer(svc, mti, fields, audit) : await financialAdvice(svc, mti, fields, audit);
  } catch (err) {
    svc.log.warn({ err: { name: (err as Error).name, message: (err as Error).message }, stan }, 'clearing import: message failed');
    answer = { code: ResponseCode.systemError };
  }
  // Another import (or the link) claimed it between the look above and the claim: its posting, not this one's.
  if (answer.replayed) return duplicate(line, answer);
  // From here the outcome is the verb's answer: the look above only explains it.
  if (answer.code !== ResponseCode.approved) return refused(answer.code, `${answer.code} ${codeMeaning(answer.code)}`);
  if (answer.exceptionId) {
    // Acknowledged but held for an operator (§12.13): nothing reached the card, nothing is posted.
    const why = await heldBecause(svc, answer.exceptionId);
    return {
      line: { ...line, code: ResponseCode.approved, outcome: 'held', reason: `held in suspense as ${answer.exceptionId}: ${why}` },
      minor: 0,
    };
  }
  const { posted, minor } = await postedBy(svc, identity.msgClass, answer.tradeId);
  const done = {
    ...line,
    code: ResponseCode.approved,
    ...(answer.tradeId ? { tradeId: answer.tradeId } : {}),
    ...(posted ? { posted } : {}),
  };
  if (answer.forced) {
    const why = forced ?? (reversal ? 'a reversal advice after the clearing: a forced refund (§12.7)' : 'a forced post (§12.7)');
    return { line: { ...done, outcome: 'forced', reason: why }, minor };
  }
  if (line.kind === 'clearing' && origin) {
    const authorized = Number((JSON.parse(origin.request) as Record<string, string>)['4'] ?? 0);
    const cleared = Number(fields.get(4) ?? 0);
    if (authorized !== cleared) {
      const difference = majorOf(cleared - authorized, line.currency);
      const reason = `cleared ${majorOf(cleared, line.currency)}, authorized ${majorOf(authorized, line.currency)}`;
      return { line: { ...done, outcome: 'matched-difference', difference, reason }, minor };
    }
  }
  return { line: { ...done, outcome: 'matched' }, minor };
}

/**
 * Per currency: the lines counted by their field 49's currency, and what they posted summed in
 * minor units by the currency it was booked in, then given in major units once.
 */
function totalsOf(lines: Imported[]): ClearingTotals[] {
  const by = new Map<string, ClearingTotals>();
  const row = (currency: string) => {
    let t = by.get(currency);
    if (!t) {
      t = {
        currency,
        messages: 0,
        matched: 0,
        matchedDifference: 0,
        forced: 0,
        held: 0,
        duplicate: 0,
        refused: 0,
        cleared: 0,
        refunded: 0,
        reversed: 0,
      };
      by.set(currency, t);
    }
    return t;
  };
  for (const { line, minor } of lines) {
    const t = row(line.currency ?? 'unknown');
    t.messages++;
    if (line.outcome === 'matched-difference') t.matchedDifference++;
    else t[line.outcome]++;
    if (line.posted) row(line.posted.currency)[line.posted.movement] += minor;
  }
  const major = (minor: number, currency: string) => (currency === 'unknown' || minor === 0 ? minor : toMajor(minor, currency));
  return [...by.values()]
    .map((t) => ({
      ...t,
      cleared: major(t.cleared, t.currency),
      refunded: major(t.refunded, t.currency),
      reversed: major(t.reversed, t.currency),
    }))
    .sort((a, b) => a.currency.localeCompare(b.currency));
}
