import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { toMajor } from '../money/currency.js';
import { settledMessages } from '../trades/network-reads.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { addExceptions, type ExceptionsLine, exceptionLines, exceptionsMajor, noExceptions } from './settlement-exceptions.js';

/**
 * The day's settlement with the card network (decisions §12.10): per currency and merchant, what
 * the network's messages cleared, refunded and reversed on one business day, and the net the
 * program owes the network (cleared less refunded; a reversal releases a hold and moves no money).
 * Read from the trades the link's approved messages posted (network_messages, code 00), in the
 * card's currency as the journal booked them: the net is the day's movement of the journal's
 * settlement account for those trades (`program:settlement`), which `ledger check` balances.
 */

export interface SettlementRow {
  currency: string;
  merchantId: string;
  /** Payments posted by clearings (0220) and single messages (0200): count and amount (major units). */
  clearedCount: number;
  cleared: number;
  refundedCount: number;
  refunded: number;
  reversedCount: number;
  reversed: number;
  /** Clearings held in suspense above the forced posts' ceilings, and returned to the network (§12.13). */
  exceptions: ExceptionsLine;
  /** cleared − refunded + exceptions held − exceptions returned: what the program owes the network for the day. */
  net: number;
}

export interface SettlementReport {
  date: string;
  rows: SettlementRow[];
  /** Per currency, the rows summed (merchantId absent). */
  totals: Array<Omit<SettlementRow, 'merchantId'>>;
}

export async function settlement(db: Kysely<DB>, date: string): Promise<SettlementReport> {
  const rows = await settledMessages(db, date);
  const minor = new Map<string, Omit<SettlementRow, 'net'>>();
  for (const r of rows) {
    const key = `${r.currency}\n${r.merchant_id}`;
    let row = minor.get(key);
    if (!row) {
      row = {
        currency: r.currency,
        merchantId: r.merchant_id,
        clearedCount: 0,
        cleared: 0,
        refundedCount: 0,
        refunded: 0,
        reversedCount: 0,
        reversed: 0,
        exceptions: noExceptions(),
      };
      minor.set(key, row);
    }
    if (r.msg_class === 'reversal') {
      // The reversal's own record (status 2); a reversal that reversed nothing names the authorization.
      if (r.trade_type === TradeType.authorization && r.trade_status === TradeStatus.reversal) {
        row.reversedCount++;
        row.reversed += r.amount;
      } else if (r.trade_type === TradeType.payment && r.trade_status === TradeStatus.refund) {
        // A reversal of an 0200 or 0220 (or an 0420 after a clearing) returned a payment: money back from the network.
        row.refundedCount++;
        row.refunded += r.amount;
      }
      continue;
    }
    const processing = (JSON.parse(r.request) as Record<string, string>)['3'] ?? '';
    if (processing.startsWith('20')) {
      row.refundedCount++;
      row.refunded += r.amount;
    } else if (r.trade_type === TradeType.payment) {
      row.clearedCount++;
      row.cleared += r.amount;
    }
  }
  for (const [key, line] of await exceptionLines(db, date)) {
    const [currency = '', merchantId = ''] = key.split('\n');
    const row = minor.get(key) ?? {
      currency,
      merchantId,
      clearedCount: 0,
      cleared: 0,
      refundedCount: 0,
      refunded: 0,
      reversedCount: 0,
      reversed: 0,
    };
    minor.set(key, { ...row, exceptions: line });
  }
  const major = (row: Omit<SettlementRow, 'net' | 'merchantId'>) => ({
    ...row,
    cleared: toMajor(row.cleared, row.currency),
    refunded: toMajor(row.refunded, row.currency),
    reversed: toMajor(row.reversed, row.currency),
    exceptions: exceptionsMajor(row.exceptions, row.currency),
    net: toMajor(row.cleared - row.refunded + row.exceptions.held - row.exceptions.returned, row.currency),
  });
  const sorted = [...minor.values()].sort((a, b) => a.currency.localeCompare(b.currency) || a.merchantId.localeCompare(b.merchantId));
  const totals = new Map<string, Omit<SettlementRow, 'net' | 'merchantId'>>();
  for (const r of sorted) {
    const t = totals.get(r.currency) ?? {
      currency: r.currency,
      clearedCount: 0,
      cleared: 0,
      refundedCount: 0,
      refunded: 0,
      reversedCount: 0,
      reversed: 0,
      exceptions: noExceptions(),
    };
    t.clearedCount += r.clearedCount;
    t.cleared += r.cleared;
    t.refundedCount += r.refundedCount;
    t.refunded += r.refunded;
    t.reversedCount += r.reversedCount;
    t.reversed += r.reversed;
    t.exceptions = addExceptions(t.exceptions, r.exceptions);
    totals.set(r.currency, t);
  }
  return { date, rows: sorted.map((r) => ({ ...major(r), merchantId: r.merchantId })), totals: [...totals.values()].map(major) };
}
