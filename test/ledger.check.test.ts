import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { setCardFrozen } from '../src/cards/status.js';
import type { DB } from '../src/db/schema.js';
import { withTrades } from '../src/db/trades-table.js';
import { checkLedger } from '../src/ledger/check.js';
import { MAX_CARD_BALANCE } from '../src/ledger/journal.js';
import { runVerb } from '../src/runner.js';
import { build, TEST_FUNDING } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

// `ledger check` (src/ledger/check.ts) must notice each broken invariant on its own, and nothing on
// sound books: each case breaks one thing, checks the words that name it, and mends it again.
eachDialect('ledger check: each invariant', (dialect) => {
  it('sound books pass; each kind of damage is named', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const auth = await ok(h, '/sandbox/network/authorize', { cardId, amount: 30 });
    const other = await fundedCard(h);
    const db = h.db.database.db;
    // Frozen after the authorization, then active again: the record of the freeze comes after it.
    await runVerb(h.app.svc, setCardFrozen, { input: { cardId, frozen: true, source: 'operator' }, actor: 'cli' });
    await runVerb(h.app.svc, setCardFrozen, { input: { cardId, frozen: false, source: 'operator' }, actor: 'cli' });
    const frozenAfter = (
      await db.selectFrom('card_status_events').select('after_seq').where('card_id', '=', cardId).executeTakeFirstOrThrow()
    ).after_seq;
    const funding = TEST_FUNDING * 100 - 10_000;
    await ok(h, '/api/network/cardControlsUpdate.html', {
      cardId: other.cardId,
      controls: { spendingLimits: [{ amount: 5, interval: 'daily' }] },
    });
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
        [
          new RegExp(`^journal entry ${entry.entry_id} sums to 5 EUR, not 0$`),
          /^EUR: operators funded 99999999995, but merchant funding, cards, settlement and fees hold 100000000000$/,
        ],
      ],
      [
        'a spending counter that is not what the records say',
        (d) => d.updateTable('spend_counters').set({ used: 5 }).where('owner_id', '=', other.cardId).execute(),
        (d) => d.updateTable('spend_counters').set({ used: 0 }).where('owner_id', '=', other.cardId).execute(),
        [new RegExp(`^spending counter ${other.cardId} daily\\| EUR: 5, the records say 0$`)],
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
        (d) => withTrades(d).updateTable('trades').set({ held: 2500 }).where('id', '=', auth.tradeId).execute(),
        (d) => withTrades(d).updateTable('trades').set({ held: 3000 }).where('id', '=', auth.tradeId).execute(),
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
      [
        'a funding balance that is not the replay',
        (d) =>
          d
            .updateTable('merchant_balances')
            .set({ available: 5 })
            .where('merchant_id', '=', h.merchant.appId)
            .where('currency', '=', 'EUR')
            .execute(),
        (d) =>
          d
            .updateTable('merchant_balances')
            .set({ available: funding })
            .where('merchant_id', '=', h.merchant.appId)
            .where('currency', '=', 'EUR')
            .execute(),
        [new RegExp(`^merchant:${h.merchant.appId}:funding: EUR balance 5, its journal replays to ${funding}$`)],
      ],
      [
        'a funding statement with a line missing',
        (d) =>
          d
            .deleteFrom('funding_movements')
            .where('merchant_id', '=', h.merchant.appId)
            .where('currency', '=', 'EUR')
            .where('seq', '=', 1)
            .execute(),
        (d) =>
          d
            .insertInto('funding_movements')
            .values({
              merchant_id: h.merchant.appId,
              currency: 'EUR',
              seq: 1,
              kind: 'credit',
              amount: TEST_FUNDING * 100,
              balance: TEST_FUNDING * 100,
              reference: 'test funding',
              card_id: null,
              trade_id: null,
              credit_id: null,
              created_at: Date.now(),
            })
            .execute(),
        [
          new RegExp(`^funding statement ${h.merchant.appId} EUR: line 2 follows line 0$`),
          new RegExp(`^funding statement ${h.merchant.appId} EUR: line 2 says \\d+, its replay -?\\d+$`),
        ],
      ],
      [
        'money that came from nowhere: capital that no operator record explains',
        (d) =>
          d
            .insertInto('ledger_postings')
            .values([
              { entry_id: 'ent_nowhere', trade_id: null, account: 'program:capital', currency: 'EUR', amount: -7, created_at: 0 },
              { entry_id: 'ent_nowhere', trade_id: null, account: 'program:settlement', currency: 'EUR', amount: 7, created_at: 0 },
            ])
            .execute(),
        (d) => d.deleteFrom('ledger_postings').where('entry_id', '=', 'ent_nowhere').execute(),
        [/^program:capital: operators funded 100000000000 EUR by their records, the journal says 100000000007$/],
      ],
      [
        'money that left the program: a posting to an account of nobody',
        (d) =>
          d
            .insertInto('ledger_postings')
            .values([
              { entry_id: 'ent_away', trade_id: null, account: 'program:settlement', currency: 'EUR', amount: -7, created_at: 0 },
              { entry_id: 'ent_away', trade_id: null, account: 'somewhere:else', currency: 'EUR', amount: 7, created_at: 0 },
            ])
            .execute(),
        (d) => d.deleteFrom('ledger_postings').where('entry_id', '=', 'ent_away').execute(),
        [
          /^journal account somewhere:else is not an account of the program$/,
          /^EUR: operators funded 100000000000, but merchant funding, cards, settlement and fees hold 99999999993$/,
        ],
      ],
      [
        'a card above the cap',
        (d) =>
          d
            .updateTable('cards')
            .set({ ledger_balance: MAX_CARD_BALANCE + 1, available_balance: MAX_CARD_BALANCE + 1 - 3000 })
            .where('id', '=', other.cardId)
            .execute(),
        (d) => d.updateTable('cards').set({ ledger_balance: 0, available_balance: 0 }).where('id', '=', other.cardId).execute(),
        [
          new RegExp(`^card ${other.cardId}: available balance ${MAX_CARD_BALANCE + 1 - 3000}, its journal replays to 0$`),
          new RegExp(`^card ${other.cardId}: ledger balance ${MAX_CARD_BALANCE + 1}, its journal replays to 0$`),
          new RegExp(`^card ${other.cardId}: ledger balance ${MAX_CARD_BALANCE + 1} is above the cap of ${MAX_CARD_BALANCE}$`),
        ],
      ],
      [
        'an authorization booked after the card was frozen',
        // The freeze's record moved before the authorization: as if it had been booked on a frozen card.
        (d) =>
          d.updateTable('card_status_events').set({ after_seq: 0 }).where('card_id', '=', cardId).where('status', '=', 'frozen').execute(),
        (d) =>
          d
            .updateTable('card_status_events')
            .set({ after_seq: frozenAfter })
            .where('card_id', '=', cardId)
            .where('status', '=', 'frozen')
            .execute(),
        [new RegExp(`^card ${cardId}: ${auth.tradeId} \\(type 150\\) was booked while the card was frozen$`)],
      ],
    ];
    // PostgreSQL's CHECK constraints (migration 0009) refuse these two kinds of damage outright.
    const refusedByConstraint = new Set(['a negative available balance', 'a card above the cap']);
    for (const [what, breakIt, mendIt, expected] of damage) {
      if (dialect.name === 'postgres' && refusedByConstraint.has(what)) {
        await assert.rejects(breakIt(db), (err: { code?: string }) => err.code === '23514', what);
        continue;
      }
      await breakIt(db);
      const { problems } = await checkLedger(h.db.database);
      assert.equal(problems.length, expected.length, `${what}: ${problems.join(' | ')}`);
      for (const [i, re] of expected.entries()) assert.match(problems[i] ?? '', re, what);
      await mendIt(db);
      assert.deepEqual((await checkLedger(h.db.database)).problems, [], `${what}: mended`);
    }
  });
});
