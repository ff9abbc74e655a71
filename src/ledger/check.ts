import { type Kysely, sql } from 'kysely';
import { counterProblems } from '../controls/spending.js';
import type { Database } from '../db/index.js';
import type { DB } from '../db/schema.js';
import { countTrades, heldByCard, tradesPerDay, unmatchedTradeIds } from '../trades/books.js';
import { checkDisputes } from './dispute-check.js';
import { checkExceptions } from './exceptions-check.js';
import { checkCaps, checkFrozenSpending, checkFunding, checkStatements } from './funding-check.js';

export interface LedgerReport {
  entries: number;
  postings: number;
  cards: number;
  trades: number;
  /**
   * Per currency, what cardholders owe (forced posts beyond their balance, decisions §12.7), in
   * minor units: the merchants' exposure. Not a problem; only currencies with a debt.
   */
  debt: Record<string, number>;
  /** Each broken invariant, in words; empty when the books are right. */
  problems: string[];
}

/**
 * Checks the books against their invariants (docs/transactions.md), for an operator
 * (`cardprogram ledger check`) and for the tests that crash the service on purpose:
 *
 * 1. every journal entry sums to zero in its currency;
 * 2. each card's cached balances are the replay of its journal accounts (available, and
 *    available + held for the ledger balance);
 * 3. no balance is negative, and no card's held account is; a card's debt (what forced posts took
 *    beyond its balance, decisions §12.7) is the replay of its debt account, not negative, and only
 *    on a card with nothing available (money coming to a card pays its debt first);
 * 4. what a card's transactions say they hold is what its held account holds;
 * 5. the per-day counts that serve the transaction list equal the transactions;
 * 6. no card holds more than the cap, and nothing was spent (authorization, withdrawal, transfer
 *    out) on a card after it was frozen or closed (`funding-check.ts`);
 * 7. each merchant's funding balance is the replay of its journal account and not negative; the
 *    capital account is what the operators' funding records say; and per currency, merchant
 *    funding + cards + settlement + fees + the network's side of disputes = what operators funded
 *    (money is conserved);
 * 8. each spending limit's counter holds what the records say was spent in its interval;
 * 9. on PostgreSQL, where `trades` is partitioned by month, every trade's id is claimed once in
 *    `trade_ids` with its business date, and every claim has its trade (ids unique across months);
 * 10. the network's side of disputes (`dispute-check.ts`);
 * 11. the suspense account is what the open exceptions hold (`exceptions-check.ts`, decisions §12.13).
 *
 * It reads in one read-only snapshot (REPEATABLE READ on PostgreSQL; on SQLite in WAL mode the read
 * batch's one read transaction, `database.read`), so a live service's commits meanwhile cannot make sound books look broken.
 */
export async function checkLedger(database: Database): Promise<LedgerReport> {
  if (database.dialect === 'postgres') {
    return database.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (tx) => {
        await sql`set transaction read only`.execute(tx);
        return checkBooks(tx);
      });
  }
  return database.read((db) => checkBooks(db));
}

/** Invariant 9 (PostgreSQL): `trade_ids` claims each trade's id once, with the trade's business date. */
async function checkTradeIds(db: Kysely<DB>): Promise<string[]> {
  return (await unmatchedTradeIds(db)).map((r) =>
    r.claimed === null
      ? `trade ${r.id} (${r.business_date}): its id is not claimed in trade_ids with its business date`
      : `trade_ids claims ${r.id} for ${r.claimed}, and there is no such trade`,
  );
}

