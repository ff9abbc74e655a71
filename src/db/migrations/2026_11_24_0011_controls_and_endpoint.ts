import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  // Spending controls (decisions §11) of a card and of a cardholder, as JSON (src/controls/schemas.ts);
  // null: none.
  await db.schema.alterTable('cards').addColumn('controls', 'text').execute();
  await db.schema.alterTable('cardholders').addColumn('controls', 'text').execute();

  // One counter per spending limit of a card or cardholder (owner_id) and currency: the start of its
  // current interval and what the owner spent in it (src/controls/spending.ts). Read under lock by
  // every authorization the limit counts, rebuilt from the records when the limit is set.
  await db.schema
    .createTable('spend_counters')
    .addColumn('owner_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('limit_key', 'varchar(320)', (c) => c.notNull())
    .addColumn('currency', 'varchar(8)', (c) => c.notNull())
    .addColumn('period_start', 'bigint', (c) => c.notNull())
    .addColumn('used', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('spend_counters_pk', ['owner_id', 'limit_key', 'currency'])
    .execute();

  // The merchant's real-time authorization endpoint (decisions §11): where `authorization.request`
  // goes, how long it may take (ms, at most 5000), and what applies when it does not answer.
  await db.schema.alterTable('merchants').addColumn('authorization_url', 'text').execute();
  await db.schema
    .alterTable('merchants')
    .addColumn('authorization_timeout_ms', 'integer', (c) => c.notNull().defaultTo(2000))
    .execute();
  await db.schema
    .alterTable('merchants')
    .addColumn('authorization_default', 'varchar(8)', (c) => c.notNull().defaultTo('decline'))
    .execute();

  // What the endpoint said about an authorization: approved, declined, timeout or error (null: no
  // endpoint was asked), and how long it took.
  await db.schema.alterTable('authorizations').addColumn('endpoint_outcome', 'varchar(16)').execute();
  await db.schema.alterTable('authorizations').addColumn('endpoint_ms', 'integer').execute();

  // An authorization whose endpoint is being asked: claimed by the first request with its randomStr,
  // so a retry sent meanwhile (on any instance) waits for the one decision instead of asking again.
  await db.schema
    .createTable('authorization_requests')
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('random_str', 'varchar(32)', (c) => c.notNull())
    .addColumn('trade_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('fingerprint', 'varchar(64)', (c) => c.notNull())
    .addColumn('outcome', 'varchar(16)')
    .addColumn('reason', 'varchar(200)')
    .addColumn('endpoint_ms', 'integer')
    .addColumn('deadline_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('authorization_requests_pk', ['merchant_id', 'random_str'])
    .execute();
}
