import { type Kysely, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('merchants')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('name', 'varchar(200)', (c) => c.notNull())
    .addColumn('sign_type', 'varchar(16)', (c) => c.notNull())
    .addColumn('secret_enc', 'text')
    .addColumn('public_key', 'text')
    .addColumn('webhook_secret_enc', 'text', (c) => c.notNull())
    .addColumn('login_free', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('notify_url', 'text')
    .addColumn('status', 'varchar(16)', (c) => c.notNull().defaultTo('active'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('cardholders')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull().references('merchants.id'))
    .addColumn('email', 'varchar(254)', (c) => c.notNull())
    .addColumn('mobile', 'varchar(20)', (c) => c.notNull())
    .addColumn('first_name', 'text', (c) => c.notNull())
    .addColumn('last_name', 'text', (c) => c.notNull())
    .addColumn('date_of_birth', 'varchar(10)', (c) => c.notNull())
    .addColumn('nationality', 'varchar(2)', (c) => c.notNull())
    .addColumn('sex', 'integer', (c) => c.notNull())
    .addColumn('country_code', 'varchar(2)', (c) => c.notNull())
    .addColumn('town', 'text', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('post_code', 'varchar(16)', (c) => c.notNull())
    .addColumn('idno_type', 'integer', (c) => c.notNull())
    .addColumn('idno', 'varchar(40)', (c) => c.notNull())
    .addColumn('idno_key', 'varchar(40)', (c) => c.notNull())
    .addColumn('audit_status', 'integer', (c) => c.notNull())
    .addColumn('err_msg', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // One live cardholder per document and merchant; a rejected one (3) leaves the document free for a
  // new application.
  await db.schema
    .createIndex('cardholders_document_unique')
    .unique()
    .on('cardholders')
    .columns(['merchant_id', 'idno_type', 'idno_key'])
    .where(sql.ref('audit_status'), '<>', 3)
    .execute();
  await db.schema.createIndex('cardholders_merchant_email').on('cardholders').columns(['merchant_id', 'email']).execute();

  await db.schema
    .createTable('holder_reviews')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('holder_id', 'varchar(40)', (c) => c.notNull().references('cardholders.id'))
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('from_status', 'integer', (c) => c.notNull())
    .addColumn('to_status', 'integer', (c) => c.notNull())
    .addColumn('err_msg', 'text', (c) => c.notNull())
    .addColumn('actor', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('holder_reviews_holder').on('holder_reviews').columns(['holder_id', 'created_at']).execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('random_str', 'varchar(32)', (c) => c.notNull())
    .addColumn('kind', 'varchar(8)', (c) => c.notNull())
    .addColumn('operation', 'varchar(64)', (c) => c.notNull())
    .addColumn('fingerprint', 'varchar(64)', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['merchant_id', 'random_str'])
    .execute();
  await db.schema.createIndex('idempotency_keys_created').on('idempotency_keys').column('created_at').execute();
}
