import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { spendingTrades } from '../trades/books.js';
import { TradeType } from '../trades/types.js';
import { Account, MAX_CARD_BALANCE } from './journal.js';

/** Invariant 6a: no card's balance is above the cap (docs/architecture.md, Concurrency). */
export async function checkCaps(db: Kysely<DB>): Promise<string[]> {
  const over = await db.selectFrom('cards').select(['id', 'ledger_balance']).where('ledger_balance', '>', MAX_CARD_BALANCE).execute();
  return over.map((c) => `card ${c.id}: ledger balance ${c.ledger_balance} is above the cap of ${MAX_CARD_BALANCE}`);
}

/**
 * Invariant 6b: nothing spent on a card after it was frozen or closed and before it was active
 * again. A status change records the largest trade seq when it happened, under the card's lock: a
 * trade of the card with a larger seq came after it.
 */
export async function checkFrozenSpending(db: Kysely<DB>): Promise<string[]> {
  const events = await db.selectFrom('card_status_events').select(['card_id', 'status', 'after_seq']).orderBy('id').execute();
  if (events.length === 0) return [];
  const byCard = new Map<string, Array<{ status: string; after: number }>>();
  for (const e of events) byCard.set(e.card_id, [...(byCard.get(e.card_id) ?? []), { status: e.status, after: Number(e.after_seq) }]);
  const spending = await spendingTrades(db, [...byCard.keys()]);
  // A withdrawal whose money went to the merchant's funding account is a closing card's balance going
  // back (src/cards/close.ts), not spending: the journal, not the record's text, says where it went.
  const withdrawals = spending.filter((t) => t.trade_type === TradeType.withdrawal).map((t) => t.id);
  const returned = new Set(
    withdrawals.length === 0
      ? []
      : (
          await db
            .selectFrom('ledger_postings')
            .select('trade_id')
            .where('trade_id', 'in', withdrawals)
            .where('account', 'like', 'merchant:%:funding')
            .where('amount', '>', 0)
            .execute()
        ).map((p) => p.trade_id),
  );
  // An authorization advice (0120) is a forced post (decisions §12.7): the network approved it, on
  // whatever status; the message that claimed it says so.
  const authorizations = spending.filter((t) => t.trade_type === TradeType.authorization).map((t) => t.id);
  const forced = new Set(
    authorizations.length === 0
      ? []
      : (
          await db
            .selectFrom('network_messages')
            .select('trade_id')
            .where('trade_id', 'in', authorizations)
            .where('mti', 'in', ['0120', '0121'])
            .execute()
        ).map((m) => m.trade_id),
  );
  const problems: string[] = [];
  for (const t of spending.filter((s) => !returned.has(s.id) && !forced.has(s.id))) {
    // The card's status when the trade was booked: that of the last change before it.
    let status = 'active';
    for (const e of byCard.get(t.card_id) ?? []) if (e.after < Number(t.seq)) status = e.status;
    if (status !== 'active') problems.push(`card ${t.card_id}: ${t.id} (type ${t.trade_type}) was booked while the card was ${status}`);
  }
  return problems;
}

/**
 * Invariant 7: funding accounts and conservation. What operators funded is the capital account,
 * negated (plus the old shared `program:funding` account that top-ups drew from before merchants had
 * funding accounts); every unit of it is in a merchant's funding account, on a card (available or
 * held, less its debt), in settlement, in fees, on the network's side of disputes (what won
 * disputes drew from it, negative) or in suspense (advices held for an operator, negative: their
 * money is in settlement already).
 */
