import { type Kysely, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 29 (decisions §13): disputes and chargebacks. A dispute names one cleared transaction of a
// merchant's card; its explanation and its evidence files are sealed at rest (bound to the dispute),
// the files kept with their size and SHA-256 for the network's export. Its history is one row per
// change of status or money. A merchant's `dispute_provisional_credit` (0 off, 1 on) says whether a
// submission credits the card at once (§13.3).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('disputes')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('card_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('trade_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('reason', 'varchar(32)', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'varchar(8)', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('explanation_enc', 'text')
    .addColumn('clearing_date', 'varchar(10)', (c) => c.notNull())
    .addColumn('deadline_at', 'bigint', (c) => c.notNull())
    .addColumn('provisional_credit', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('outcome_amount', 'bigint')
    .addColumn('decided_by', 'varchar(80)')
    // Sandbox: when the sandbox's network decides it (its explanation names the outcome); null: never.
    .addColumn('sandbox_decide_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('submitted_at', 'bigint')
    .addColumn('decided_at', 'bigint')
    .addCheckConstraint('disputes_amount_positive', sql`amount > 0`)
    .addCheckConstraint('disputes_credit_range', sql`provisional_credit >= 0 and provisional_credit <= amount`)
    .execute();
  // One open dispute per transaction (§13.2): the last guard under the card's lock, on both databases.
  await sql`create unique index disputes_one_open on disputes (trade_id) where status in ('unsubmitted', 'submitted')`.execute(db);
  await db.schema.createIndex('disputes_merchant_created').on('disputes').columns(['merchant_id', 'created_at']).execute();
  await db.schema.createIndex('disputes_trade').on('disputes').column('trade_id').execute();
  // The sweep (unsubmitted past their deadline), the export (submitted on a day), the sandbox's decisions.
  await db.schema.createIndex('disputes_status_deadline').on('disputes').columns(['status', 'deadline_at']).execute();
  await db.schema.createIndex('disputes_status_submitted').on('disputes').columns(['status', 'submitted_at']).execute();
  await sql`create index disputes_sandbox_due on disputes (sandbox_decide_at) where sandbox_decide_at is not null`.execute(db);

  await db.schema
    .createTable('dispute_evidence')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('dispute_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('file_name', 'varchar(100)', (c) => c.notNull())
    .addColumn('content_type', 'varchar(32)', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('sha256', 'varchar(64)', (c) => c.notNull())
    .addColumn('data_enc', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('dispute_evidence_name', ['dispute_id', 'file_name'])
    .execute();

  await db.schema
    .createTable('dispute_events')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('dispute_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('kind', 'varchar(32)', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('entry_id', 'varchar(40)')
    .addColumn('actor', 'varchar(120)', (c) => c.notNull())
    .addColumn('note', 'varchar(200)', (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dispute_events_dispute').on('dispute_events').columns(['dispute_id', 'created_at']).execute();

  await db.schema
    .alterTable('merchants')
    .addColumn('dispute_provisional_credit', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
