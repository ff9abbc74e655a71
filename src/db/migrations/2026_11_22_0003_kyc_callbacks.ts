import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  // KYC share requests (interface 4.3). The personal data is sealed (AES-256-GCM under the master
  // key): it holds ID numbers and, for US residents, social security numbers.
  await db.schema
    .createTable('kyc_requests')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull().references('merchants.id'))
    .addColumn('request_no', 'varchar(64)', (c) => c.notNull())
    .addColumn('email', 'varchar(254)', (c) => c.notNull())
    .addColumn('fingerprint', 'varchar(64)', (c) => c.notNull())
    .addColumn('platform', 'varchar(32)', (c) => c.notNull())
    .addColumn('callback_url', 'text', (c) => c.notNull())
    .addColumn('data_enc', 'text', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('holder_id', 'varchar(40)')
    .addColumn('auto_decide_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('kyc_requests_request_no', ['merchant_id', 'request_no'])
    .addUniqueConstraint('kyc_requests_email', ['merchant_id', 'email'])
    .execute();
  await db.schema.createIndex('kyc_requests_auto').on('kyc_requests').columns(['auto_decide_at']).execute();

  // Per-subject counters: each event of a subject (a KYC request, a cardholder, a card) gets the next
  // number, so a receiver can order what arrives out of order.
  await db.schema
    .createTable('callback_sequences')
    .addColumn('subject', 'varchar(80)', (c) => c.primaryKey())
    .addColumn('last', 'bigint', (c) => c.notNull())
    .execute();

  // The outbox: written in the same transaction as the state change it reports, delivered at least
  // once by the worker, with a lease so that several workers never send one attempt twice at once.
  await db.schema
    .createTable('callback_events')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('type', 'varchar(32)', (c) => c.notNull())
    .addColumn('subject', 'varchar(80)', (c) => c.notNull())
    .addColumn('sequence', 'bigint', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('lease_owner', 'varchar(40)')
    .addColumn('lease_until', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('delivered_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('callback_events_due').on('callback_events').columns(['status', 'next_attempt_at']).execute();
  await db.schema.createIndex('callback_events_merchant').on('callback_events').columns(['merchant_id', 'created_at']).execute();

  // Every delivery attempt, kept for the operator.
  await db.schema
    .createTable('callback_attempts')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('event_id', 'varchar(40)', (c) => c.notNull().references('callback_events.id'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('http_status', 'integer')
    .addColumn('error', 'text')
    .addColumn('response_excerpt', 'text')
    .execute();
  await db.schema.createIndex('callback_attempts_event').on('callback_attempts').columns(['event_id', 'attempt']).execute();
}
