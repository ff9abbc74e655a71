import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  // A client's refused logins (past its limit, or the hashing queue full) in the current window
  // (after an attack pass on issue 26): each wrote an audit record, about 25 GB a day from one
  // address. The first refusal of a window is still recorded; the rest are counted here, and one
  // summary record (operator.login_throttled) says how many once the window is over.
  await db.schema
    .alterTable('console_login_throttle')
    .addColumn('refusals', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
