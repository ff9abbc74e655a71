import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 45 (decisions §15.5): an authorization made with a wallet token (the link's field 48
// subelements 33/34, the sandbox's `tokenId`) records which token it carried, approved or declined,
// so that tradeQuery shows it (its wallet and device are read from the token). Null: no token, or
// one the service does not know (declined token_unknown).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('authorizations').addColumn('token_id', 'text').execute();
}
