import { type Kysely, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 28, item 10: the console's overview shows today's forced posts of the card network and the
// cards in debt. Both are few rows of many (every network message, every card): partial indexes,
// so the overview reads only those. The overview's statements repeat these predicates word for word
// (src/trades/network-reads.ts, src/console/queries.ts): SQLite uses a partial index only then.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index network_messages_forced on network_messages (created_at) where answer like '%"forced":true%'`.execute(db);
  await sql`create index cards_in_debt on cards (currency) where debt > 0`.execute(db);
}
