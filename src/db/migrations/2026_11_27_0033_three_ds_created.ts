import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 41 (decisions §14.6): the console's overview counts today's 3-D Secure authentications of
// every merchant by outcome, a grouped query on their creation time, as its other tiles are.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('three_ds_created').on('three_ds_authentications').column('created_at').execute();
}
