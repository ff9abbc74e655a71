import { type Kysely, PostgresAdapter } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;

  // Data keys (AES-256), each sealed under the master key. Several per purpose: the newest encrypts,
  // older ones still decrypt, so keys rotate without re-encrypting everything at once.
  await db.schema
    .createTable('data_keys')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('purpose', 'varchar(16)', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('key_enc', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('data_keys_purpose_version', ['purpose', 'version'])
    .execute();

  await db.schema
    .createTable('cards')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull().references('merchants.id'))
    .addColumn('holder_id', 'varchar(40)', (c) => c.notNull().references('cardholders.id'))
    .addColumn('currency', 'varchar(8)', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('pan_enc', 'text', (c) => c.notNull())
    .addColumn('pan_key_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('pan_hash', 'varchar(64)', (c) => c.notNull().unique())
    .addColumn('pan_first6', 'varchar(6)', (c) => c.notNull())
    .addColumn('pan_last4', 'varchar(4)', (c) => c.notNull())
    .addColumn('pan_length', 'integer', (c) => c.notNull())
    .addColumn('expiry_month', 'integer', (c) => c.notNull())
    .addColumn('expiry_year', 'integer', (c) => c.notNull())
    .addColumn('available_balance', 'bigint', (c) => c.notNull())
    .addColumn('ledger_balance', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('cards_merchant_holder').on('cards').columns(['merchant_id', 'holder_id']).execute();

  // The listed transaction records (interface §2.1). seq orders records created on the same day.
  await db.schema
    .createTable('trades')
    .addColumn('seq', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('id', 'varchar(40)', (c) => c.notNull().unique())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('card_id', 'varchar(40)', (c) => c.notNull().references('cards.id'))
    .addColumn('trade_type', 'integer', (c) => c.notNull())
    .addColumn('trade_status', 'integer', (c) => c.notNull())
    .addColumn('currency', 'varchar(8)', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('fee', 'bigint', (c) => c.notNull())
    .addColumn('currency_txn', 'varchar(8)', (c) => c.notNull())
    .addColumn('txn_amount', 'bigint', (c) => c.notNull())
    .addColumn('business_date', 'varchar(10)', (c) => c.notNull())
    .addColumn('auth_code', 'varchar(6)', (c) => c.notNull())
    .addColumn('remark', 'text', (c) => c.notNull())
    .addColumn('original_id', 'varchar(40)')
    // For an authorization: the amount still held. For a payment: the amount already refunded.
    .addColumn('held', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('refunded', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // Covers the list's seek: card, day range, newest first, status filter, without touching rows.
  await db.schema.createIndex('trades_card_day_seq').on('trades').columns(['card_id', 'business_date', 'seq', 'trade_status']).execute();
  await db.schema.createIndex('trades_original').on('trades').column('original_id').execute();

  // Per card, per day, per status: how many records. Kept in the same transaction as every trade
  // insert or status change, so `total` and the page seek cost O(days), not O(trades).
  await db.schema
    .createTable('trade_day_counts')
    .addColumn('card_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('business_date', 'varchar(10)', (c) => c.notNull())
    .addColumn('trade_status', 'integer', (c) => c.notNull())
    .addColumn('n', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('trade_day_counts_pk', ['card_id', 'business_date', 'trade_status'])
    .execute();

  // The double-entry journal: every entry's postings sum to zero per currency.
  await db.schema
    .createTable('ledger_postings')
    .addColumn('id', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('entry_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('trade_id', 'varchar(40)')
    .addColumn('account', 'varchar(80)', (c) => c.notNull())
    .addColumn('currency', 'varchar(8)', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('ledger_postings_account').on('ledger_postings').columns(['account', 'currency']).execute();
  await db.schema.createIndex('ledger_postings_entry').on('ledger_postings').column('entry_id').execute();

  // Declined authorizations: kept for audit and disputes, never listed as trades.
  await db.schema
    .createTable('auth_declines')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('card_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('currency', 'varchar(8)', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('currency_txn', 'varchar(8)', (c) => c.notNull())
    .addColumn('txn_amount', 'bigint', (c) => c.notNull())
    .addColumn('reason_code', 'varchar(8)', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('remark', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('auth_declines_card').on('auth_declines').columns(['card_id', 'created_at']).execute();
}
