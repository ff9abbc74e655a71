import { type Kysely, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 32: an authCode drawn once per card, an operator's credit applied once, a funding statement.
export async function up(db: Kysely<any>): Promise<void> {
  // Every authCode a card has used, claimed in the transaction that draws it (src/ledger/auth-codes.ts).
  // A table of its own: `trades` is partitioned on PostgreSQL, and a unique index there would have
  // to include the partition key (business_date), which would allow a repeat in another month.
  await db.schema
    .createTable('trade_auth_codes')
    .addColumn('card_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('auth_code', 'varchar(6)', (c) => c.notNull())
    .addColumn('trade_id', 'varchar(40)', (c) => c.notNull())
    .addPrimaryKeyConstraint('trade_auth_codes_pk', ['card_id', 'auth_code'])
    .execute();
  // The codes already used: a new draw never repeats them (repeats made before this stay as they were).
  await sql`insert into trade_auth_codes (card_id, auth_code, trade_id)
    select card_id, auth_code, min(id) from trades group by card_id, auth_code`.execute(db);

  // An operator's credit once per idempotency key (the console form's one-time token, the CLI's
  // --idempotency-key): a second insert with the key inserts nothing (NULLs never conflict).
  await db.schema.alterTable('funding_credits').addColumn('idempotency_key', 'varchar(80)').execute();
  await db.schema.createIndex('funding_credits_key').unique().on('funding_credits').columns(['merchant_id', 'idempotency_key']).execute();
  // The repeat check (same merchant, currency, amount and reference within 24 h) reads this.
  await db.schema.createIndex('funding_credits_repeat').on('funding_credits').columns(['merchant_id', 'currency', 'created_at']).execute();

  // The funding statement: one row per movement of a merchant's funding account in one currency,
  // numbered under the balance row's lock (merchant_balances.seq), so the numbers have no gaps, follow
  // the commit order, and each row's balance is the balance after it.
  await db.schema
    .alterTable('merchant_balances')
    .addColumn('seq', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('funding_movements')
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('currency', 'varchar(8)', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('kind', 'varchar(20)', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('balance', 'bigint', (c) => c.notNull())
    .addColumn('reference', 'text', (c) => c.notNull())
    .addColumn('card_id', 'varchar(40)')
    .addColumn('trade_id', 'varchar(40)')
    .addColumn('credit_id', 'varchar(40)')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('funding_movements_pk', ['merchant_id', 'currency', 'seq'])
    .execute();

  // The movements made before this migration, replayed from the journal in posting order.
  const merchantOf = sql`substr(p.account, 10, length(p.account) - 17)`;
  await sql`insert into funding_movements
      (merchant_id, currency, seq, kind, amount, balance, reference, card_id, trade_id, credit_id, created_at)
    select m.merchant_id, m.currency, m.seq, m.kind, m.amount, m.balance, m.reference, m.card_id, m.trade_id, m.credit_id, m.created_at
    from (
      select ${merchantOf} as merchant_id, p.currency,
        row_number() over (partition by p.account, p.currency order by p.id) as seq,
        case
          when f.id is not null and p.amount > 0 then 'credit'
          when f.id is not null then 'debit'
          when t.trade_type = 100 then 'topUp'
          when t.trade_type = 110 and t.remark = 'Card closed' then 'cardClose'
          when t.trade_type = 110 then 'withdrawalReturn'
          when t.trade_type = 500 then 'fee'
          else 'release'
        end as kind,
        p.amount,
        sum(p.amount) over (partition by p.account, p.currency order by p.id rows between unbounded preceding and current row) as balance,
        coalesce(f.reference, t.remark, '') as reference,
        t.card_id, p.trade_id, f.id as credit_id, p.created_at
      from ledger_postings p
      left join funding_credits f on f.entry_id = p.entry_id
      left join trades t on t.id = p.trade_id
      where p.account like 'merchant:%:funding'
    ) m`.execute(db);
  await sql`update merchant_balances set seq = coalesce((select max(seq) from funding_movements f
    where f.merchant_id = merchant_balances.merchant_id and f.currency = merchant_balances.currency), 0)`.execute(db);
}
