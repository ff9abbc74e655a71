import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  // A merchant's own host names for the card page (issue 5). The certificate and its private key
  // are optional: without them TLS is ended in front of the service. The key is sealed under the
  // master key, bound to its host name.
  await db.schema
    .createTable('merchant_domains')
    .addColumn('host', 'varchar(253)', (c) => c.primaryKey())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull().references('merchants.id'))
    .addColumn('cert_pem', 'text')
    .addColumn('key_enc', 'text')
    .addColumn('cert_not_after', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('merchant_domains_merchant').on('merchant_domains').columns(['merchant_id', 'host']).execute();

  // Every time the page showed a card's full number: who (the page session), which card, when.
  await db.schema
    .createTable('card_reveals')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('card_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('session_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('host', 'varchar(253)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('card_reveals_card').on('card_reveals').columns(['card_id', 'created_at']).execute();
}
