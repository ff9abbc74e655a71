import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import type { DB } from '../src/db/schema.js';
import { checkLedger } from '../src/ledger/check.js';
import { build } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

// `ledger check` (src/ledger/check.ts) must notice each broken invariant on its own, and nothing on
// sound books: each case breaks one thing, checks the words that name it, and mends it again.
eachDialect('ledger check: each invariant', (dialect) => {
  it('sound books pass; each kind of damage is named', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const auth = await ok(h, '/sandbox/network/authorize', { cardId, amount: 30 });
    const db = h.db.database.db;
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);

    const entry = await db.selectFrom('ledger_postings').select('entry_id').where('trade_id', '=', auth.tradeId).executeTakeFirstOrThrow();
    const damage: Array<[string, (db: Kysely<DB>) => Promise<unknown>, (db: Kysely<DB>) => Promise<unknown>, RegExp[]]> = [
      [
        'an entry that does not sum to zero',
        (d) =>
          d
            .insertInto('ledger_postings')
            .values({
              entry_id: entry.entry_id,
              trade_id: auth.tradeId,
              account: 'program:funding',
              currency: 'EUR',
              amount: 5,
              created_at: 0,
            })
            .execute(),
        (d) => d.deleteFrom('ledger_postings').where('entry_id', '=', entry.entry_id).where('account', '=', 'program:funding').execute(),
        [new RegExp(`^journal entry ${entry.entry_id} sums to 5 EUR, not 0$`)],
      ],
      [
        'a ledger balance that is not the replay',
        (d) => d.updateTable('cards').set({ ledger_balance: 1 }).where('id', '=', cardId).execute(),
        (d) => d.updateTable('cards').set({ ledger_balance: 10_000 }).where('id', '=', cardId).execute(),
        [new RegExp(`^card ${cardId}: ledger balance 1, its journal replays to 10000$`)],
      ],
      [
        'a negative available balance',
        (d) => d.updateTable('cards').set({ available_balance: -1 }).where('id', '=', cardId).execute(),
        (d) => d.updateTable('cards').set({ available_balance: 7000 }).where('id', '=', cardId).execute(),
        [
          new RegExp(`^card ${cardId}: available balance -1, its journal replays to 7000$`),
          new RegExp(`^card ${cardId}: available balance -1 is negative$`),
        ],
      ],
      [
        'authorizations holding what the held account does not',
        (d) => d.updateTable('trades').set({ held: 2500 }).where('id', '=', auth.tradeId).execute(),
        (d) => d.updateTable('trades').set({ held: 3000 }).where('id', '=', auth.tradeId).execute(),
        [new RegExp(`^card ${cardId}: its authorizations hold 2500, its held account 3000$`)],
      ],
      [
        'a day count that is not the count of transactions',
        (d) =>
          d
            .updateTable('trade_day_counts')
            .set((eb) => ({ n: eb('n', '+', 1) }))
            .where('card_id', '=', cardId)
            .execute(),
        (d) =>
          d
            .updateTable('trade_day_counts')
            .set((eb) => ({ n: eb('n', '-', 1) }))
            .where('card_id', '=', cardId)
            .execute(),
        [new RegExp(`^day count for ${cardId} \\d{4}-\\d\\d-\\d\\d status 1 is 3, there are 2 transactions$`)],
      ],
      [
        'a journal account of no card',
        (d) =>
          d
            .insertInto('ledger_postings')
            .values([
              { entry_id: 'ent_orphan', trade_id: null, account: 'card:card_nope:held', currency: 'EUR', amount: 1, created_at: 0 },
              { entry_id: 'ent_orphan', trade_id: null, account: 'program:funding', currency: 'EUR', amount: -1, created_at: 0 },
            ])
            .execute(),
        (d) => d.deleteFrom('ledger_postings').where('entry_id', '=', 'ent_orphan').execute(),
        [/^journal account card:card_nope:held belongs to no card$/],
      ],
    ];
    for (const [what, breakIt, mendIt, expected] of damage) {
      await breakIt(db);
      const { problems } = await checkLedger(h.db.database);
      assert.equal(problems.length, expected.length, `${what}: ${problems.join(' | ')}`);
      for (const [i, re] of expected.entries()) assert.match(problems[i] ?? '', re, what);
      await mendIt(db);
      assert.deepEqual((await checkLedger(h.db.database)).problems, [], `${what}: mended`);
    }
  });
});