async function checkBooks(db: Kysely<DB>): Promise<LedgerReport> {
  const problems: string[] = [];
  const count = async (table: 'ledger_postings' | 'cards') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const entries = Number(
    (await db.selectFrom('ledger_postings').select(sql<number>`count(distinct entry_id)`.as('n')).executeTakeFirstOrThrow()).n,
  );

  const unbalanced = await db
    .selectFrom('ledger_postings')
    .select(['entry_id', 'currency', sql<number>`sum(amount)`.as('s')])
    .groupBy(['entry_id', 'currency'])
    .having(sql`sum(amount)`, '<>', 0)
    .execute();
  for (const u of unbalanced) problems.push(`journal entry ${u.entry_id} sums to ${Number(u.s)} ${u.currency}, not 0`);

  const accounts = new Map<string, number>();
  for (const r of await db
    .selectFrom('ledger_postings')
    .select(['account', sql<number>`sum(amount)`.as('s')])
    .where('account', 'like', 'card:%')
    .groupBy('account')
    .execute()) {
    accounts.set(r.account, Number(r.s));
  }
  const heldByTrades = await heldByCard(db);
  const cards = await db.selectFrom('cards').select(['id', 'currency', 'available_balance', 'ledger_balance', 'debt']).execute();
  const debt: Record<string, number> = {};
  for (const card of cards) {
    const available = accounts.get(`card:${card.id}:available`) ?? 0;
    const held = accounts.get(`card:${card.id}:held`) ?? 0;
    const owed = -(accounts.get(`card:${card.id}:debt`) ?? 0);
    const cardDebt = Number(card.debt);
    if (cardDebt !== owed) problems.push(`card ${card.id}: debt ${cardDebt}, its journal replays to ${owed}`);
    if (cardDebt < 0) problems.push(`card ${card.id}: debt ${cardDebt} is negative`);
    if (cardDebt > 0 && card.available_balance !== 0)
      problems.push(`card ${card.id}: a debt of ${cardDebt} beside an available balance of ${card.available_balance}`);
    if (cardDebt > 0) debt[card.currency] = (debt[card.currency] ?? 0) + cardDebt;
    if (card.available_balance !== available)
      problems.push(`card ${card.id}: available balance ${card.available_balance}, its journal replays to ${available}`);
    if (card.ledger_balance !== available + held)
      problems.push(`card ${card.id}: ledger balance ${card.ledger_balance}, its journal replays to ${available + held}`);
    if (card.available_balance < 0) problems.push(`card ${card.id}: available balance ${card.available_balance} is negative`);
    if (held < 0) problems.push(`card ${card.id}: held account ${held} is negative`);
    const claimed = heldByTrades.get(card.id) ?? 0;
    if (claimed !== held) problems.push(`card ${card.id}: its authorizations hold ${claimed}, its held account ${held}`);
  }
  const known = new Set(cards.map((c) => c.id));
  for (const account of accounts.keys()) {
    const cardId = account.split(':')[1] ?? '';
    if (!known.has(cardId)) problems.push(`journal account ${account} belongs to no card`);
  }
  problems.push(
    ...(await checkCaps(db)),
    ...(await checkFrozenSpending(db)),
    ...(await checkFunding(db)),
    ...(await checkStatements(db)),
    ...(await counterProblems(db)),
    ...(await checkDisputes(db)),
    ...(await checkExceptions(db)),
  );
  problems.push(...(await checkTradeIds(db)));

  const counted = await db
    .selectFrom('trade_day_counts')
    .select(['card_id', 'business_date', 'trade_status', 'n'])
    .where('n', '<>', 0)
    .execute();
  const actual = await tradesPerDay(db);
  const key = (r: { card_id: string; business_date: string; trade_status: number }) =>
    `${r.card_id} ${r.business_date} status ${r.trade_status}`;
  const want = new Map(actual.map((r) => [key(r), Number(r.n)]));
  const have = new Map(counted.map((r) => [key(r), Number(r.n)]));
  for (const k of new Set([...want.keys(), ...have.keys()])) {
    if ((want.get(k) ?? 0) !== (have.get(k) ?? 0))
      problems.push(`day count for ${k} is ${have.get(k) ?? 0}, there are ${want.get(k) ?? 0} transactions`);
  }

  return { entries, postings: await count('ledger_postings'), cards: cards.length, trades: await countTrades(db), debt, problems };
}