export async function checkFunding(db: Kysely<DB>): Promise<string[]> {
  const problems: string[] = [];
  const sums = await db
    .selectFrom('ledger_postings')
    .select(['account', 'currency', sql<number>`sum(amount)`.as('s')])
    .groupBy(['account', 'currency'])
    .execute();
  const balances = await db.selectFrom('merchant_balances').select(['merchant_id', 'currency', 'available']).execute();
  const cached = new Map(balances.map((b) => [`${Account.merchantFunding(b.merchant_id)} ${b.currency}`, Number(b.available)]));
  const funded = new Map<string, number>();
  const held = new Map<string, number>();
  const add = (m: Map<string, number>, c: string, v: number) => m.set(c, (m.get(c) ?? 0) + v);
  const replayed = new Set<string>();
  for (const r of sums) {
    const s = Number(r.s);
    if (r.account === Account.capital || r.account === Account.funding) add(funded, r.currency, -s);
    else if (
      /^card:.+:(available|held|debt)$/.test(r.account) ||
      r.account === Account.settlement ||
      r.account === Account.fees ||
      r.account === Account.disputes ||
      r.account === Account.suspense
    )
      add(held, r.currency, s);
    else if (/^merchant:.+:funding$/.test(r.account)) {
      add(held, r.currency, s);
      const key = `${r.account} ${r.currency}`;
      replayed.add(key);
      if ((cached.get(key) ?? 0) !== s)
        problems.push(`${r.account}: ${r.currency} balance ${cached.get(key) ?? 0}, its journal replays to ${s}`);
    } else problems.push(`journal account ${r.account} is not an account of the program`);
  }
  for (const [key, v] of cached) {
    if (!replayed.has(key) && v !== 0) problems.push(`${key.split(' ')[0]}: ${key.split(' ')[1]} balance ${v}, its journal replays to 0`);
    if (v < 0) problems.push(`${key.split(' ')[0]}: ${key.split(' ')[1]} balance ${v} is negative`);
  }
  const credits = await db
    .selectFrom('funding_credits')
    .select(['currency', sql<number>`sum(amount)`.as('s')])
    .groupBy('currency')
    .execute();
  const capital = new Map(sums.filter((r) => r.account === Account.capital).map((r) => [r.currency, -Number(r.s)]));
  for (const c of new Set([...capital.keys(), ...credits.map((r) => r.currency)])) {
    const recorded = Number(credits.find((r) => r.currency === c)?.s ?? 0);
    if ((capital.get(c) ?? 0) !== recorded)
      problems.push(`${Account.capital}: operators funded ${recorded} ${c} by their records, the journal says ${capital.get(c) ?? 0}`);
  }
  for (const c of new Set([...funded.keys(), ...held.keys()])) {
    if ((funded.get(c) ?? 0) !== (held.get(c) ?? 0))
      problems.push(
        `${c}: operators funded ${funded.get(c) ?? 0}, but merchant funding, cards, settlement and fees hold ${held.get(c) ?? 0}`,
      );
  }
  return problems;
}

/**
 * Invariant 8 (issue 32): each funding account's statement (docs/funding.md, "The statement") is
 * numbered 1…n without gaps, each line's balance is the one before plus its amount, and its last
 * line is the balance row: a merchant who replays its statement gets its balance.
 */
export async function checkStatements(db: Kysely<DB>): Promise<string[]> {
  const problems: string[] = [];
  const lines = await db
    .selectFrom('funding_movements')
    .select(['merchant_id', 'currency', 'seq', 'amount', 'balance'])
    .orderBy('merchant_id')
    .orderBy('currency')
    .orderBy('seq')
    .execute();
  const last = new Map<string, { seq: number; balance: number }>();
  for (const l of lines) {
    const key = `${l.merchant_id} ${l.currency}`;
    const before = last.get(key) ?? { seq: 0, balance: 0 };
    if (Number(l.seq) !== before.seq + 1) problems.push(`funding statement ${key}: line ${l.seq} follows line ${before.seq}`);
    if (before.balance + Number(l.amount) !== Number(l.balance))
      problems.push(`funding statement ${key}: line ${l.seq} says ${l.balance}, its replay ${before.balance + Number(l.amount)}`);
    last.set(key, { seq: Number(l.seq), balance: Number(l.balance) });
  }
  // Its end: the balance row's number, and the journal's replay (a balance row that is not the
  // journal's replay is checkFunding's to name).
  const rows = await db.selectFrom('merchant_balances').select(['merchant_id', 'currency', 'seq']).execute();
  const journal = await db
    .selectFrom('ledger_postings')
    .select(['account', 'currency', sql<number>`sum(amount)`.as('s')])
    .where('account', 'like', 'merchant:%:funding')
    .groupBy(['account', 'currency'])
    .execute();
  const replay = new Map(journal.map((j) => [`${j.account} ${j.currency}`, Number(j.s)]));
  for (const r of rows) {
    const key = `${r.merchant_id} ${r.currency}`;
    const end = last.get(key) ?? { seq: 0, balance: 0 };
    const sum = replay.get(`${Account.merchantFunding(r.merchant_id)} ${r.currency}`) ?? 0;
    if (end.seq !== Number(r.seq)) problems.push(`funding statement ${key}: ends at line ${end.seq}, the balance row at line ${r.seq}`);
    if (end.balance !== sum) problems.push(`funding statement ${key}: ends with ${end.balance}, its journal replays to ${sum}`);
  }
  return problems;
}
