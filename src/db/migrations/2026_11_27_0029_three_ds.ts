import { type Kysely, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 41 (decisions §14): the 3-D Secure access control server. Every AReq is kept (PAN masked,
// the browser's data dropped after 30 days) with its decision and, for a challenge, its state (the
// OTP as a keyed hash, its tries and expiry); a card's low-value exemption counters are a row of
// their own, the first thing an AReq locks; results for the DS wait in a table until it answers;
// the authorizations that carried an authentication's value are listed. A merchant gains its 3-D
// Secure decision endpoint and its challenge method.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('three_ds_authentications')
    .addColumn('acs_trans_id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('merchant_id', 'varchar(32)')
    .addColumn('card_id', 'varchar(40)')
    .addColumn('holder_id', 'varchar(40)')
    .addColumn('message_version', 'varchar(8)', (c) => c.notNull())
    .addColumn('message_category', 'varchar(2)', (c) => c.notNull())
    .addColumn('device_channel', 'varchar(2)', (c) => c.notNull())
    .addColumn('three_ds_server_trans_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('ds_trans_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('ds_reference_number', 'varchar(32)', (c) => c.notNull())
    .addColumn('pan_masked', 'varchar(19)', (c) => c.notNull())
    .addColumn('amount', 'bigint')
    .addColumn('currency', 'varchar(3)')
    .addColumn('exponent', 'integer')
    .addColumn('merchant_name', 'varchar(40)')
    .addColumn('mcc', 'varchar(4)')
    .addColumn('merchant_country', 'varchar(3)')
    .addColumn('challenge_ind', 'varchar(2)')
    .addColumn('notification_url', 'varchar(256)')
    .addColumn('areq', 'text', (c) => c.notNull())
    .addColumn('browser', 'text')
    .addColumn('trans_status', 'varchar(1)', (c) => c.notNull())
    .addColumn('trans_status_reason', 'varchar(2)')
    .addColumn('eci', 'varchar(2)')
    .addColumn('decided_by', 'varchar(16)', (c) => c.notNull())
    .addColumn('endpoint_outcome', 'varchar(16)')
    .addColumn('endpoint_ms', 'integer')
    .addColumn('exempt_eur', 'bigint')
    .addColumn('authentication_type', 'varchar(2)')
    .addColumn('challenge_method', 'varchar(8)')
    .addColumn('challenge_state', 'varchar(8)')
    .addColumn('challenge_expires_at', 'bigint')
    .addColumn('challenge_window_size', 'varchar(2)')
    .addColumn('session_data', 'text')
    .addColumn('otp_hash', 'varchar(64)')
    .addColumn('otp_key_version', 'integer')
    .addColumn('otp_expires_at', 'bigint')
    .addColumn('otp_sent', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('otp_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('oob_result', 'varchar(8)')
    .addColumn('interaction_counter', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('challenge_cancel', 'varchar(2)')
    .addColumn('av_hash', 'varchar(64)')
    .addColumn('av_key_version', 'integer')
    .addColumn('av_issued_at', 'bigint')
    .addColumn('used_trade_id', 'varchar(40)')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addCheckConstraint('three_ds_otp_failures_range', sql`otp_failures >= 0 and otp_failures <= 3`)
    .execute();
  // A card's AReqs of the last hour (the limit of §14.7) and its list, newest first.
  await db.schema.createIndex('three_ds_card_created').on('three_ds_authentications').columns(['card_id', 'created_at']).execute();
  await db.schema.createIndex('three_ds_merchant_created').on('three_ds_authentications').columns(['merchant_id', 'created_at']).execute();
  // An authorization finds its authentication by the value's hash; a value is issued once.
  await sql`create unique index three_ds_av_hash on three_ds_authentications (av_hash) where av_hash is not null`.execute(db);
  // The sweep of challenges left unfinished (N/14) reads only the open ones.
  await sql`create index three_ds_challenge_due on three_ds_authentications (challenge_expires_at) where challenge_state in ('pending', 'open')`.execute(
    db,
  );
  // The purge of browser data after 30 days reads only the rows that still have it, in pages of this order (src/three-ds/purge.ts).
  await sql`create index three_ds_browser_kept on three_ds_authentications (created_at, acs_trans_id) where browser is not null`.execute(
    db,
  );

  await db.schema
    .createTable('three_ds_card_state')
    .addColumn('card_id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('exempt_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('exempt_eur', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('last_challenge_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addCheckConstraint(
      'three_ds_card_state_exempt',
      sql`exempt_count >= 0 and exempt_count <= 5 and exempt_eur >= 0 and exempt_eur <= 10000`,
    )
    .execute();

  await db.schema
    .createTable('three_ds_results')
    .addColumn('acs_trans_id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('rreq_enc', 'text', (c) => c.notNull())
    .addColumn('status', 'varchar(8)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('lease_owner', 'varchar(64)')
    .addColumn('lease_until', 'bigint')
    .addColumn('last_error', 'varchar(500)')
    .addColumn('rres', 'text')
    .addColumn('sent_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await sql`create index three_ds_results_due on three_ds_results (next_attempt_at) where status = 'pending'`.execute(db);

  await db.schema
    .createTable('three_ds_uses')
    .addColumn('acs_trans_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('trade_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('approved', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('three_ds_uses_pk', ['acs_trans_id', 'trade_id'])
    .execute();
  // An authorization's authentication (tradeQuery shows it, decisions §14.5).
  await db.schema.createIndex('three_ds_uses_trade').on('three_ds_uses').column('trade_id').execute();

  await db.schema.alterTable('merchants').addColumn('three_ds_decision_url', 'text').execute();
  await db.schema
    .alterTable('merchants')
    .addColumn('three_ds_challenge_method', 'varchar(8)', (c) => c.notNull().defaultTo('otp'))
    .execute();
}
