import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { decidedDisputes } from '../disputes/query.js';
import { exceptionsOfDay } from '../ledger/exceptions-query.js';
import { toMajor } from '../money/currency.js';
import { settledMessages } from '../trades/network-reads.js';
import { type Movement, movementOf } from './movements.js';

/**
 * The day's settlement with the card network (decisions §12.10, §12.13): per currency and merchant,
 * a table of lines, each what moved between the program and the network that business day, and the
 * net the program owes the network. Amounts are in the card's currency as the journal booked them,
 * so the net is the day's movement of the journal's network accounts, which `ledger check` balances:
 * `program:settlement` for what the link's messages posted and the clearings held in suspense or
 * returned, `network:disputes` for what won disputes were paid back.
 *
 * A line is one entry of SETTLEMENT_LINES (its name, its sign in the net) and one source below
 * that reports it: a new line is one more of each.
 */

/** The lines, in the order they are shown, and what each does to the net owed to the network (+1 owed, −1 owed back, 0 no money). */
export const SETTLEMENT_LINES = [
  /** Payments of clearings (0220) and single messages (0200). */
  { line: 'cleared', sign: 1 },
  /** Money a clearing or an 0200 paid, returned: 0220 refunds, reversals of payments (src/card-network/movements.ts). */
  { line: 'refunded', sign: -1 },
  /** Holds released by reversals of authorizations: no money moves. */
  { line: 'reversed', sign: 0 },
  /** Disputes the network decided for the cardholder that day: what it paid back (`network:disputes`). */
  { line: 'disputes-won', sign: -1 },
  /** Disputes the network decided against the cardholder that day: the amount disputed, nothing paid. */
  { line: 'disputes-lost', sign: 0 },
  /**
   * Clearings above the forced posts' ceilings, acknowledged and held in suspense that day (the
   * exceptions queue): owed to the network like any clearing (`program:settlement` gained them, from
   * `network:suspense`). Posting one to its card later moves nothing with the network.
   */
  { line: 'exceptions-held', sign: 1 },
  /** Held clearings an operator returned to the network that day: the network owes them back. */
  { line: 'exceptions-returned', sign: -1 },
] as const satisfies ReadonlyArray<{ line: string; sign: -1 | 0 | 1 }>;

export type SettlementLineName = (typeof SETTLEMENT_LINES)[number]['line'];

export interface SettlementLine {
  line: SettlementLineName;
  count: number;
  /** Major units of the row's currency. */
  amount: number;
  /** What the line adds to the net owed to the network: the amount, negated or zero by its sign. */
  net: number;
}

export interface SettlementRow {
  currency: string;
  merchantId: string;
  /** Every line of SETTLEMENT_LINES, in its order (zero when nothing of it happened). */
  lines: SettlementLine[];
  /** The lines' net summed: what the program owes the network for the day (negative: what the network owes). */
  net: number;
}

export interface SettlementReport {
  date: string;
  rows: SettlementRow[];
  /** Per currency, the rows summed. */
  totals: Array<Omit<SettlementRow, 'merchantId'>>;
}

/** One source's entry: a line of a currency and merchant, `count` items of `amount` minor units in all. */
interface Entry {
  currency: string;
  merchantId: string;
  line: SettlementLineName;
  count: number;
  amount: number;
}

/** What the link's approved messages (over the link or imported) posted with the day as their trades' business date. */
async function messageEntries(db: Kysely<DB>, date: string): Promise<Entry[]> {
  const out: Entry[] = [];
  for (const r of await settledMessages(db, date)) {
    const movement: Movement | null = movementOf(r.msg_class, r);
    if (movement) out.push({ currency: r.currency, merchantId: r.merchant_id, line: movement, count: 1, amount: r.amount });
  }
  return out;
}

/** The disputes the network decided that day. */
async function disputeEntries(db: Kysely<DB>, date: string): Promise<Entry[]> {
  return (await decidedDisputes(db, date)).map((d) => ({ ...d, line: d.outcome === 'won' ? 'disputes-won' : 'disputes-lost' }));
}

/**
 * The exceptions queue's clearings (decisions §12.13): held in suspense that day (owed to the network
 * like any clearing: `program:settlement` gained them, from `network:suspense`), and returned to the
 * network by an operator that day (owed back). Posting one to its card later moves nothing with the
 * network, and an authorization advice moves no money with it: neither is a line.
 */
async function exceptionEntries(db: Kysely<DB>, date: string): Promise<Entry[]> {
  const out: Entry[] = [];
  for (const e of await exceptionsOfDay(db, date)) {
    const at = { currency: e.currency, merchantId: e.merchantId, count: 1, amount: e.amount };
    if (e.held) out.push({ ...at, line: 'exceptions-held' });
    if (e.returned) out.push({ ...at, line: 'exceptions-returned' });
  }
  return out;
}

const SOURCES: Array<(db: Kysely<DB>, date: string) => Promise<Entry[]>> = [messageEntries, disputeEntries, exceptionEntries];

type Sums = Map<SettlementLineName, { count: number; amount: number }>;

function add(sums: Sums, line: SettlementLineName, count: number, amount: number): void {
  const s = sums.get(line) ?? { count: 0, amount: 0 };
  s.count += count;
  s.amount += amount;
  sums.set(line, s);
}

/** Minor units summed → the table of lines and its net, in major units once. */
function table(currency: string, sums: Sums): { lines: SettlementLine[]; net: number } {
  let net = 0;
  const lines = SETTLEMENT_LINES.map(({ line, sign }) => {
    const s = sums.get(line) ?? { count: 0, amount: 0 };
    const owed = sign * s.amount;
    net += owed;
    return { line, count: s.count, amount: toMajor(s.amount, currency), net: owed === 0 ? 0 : toMajor(owed, currency) };
  });
  return { lines, net: net === 0 ? 0 : toMajor(net, currency) };
}

export async function settlement(db: Kysely<DB>, date: string): Promise<SettlementReport> {
  const entries = (await Promise.all(SOURCES.map((source) => source(db, date)))).flat();
  const rows = new Map<string, { currency: string; merchantId: string; sums: Sums }>();
  const totals = new Map<string, Sums>();
  for (const e of entries) {
    const key = `${e.currency}\n${e.merchantId}`;
    let row = rows.get(key);
    if (!row) {
      row = { currency: e.currency, merchantId: e.merchantId, sums: new Map() };
      rows.set(key, row);
    }
    add(row.sums, e.line, e.count, e.amount);
    const total = totals.get(e.currency) ?? new Map();
    add(total, e.line, e.count, e.amount);
    totals.set(e.currency, total);
  }
  return {
    date,
    rows: [...rows.values()]
      .sort((a, b) => a.currency.localeCompare(b.currency) || a.merchantId.localeCompare(b.merchantId))
      .map((r) => ({ currency: r.currency, merchantId: r.merchantId, ...table(r.currency, r.sums) })),
    totals: [...totals.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([currency, sums]) => ({ currency, ...table(currency, sums) })),
  };
}
