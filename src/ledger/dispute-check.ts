import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { Account } from './journal.js';

/**
 * Invariant 10 (disputes, decisions §13.3): the network's side of disputes (`network:disputes`)
 * replays, per currency, to minus what won disputes were paid back; and each dispute's provisional
 * credit is the funding debit traced to it (`ledger_postings.trade_id` = the dispute's id), no more,
 * no less. Conservation (invariant 7, funding-check.ts) counts the network's side with the rest.
 */
export async function checkDisputes(db: Kysely<DB>): Promise<string[]> {
  const problems: string[] = [];
  const side = await db
    .selectFrom('ledger_postings')
    .select(['currency', sql<number>`sum(amount)`.as('s')])
    .where('account', '=', Account.disputes)
    .groupBy('currency')
    .execute();
  const won = await db
    .selectFrom('disputes')
    .select(['currency', sql<number>`sum(outcome_amount)`.as('s')])
    .where('status', '=', 'won')
    .groupBy('currency')
    .execute();
  const journal = new Map(side.map((r) => [r.currency, -Number(r.s)]));
  const records = new Map(won.map((r) => [r.currency, Number(r.s)]));
  for (const c of new Set([...journal.keys(), ...records.keys()])) {
    if ((journal.get(c) ?? 0) !== (records.get(c) ?? 0))
      problems.push(
        `${Account.disputes}: won disputes were paid back ${records.get(c) ?? 0} ${c}, the journal says ${journal.get(c) ?? 0}`,
      );
  }
  const debits = await db
    .selectFrom('ledger_postings as p')
    .innerJoin('disputes as d', 'd.id', 'p.trade_id')
    .select(['d.id', sql<number>`sum(p.amount)`.as('s')])
    .where('p.account', 'like', 'merchant:%:funding')
    .where('p.amount', '<', 0)
    .groupBy('d.id')
    .execute();
  const debited = new Map(debits.map((r) => [r.id, -Number(r.s)]));
  const credited = await db.selectFrom('disputes').select(['id', 'provisional_credit']).where('provisional_credit', '>', 0).execute();
  for (const d of credited) {
    if ((debited.get(d.id) ?? 0) !== Number(d.provisional_credit))
      problems.push(`dispute ${d.id}: provisional credit ${d.provisional_credit}, the funding account advanced ${debited.get(d.id) ?? 0}`);
    debited.delete(d.id);
  }
  for (const [id, amount] of debited) problems.push(`dispute ${id}: no provisional credit, the funding account advanced ${amount}`);
  return problems;
}
