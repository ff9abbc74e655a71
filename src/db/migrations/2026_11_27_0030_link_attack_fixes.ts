import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 39, the attack pass on the hardened link:
// - `network_exceptions.consumed_by`: an authorization advice (0120) held in suspense whose clearing
//   was posted without it (a forced post on its card) records that clearing (its trade, or the
//   exception it was held as): posting the advice's hold afterwards would charge the card twice,
//   so the operator's post is refused (src/ledger/exceptions.ts).
// - `network_exceptions.held_with`: a refund (0220, processing 20) of a clearing that is itself held
//   in suspense is held too, as an exception of kind `refund` naming the clearing's exception: it is
//   posted or returned with it (or after it), never before.
// - `network_peer_addresses`: the remote addresses (an IPv6 address by its /64) a listed certificate
//   completed its TLS handshake from, so that after a restart the certified peer keeps its reserved
//   share of the link's connections (src/card-network/link/admission.ts).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('network_exceptions').addColumn('consumed_by', 'varchar(40)').execute();
  await db.schema.alterTable('network_exceptions').addColumn('held_with', 'varchar(40)').execute();
  await db.schema.createIndex('network_exceptions_held_with').on('network_exceptions').column('held_with').execute();
  await db.schema
    .createTable('network_peer_addresses')
    .addColumn('address', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .execute();
}
