import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { withTrades } from '../../src/db/trades-table.js';
import { build } from '../helpers/app.js';
import { fundedCard } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer } from '../helpers/link.js';

const until = async (what: string, cond: () => Promise<boolean>) => {
  for (let i = 0; i < 2000; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`never: ${what}`);
};

eachDialect('network link: the deadline and a decision still committing (decisions §12.8)', (dialect) => {
  it('a decision whose commit is held past the deadline is answered with what it stored, not 91', {
    skip:
      dialect.name === 'postgres'
        ? false
        : 'PostgreSQL only: on SQLite another connection’s lock stalls the whole process (better-sqlite3 waits on the main thread), so a commit cannot be held apart from the deadline’s timer',
  }, async (t) => {
    const h = await build(t, dialect);
    h.app.svc.config.network = { ...h.app.svc.config.network, deadlineMs: 1000 };
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const card = await cardSecrets(h, cardId);
    const link = await linkOf(t, h);
    const peer = await Peer.open(t, link.port);
    const req = authorizationRequest(card, { amount: 700 });
    const f = req.fields;

    // Another connection holds the message's identity, uncommitted: the decision's claim waits for it,
    // after the decision has passed its own check of the deadline (so it was going to commit).
    let release: () => void = () => undefined;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const blocker = h.db.database.db
      .transaction()
      .execute(async (tx) => {
        await tx
          .insertInto('network_messages')
          .values({
            msg_class: 'authorization',
            acquirer: f.get(32) as string,
            stan: f.get(11) as string,
            transmitted: f.get(7) as string,
            content_hash: 'held by the test',
            mti: '0100',
            merchant_id: null,
            card_id: null,
            trade_id: null,
            response_code: '96',
            answer: '{}',
            request: '{}',
            created_at: 0,
          })
          .execute();
        await released;
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    const answer = peer.ask(req);
    // The decision's insert waits on the row lock; then the deadline's timer is due (1 s from arrival).
    // (By who blocks it, not by its text: the claim is a part of the approval's one statement, whose
    // text pg_stat_activity cuts at 1 kB, before the claim's table is named.)
    await until('the claim waits for the held row', async () => {
      const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from pg_stat_activity
          where wait_event_type = 'Lock' and cardinality(pg_blocking_pids(pid)) > 0`.execute(h.db.database.db);
      return (rows[0]?.n ?? 0) > 0;
    });
    await new Promise((r) => setTimeout(r, 1500));
    release();
    await blocker;

    const got = (await answer).fields.get(39);
    const again = await peer.ask({ mti: '0101', fields: f });
    // Every decision finished (a stop waits for them), then what it stored.
    await link.stop();
    const stored = await h.db.database.db.selectFrom('network_messages').select(['response_code', 'trade_id']).execute();
    const trades = await withTrades(h.db.database.db).selectFrom('trades').select('id').where('trade_type', '=', 150).execute();
    // Before the gate: answered 91 ("nothing written") while the hold and its answer 00 were stored.
    assert.deepEqual(
      { got, stored: stored.map((s) => s.response_code), holds: trades.length },
      { got: '00', stored: ['00'], holds: 1 },
      'the answer is what was stored',
    );
    assert.equal(again.fields.get(39), '00', 'a retransmission gets the same answer');
  });

  it('a decision that cannot start before the deadline is answered 91 and writes nothing, also when it gets going afterwards', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const card = await cardSecrets(h, cardId);
    const link = await linkOf(t, h);
    const peer = await Peer.open(t, link.port);
    h.app.svc.config.network = { ...h.app.svc.config.network, deadlineMs: 50 };
    const req = authorizationRequest(card, { amount: 700 });
    // The card's row held by another transaction: the decision waits for its lock past the deadline
    // (on SQLite the one connection is held, so the decision waits for it).
    let release: () => void = () => undefined;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const blocker = h.db.database.db.transaction().execute(async (tx) => {
      await tx.updateTable('cards').set({ updated_at: Date.now() }).where('id', '=', cardId).execute();
      await released;
    });
    const got = await peer.ask(req);
    assert.equal(got.fields.get(39), '91');
    release();
    await blocker;
    h.app.svc.config.network = { ...h.app.svc.config.network, deadlineMs: 15_000 };
    // The decision, once it could go on, rolled back: nothing stored; a retransmission is decided anew.
    await link.stop();
    assert.equal((await h.db.database.db.selectFrom('network_messages').select('stan').execute()).length, 0);
    assert.equal((await withTrades(h.db.database.db).selectFrom('trades').select('id').where('trade_type', '=', 150).execute()).length, 0);
  });
});
