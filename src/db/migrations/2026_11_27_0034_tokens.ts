import { type Kysely, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 45 (decisions §15): wallet tokens. A token (Apple Pay, Google Pay, Samsung Pay, a card on
// file) is a row of its own with its history; provisioning requests are kept by their requestId
// (the repeat's answer, and the per-card counts of §15.3 and §15.7: never the PAN); an activation
// code only as a keyed hash; the TSP's notifications by (tokenReferenceId, event, at) so a repeat
// changes nothing; the service's calls to the TSP wait in an outbox until it answers; a merchant's
// token settings (its decision endpoint, the step-up methods it offers).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('tokens')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('card_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('holder_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('token_reference_id', 'varchar(64)', (c) => c.notNull().unique())
    .addColumn('token_requestor_id', 'varchar(11)', (c) => c.notNull())
    .addColumn('token_requestor_name', 'varchar(64)', (c) => c.notNull())
    .addColumn('wallet_provider', 'varchar(16)', (c) => c.notNull())
    .addColumn('token_last4', 'varchar(4)')
    .addColumn('token_expiry', 'varchar(4)')
    .addColumn('device_type', 'varchar(16)')
    .addColumn('device_name', 'varchar(64)')
    .addColumn('device_locale', 'varchar(35)')
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('suspended_by', 'varchar(16)')
    .addColumn('decision', 'varchar(24)', (c) => c.notNull())
    .addColumn('decision_reason', 'varchar(48)')
    .addColumn('auth_methods', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addCheckConstraint('tokens_status', sql`status in ('pending', 'active', 'suspended', 'deleted')`)
    .execute();
  // A card's tokens (the live count of §15.3, the card's freeze and close), a merchant's list, newest first.
  await db.schema.createIndex('tokens_card').on('tokens').columns(['card_id', 'created_at']).execute();
  await db.schema.createIndex('tokens_merchant').on('tokens').columns(['merchant_id', 'created_at']).execute();

  await db.schema
    .createTable('token_history')
    .addColumn('token_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('source', 'varchar(16)', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('reason', 'varchar(200)')
    .addPrimaryKeyConstraint('token_history_pk', ['token_id', 'seq'])
    .execute();

  await db.schema
    .createTable('token_provision_requests')
    .addColumn('request_id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('token_reference_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('card_id', 'varchar(40)')
    .addColumn('token_id', 'varchar(40)')
    .addColumn('decision', 'varchar(24)', (c) => c.notNull())
    .addColumn('reason', 'varchar(48)')
    .addColumn('answer', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // A card's requests of the last 24 hours (20 a day, §15.7; the third within 24 hours, §15.3).
  await db.schema.createIndex('token_provision_card').on('token_provision_requests').columns(['card_id', 'created_at']).execute();
  // The hourly reaping of requests older than 30 days reads them in this order (src/tokens/purge.ts).
  await db.schema.createIndex('token_provision_created').on('token_provision_requests').columns(['created_at', 'request_id']).execute();

  await db.schema
    .createTable('token_activation_codes')
    .addColumn('token_id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('method_id', 'varchar(16)', (c) => c.notNull())
    .addColumn('method_type', 'varchar(16)', (c) => c.notNull())
    .addColumn('code_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('key_version', 'integer', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('sent', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addCheckConstraint('token_activation_attempts', sql`attempts >= 0 and attempts <= 3`)
    .execute();

  await db.schema
    .createTable('token_notifications')
    .addColumn('token_reference_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('event', 'varchar(16)', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('reason', 'varchar(200)')
    .addColumn('outcome', 'varchar(24)', (c) => c.notNull())
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('token_notifications_pk', ['token_reference_id', 'event', 'at'])
    .execute();
  await db.schema.createIndex('token_notifications_received').on('token_notifications').columns(['received_at']).execute();

  await db.schema
    .createTable('tsp_calls')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('token_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('token_reference_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('action', 'varchar(16)', (c) => c.notNull())
    .addColumn('reason', 'varchar(200)')
    .addColumn('status', 'varchar(8)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_at', 'bigint', (c) => c.notNull())
    .addColumn('last_error', 'varchar(500)')
    .addColumn('lease_owner', 'varchar(64)')
    .addColumn('lease_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('done_at', 'bigint')
    .addCheckConstraint('tsp_calls_action', sql`action in ('activate', 'suspend', 'resume', 'delete')`)
    .addCheckConstraint('tsp_calls_status', sql`status in ('pending', 'done', 'failed')`)
    .execute();
  // The sender reads only the calls due; a token's calls go in the order they were made.
  await sql`create index tsp_calls_due on tsp_calls (next_at) where status = 'pending'`.execute(db);
  await db.schema.createIndex('tsp_calls_token').on('tsp_calls').columns(['token_id', 'created_at']).execute();

  await db.schema
    .createTable('merchant_token_settings')
    .addColumn('merchant_id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('decision_url', 'text')
    .addColumn('methods', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}
