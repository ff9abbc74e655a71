import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.

/**
 * Issue 26, findings 2 and 9.
 *
 * Credential generations (26.2): `merchants.credential_gen` moves on at every roll of the signing
 * credential and at every disable; each page link and session keeps the generation of the
 * credential it was minted under, and opens nothing once the merchant's has moved on (existing rows
 * start at 1, the merchants' too: they stay valid).
 *
 * The KYC e-mail sealed (26.9): `email_enc` (AES-256-GCM under the master key, bound to the request)
 * and `email_hash` (the keyed hash cardholders' e-mails are found by) replace the plain `email`,
 * which the sealing step at start empties (a migration has no master key: as in 0007). The one
 * request per merchant and e-mail rule moves from the plain column to the hash. SQLite cannot drop
 * a table's unique constraint, so there the table is built again with the same rows.
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['merchants', 'page_links', 'page_sessions']) {
    await db.schema
      .alterTable(table)
      .addColumn('credential_gen', 'integer', (c) => c.notNull().defaultTo(1))
      .execute();
  }

  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`alter table kyc_requests drop constraint kyc_requests_email`.execute(db);
    await db.schema.alterTable('kyc_requests').addColumn('email_enc', 'text').execute();
    await db.schema.alterTable('kyc_requests').addColumn('email_hash', 'varchar(64)').execute();
  } else {
    await db.schema
      .createTable('kyc_requests_0015')
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
      .addColumn('email_enc', 'text')
      .addColumn('email_hash', 'varchar(64)')
      .addUniqueConstraint('kyc_requests_request_no', ['merchant_id', 'request_no'])
      .execute();
    const columns = sql.raw(
      'id, merchant_id, request_no, email, fingerprint, platform, callback_url, data_enc, status, reason, holder_id, auto_decide_at, created_at, updated_at',
    );
    await sql`insert into kyc_requests_0015 (${columns}) select ${columns} from kyc_requests`.execute(db);
    await db.schema.dropTable('kyc_requests').execute();
    await sql`alter table kyc_requests_0015 rename to kyc_requests`.execute(db);
    await db.schema.createIndex('kyc_requests_auto').on('kyc_requests').columns(['auto_decide_at']).execute();
  }
  // NULLs are distinct in a unique index on both databases: rows not sealed yet do not collide.
  await db.schema
    .createIndex('kyc_requests_merchant_email_hash')
    .unique()
    .on('kyc_requests')
    .columns(['merchant_id', 'email_hash'])
    .execute();
}
