import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  // Who set a card's status (decisions §11): `cardholder`, `merchant` or `operator`, and why; both
  // null while the card is active. Only the same party or the operator may lift a freeze.
  await db.schema.alterTable('cards').addColumn('status_source', 'varchar(16)').execute();
  await db.schema.alterTable('cards').addColumn('status_reason', 'varchar(200)').execute();
  // Cards frozen or closed before sources were recorded: who did it is unknown, so only the
  // operator may lift it (the cautious reading; a cardholder's own freeze is lifted by support).
  await db.updateTable('cards').set({ status_source: 'operator' }).where('status', '<>', 'active').execute();
}
