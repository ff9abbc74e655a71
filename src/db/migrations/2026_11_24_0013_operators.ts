import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  // The console's operator accounts (issue 17). A password is kept only as its scrypt hash, the TOTP
  // secret only sealed under the master key; a set-up link only as its SHA-256.
  await db.schema
    .createTable('operators')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('email', 'varchar(254)', (c) => c.notNull().unique())
    .addColumn('role', 'varchar(16)', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('password_hash', 'varchar(256)')
    .addColumn('totp_enc', 'text')
    // The last TOTP time step accepted: a code is good once (RFC 6238 §5.2).
    .addColumn('totp_last_step', 'bigint')
    .addColumn('failed_logins', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('locked_until', 'bigint')
    .addColumn('setup_hash', 'varchar(64)')
    .addColumn('setup_expires_at', 'bigint')
    .addColumn('last_login_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('operators_setup').on('operators').column('setup_hash').execute();
  // A console session: only the SHA-256 of the cookie's value is stored.
  await db.schema
    .createTable('operator_sessions')
    .addColumn('id_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('operator_id', 'varchar(40)', (c) => c.notNull().references('operators.id'))
    .addColumn('origin', 'varchar(200)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('operator_sessions_operator').on('operator_sessions').column('operator_id').execute();
}
