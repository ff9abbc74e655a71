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
    .addColumn('business_date', 'varchar(10)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // The card page lists a card's declines newest first, by day then time (src/page/activity.ts).
  await db.schema
    .createIndex('authorizations_card')
    .on('authorizations')
    .columns(['card_id', 'approved', 'business_date', 'created_at'])
    .execute();
  // The declines recorded so far, with the reason their result code stands for, listed on their
  // UTC day (computed here, the same on both databases), a page at a time.
  const reasons: Record<string, string> = { '2724': 'card_inactive', '2725': 'insufficient_funds' };
  for (let after = ''; ; ) {
    const rows = await db.selectFrom('auth_declines').selectAll().where('id', '>', after).orderBy('id').limit(500).execute();
    if (rows.length === 0) break;
    await db
      .insertInto('authorizations')
      .values(
        rows.map((r) => ({
          id: r.id,
          merchant_id: r.merchant_id,
          card_id: r.card_id,
          approved: 0,
          currency: r.currency,
          amount: r.amount,
          currency_txn: r.currency_txn,
          txn_amount: r.txn_amount,
          decline_reason: reasons[r.reason_code] ?? null,
          decline_code: r.reason_code,
          message: r.reason,
          remark: r.remark,
          business_date: new Date(Number(r.created_at)).toISOString().slice(0, 10),
          created_at: r.created_at,
        })),
      )
      .execute();
    after = rows[rows.length - 1]?.id as string;
  }
  await db.schema.dropTable('auth_declines').execute();
  // And the approvals so far (their 150 trades), without acceptor data: none was sent then.
  await sql`
    insert into authorizations
      (id, merchant_id, card_id, approved, currency, amount, currency_txn, txn_amount,
       decline_reason, decline_code, message, remark, business_date, created_at)
    select id, merchant_id, card_id, 1, currency, amount, currency_txn, txn_amount,
       null, null, 'Approved', remark, business_date, created_at
    from trades where trade_type = 150`.execute(db);
}
