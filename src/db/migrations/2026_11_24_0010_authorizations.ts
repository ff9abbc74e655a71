import { type Kysely, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  // Every authorization the network asked for, approved or declined (decisions §11), with the
  // acceptor's data and the decision: read by tradeQuery, carried by the `trade` and
  // `authorization.declined` callbacks. An approved one has the id of its 150 trade; a declined one
  // its own (`dcl_…`) and no trade. It replaces `auth_declines`, which held the declines alone.
  await db.schema
    .createTable('authorizations')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('card_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('approved', 'integer', (c) => c.notNull())
    .addColumn('currency', 'varchar(8)', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('currency_txn', 'varchar(8)', (c) => c.notNull())
    .addColumn('txn_amount', 'bigint', (c) => c.notNull())
    .addColumn('mcc', 'varchar(4)')
    .addColumn('merchant_name', 'varchar(100)')
    .addColumn('merchant_city', 'varchar(40)')
    .addColumn('merchant_country', 'varchar(2)')
    .addColumn('channel', 'varchar(16)')
    .addColumn('decline_reason', 'varchar(32)')
    .addColumn('decline_code', 'varchar(8)')
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('remark', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('authorizations_card').on('authorizations').columns(['card_id', 'created_at']).execute();
  // The declines recorded so far, with the reason their result code stands for.
  await sql`
    insert into authorizations
      (id, merchant_id, card_id, approved, currency, amount, currency_txn, txn_amount,
       decline_reason, decline_code, message, remark, created_at)
    select id, merchant_id, card_id, 0, currency, amount, currency_txn, txn_amount,
       case reason_code when '2724' then 'card_inactive' when '2725' then 'insufficient_funds' else null end,
       reason_code, reason, remark, created_at
    from auth_declines`.execute(db);
  await db.schema.dropTable('auth_declines').execute();
  // And the approvals so far (their 150 trades), without acceptor data: none was sent then.
  await sql`
    insert into authorizations
      (id, merchant_id, card_id, approved, currency, amount, currency_txn, txn_amount,
       decline_reason, decline_code, message, remark, created_at)
    select id, merchant_id, card_id, 1, currency, amount, currency_txn, txn_amount,
       null, null, 'Approved', remark, created_at
    from trades where trade_type = 150`.execute(db);
}
