import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 39 (decisions §12.13).
//
// 1. Card verification failures are counted per card: `cards.verification_failures` holds the
//    moments (ms, JSON array) of the CVV2 and expiry mismatches since the count last reset, at most
//    the last 5 within 24 hours; null when there are none. On the card's row because every
//    authorization locks that row already: counting needs no other lock, and an approval sees
//    without a statement of its own whether there is a count to reset.
// 2. Identity by value: a message's field 32 (acquirer) is stored as a number, without leading
//    zeros, so that `0412345` and `412345` are one identity (the unique key and the field 90
//    look-ups compare the stored text). Rows stored with leading zeros are rewritten; one whose
//    unpadded identity another row already holds (the same message acted twice before this fix)
//    keeps its text: it is history, and new messages find the unpadded row.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('cards').addColumn('verification_failures', 'text').execute();

  const padded = await db
    .selectFrom('network_messages')
    .select(['msg_class', 'acquirer', 'stan', 'transmitted'])
    .where('acquirer', 'like', '0%')
    .execute();
  for (const row of padded) {
    const acquirer = String(row.acquirer).replace(/^0+(?=\d)/, '');
    if (acquirer === row.acquirer) continue;
    const taken = await db
      .selectFrom('network_messages')
      .select('acquirer')
      .where('msg_class', '=', row.msg_class)
      .where('acquirer', '=', acquirer)
      .where('stan', '=', row.stan)
      .where('transmitted', '=', row.transmitted)
      .executeTakeFirst();
    if (taken) continue;
    await db
      .updateTable('network_messages')
      .set({ acquirer })
      .where('msg_class', '=', row.msg_class)
      .where('acquirer', '=', row.acquirer)
      .where('stan', '=', row.stan)
      .where('transmitted', '=', row.transmitted)
      .execute();
  }
}
