import { type Kysely, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 39, point 10 (decisions §12.13): a forced post above its ceilings is acknowledged but held
// in suspense (`network:suspense` in the journal), one exception per network message, until an
// operator posts it to the card or returns it to the network. `suspended` is what the suspense
// account holds for it while it is open (a clearing's amount; 0 for an authorization advice, whose
// hold moves no money); `ledger check` proves the account is the open exceptions' total. The status
// moves open → posted | returned once, by an update conditional on `open` (checked by its row count).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('network_exceptions')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    // The message's identity (decisions §12.6) and its MTI.
    .addColumn('msg_class', 'varchar(16)', (c) => c.notNull())
    .addColumn('acquirer', 'varchar(16)', (c) => c.notNull())
    .addColumn('stan', 'varchar(8)', (c) => c.notNull())
    .addColumn('transmitted', 'varchar(12)', (c) => c.notNull())
    .addColumn('mti', 'varchar(4)', (c) => c.notNull())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('card_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('currency', 'varchar(8)', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('currency_txn', 'varchar(8)', (c) => c.notNull())
    .addColumn('txn_amount', 'bigint', (c) => c.notNull())
    .addColumn('suspended', 'bigint', (c) => c.notNull())
    .addColumn('original_id', 'varchar(40)')
    .addColumn('details', 'text', (c) => c.notNull())
    .addColumn('reason', 'varchar(300)', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('business_date', 'varchar(10)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('decided_by', 'varchar(120)')
    .addColumn('decided_at', 'bigint')
    .addColumn('decided_date', 'varchar(10)')
    .addColumn('trade_id', 'varchar(40)')
    .addCheckConstraint('network_exceptions_status', sql`status in ('open', 'posted', 'returned')`)
    .addCheckConstraint('network_exceptions_amount', sql`amount > 0 and suspended >= 0 and suspended <= amount`)
    .execute();
  // One exception per message: the message's claim (network_messages) is the first guard, this the last.
  await db.schema
    .createIndex('network_exceptions_message')
    .on('network_exceptions')
    .columns(['msg_class', 'acquirer', 'stan', 'transmitted'])
    .unique()
    .execute();
  // The queue (open first, oldest first), the gauge, and the settlement's days.
  await db.schema.createIndex('network_exceptions_status').on('network_exceptions').columns(['status', 'created_at']).execute();
  await db.schema.createIndex('network_exceptions_day').on('network_exceptions').column('business_date').execute();
  await db.schema.createIndex('network_exceptions_decided_day').on('network_exceptions').column('decided_date').execute();
}
