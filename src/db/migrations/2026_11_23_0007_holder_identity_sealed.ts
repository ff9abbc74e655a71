import type { Kysely } from 'kysely';

/**
 * Cardholders' identity data sealed at rest (src/holders/identity.ts): one encrypted column bound to
 * the holder id, and a keyed hash of the e-mail to find a holder by it. The plaintext columns stay
 * (emptied by the sealing step that runs at start, after the migrations, with the master key, which
 * a migration does not have); `idno_key` then holds a keyed hash of the document number.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('cardholders').addColumn('identity_enc', 'text').execute();
  await db.schema.alterTable('cardholders').addColumn('email_hash', 'varchar(64)').execute();
  await db.schema.dropIndex('cardholders_merchant_email').execute();
  await db.schema.createIndex('cardholders_merchant_email_hash').on('cardholders').columns(['merchant_id', 'email_hash']).execute();
}
