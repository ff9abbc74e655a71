import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { exceptionsOfDay } from '../ledger/exceptions-query.js';
import { toMajor } from '../money/currency.js';

/**
 * The settlement's `exceptions` line (decisions §12.13): clearings above the forced posts' ceilings,
 * acknowledged to the network and held in suspense. The day one is held the program owes it to the
 * network like any clearing (`held`: the journal's settlement account gained it, from
 * `network:suspense`); the day an operator returns it, the network owes it back (`returned`). Posting
 * one to its card later moves nothing with the network. So the day's net owed is cleared − refunded
 * + held − returned, the day's movement of `program:settlement`.
 */
export interface ExceptionsLine {
  heldCount: number;
  held: number;
  returnedCount: number;
  returned: number;
}

export const noExceptions = (): ExceptionsLine => ({ heldCount: 0, held: 0, returnedCount: 0, returned: 0 });

/** The day's exceptions per `currency\nmerchantId` (the settlement's row key), in minor units. */
export async function exceptionLines(db: Kysely<DB>, date: string): Promise<Map<string, ExceptionsLine>> {
  const out = new Map<string, ExceptionsLine>();
  for (const e of await exceptionsOfDay(db, date)) {
    const key = `${e.currency}\n${e.merchantId}`;
    const line = out.get(key) ?? noExceptions();
    if (e.held) {
      line.heldCount++;
      line.held += e.amount;
    }
    if (e.returned) {
      line.returnedCount++;
      line.returned += e.amount;
    }
    out.set(key, line);
  }
  return out;
}

export function addExceptions(a: ExceptionsLine, b: ExceptionsLine): ExceptionsLine {
  return {
    heldCount: a.heldCount + b.heldCount,
    held: a.held + b.held,
    returnedCount: a.returnedCount + b.returnedCount,
    returned: a.returned + b.returned,
  };
}

export const exceptionsMajor = (l: ExceptionsLine, currency: string): ExceptionsLine => ({
  ...l,
  held: toMajor(l.held, currency),
  returned: toMajor(l.returned, currency),
});
