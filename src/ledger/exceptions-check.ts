import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { Account } from './journal.js';

/**
 * Invariant 11 (the exceptions queue, decisions §12.13): the suspense account (`network:suspense`)
 * replays, per currency, to minus what the open exceptions hold (`suspended`), so every advice held
 * for an operator is in it, and every one posted or returned has left it; and each exception's own
 * entries (traced by its id) leave it holding that: what it held while open, nothing once returned.
 * Conservation (invariant 7, funding-check.ts) counts the suspense account with the rest.
 */
export async function checkExceptions(db: Kysely<DB>): Promise<string[]> {
  const problems: string[] = [];
  const side = await db
    .selectFrom('ledger_postings')
    .select(['currency', sql<number>`sum(amount)`.as('s')])
    .where('account', '=', Account.suspense)
    .groupBy('currency')
    .execute();
  const open = await db
    .selectFrom('network_exceptions')
    .select(['currency', sql<number>`sum(suspended)`.as('s')])
    .where('status', '=', 'open')
    .groupBy('currency')
    .execute();
  const journal = new Map(side.map((r) => [r.currency, -Number(r.s)]));
  const records = new Map(open.map((r) => [r.currency, Number(r.s)]));
  for (const c of new Set([...journal.keys(), ...records.keys()])) {
    if ((journal.get(c) ?? 0) !== (records.get(c) ?? 0))
      problems.push(`${Account.suspense}: open exceptions hold ${records.get(c) ?? 0} ${c}, the journal says ${journal.get(c) ?? 0}`);
  }
  // Each exception's own entries: held (−suspended), and, once returned, given back (0). A posted one's
  // way out is its trade's entry (the payment drawn from suspense), counted in the sum above.
  const traced = await db
    .selectFrom('ledger_postings as p')
    .innerJoin('network_exceptions as e', 'e.id', 'p.trade_id')
    .select(['e.id', 'e.status', 'e.suspended', sql<number>`sum(p.amount)`.as('s')])
    .where('p.account', '=', Account.suspense)
    .groupBy(['e.id', 'e.status', 'e.suspended'])
    .execute();
  for (const r of traced) {
    const want = r.status === 'returned' ? 0 : -Number(r.suspended);
    if (Number(r.s) !== want)
      problems.push(`exception ${r.id} (${r.status}): its entries leave ${Number(r.s)} in ${Account.suspense}, not ${want}`);
  }
  return problems;
}
