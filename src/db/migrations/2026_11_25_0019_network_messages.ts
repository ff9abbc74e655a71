import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  // Every message of the card network link that acted (decisions §12.6): its identity (class, field
  // 32, field 11, field 7), a keyed hash of its content, and its first answer. Claimed in the same
  // transaction as its effect: a retransmission, on any instance and after any restart, finds it
  // and gets the same answer; the same identity with other content is answered 94. The stored copy
  // of the message keeps the fields of §12.3 only, with the PAN masked and no CVV2 (§12.12).
  await db.schema
    .createTable('network_messages')
    .addColumn('msg_class', 'varchar(16)', (c) => c.notNull())
    .addColumn('acquirer', 'varchar(11)', (c) => c.notNull())
    .addColumn('stan', 'varchar(6)', (c) => c.notNull())
    .addColumn('transmitted', 'varchar(10)', (c) => c.notNull())
    .addColumn('content_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('mti', 'varchar(4)', (c) => c.notNull())
    .addColumn('merchant_id', 'varchar(32)')
    .addColumn('card_id', 'varchar(40)')
    .addColumn('trade_id', 'varchar(40)')
    .addColumn('response_code', 'varchar(2)', (c) => c.notNull())
    .addColumn('answer', 'text', (c) => c.notNull())
    .addColumn('request', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('network_messages_pk', ['msg_class', 'acquirer', 'stan', 'transmitted'])
    .execute();
  // A message by the trade it produced (disputes, tradeQuery's origin).
  await db.schema.createIndex('network_messages_trade').on('network_messages').column('trade_id').execute();
}
