import assert from 'node:assert/strict';
import { it } from 'node:test';
import { message } from '../src/iso8583/codec.js';
import { checkLedger } from '../src/ledger/check.js';
import { listExceptions } from '../src/ledger/exceptions-query.js';
import type { Harness } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import {
  buildConsole,
  type ConsoleHarness,
  type ConsoleSessionCookies,
  consoleGet,
  consolePost,
  login,
  makeOperator,
} from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';
import { cardSecrets, linkOf, Peer, trace } from './helpers/link.js';

/**
 * The console's exceptions queue and a closed card's debt (decisions §12.13): a viewer reads, support
 * and admin post or return a held advice; only an admin settles a closed card's debt from the
 * merchant's funding. Each change with its audit record; a refused one writes nothing.
 */

const forcedClearing = (pan: string, amount: number) =>
  message('0220', { 2: pan, 3: '000000', 4: String(amount).padStart(12, '0'), ...trace(), 32: '12345678', 49: '978' });

/** What a refused action must leave untouched. */
async function state(h: Harness) {
  const db = h.db.database.db;
  return {
    exceptions: await db.selectFrom('network_exceptions').select(['id', 'status', 'decided_by', 'trade_id']).orderBy('id').execute(),
    cards: await db.selectFrom('cards').select(['id', 'debt', 'available_balance', 'ledger_balance']).orderBy('id').execute(),
    postings: Number(
      (
        await db
          .selectFrom('ledger_postings')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
    audit: Number(
      (
        await db
          .selectFrom('audit_events')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
  };
}

async function sessions(h: ConsoleHarness) {
  const out = new Map<string, ConsoleSessionCookies>();
  for (const role of ['viewer', 'support', 'admin'] as const)
    out.set(role, await login(h, await makeOperator(h, `${role}@example.com`, role)));
  return out as Map<'viewer' | 'support' | 'admin', ConsoleSessionCookies>;
}

eachDialect('console: the exceptions queue and a closed card’s debt (decisions §12.13)', (dialect) => {
  it('a viewer reads the queue and may not decide; support posts and returns, once, each in the audit trail', async (t) => {
    const h = await buildConsole(t, dialect);
    const { cardId } = await fundedCard(h);
    const card = await cardSecrets(h, cardId);
    const peer = await Peer.open(t, (await linkOf(t, h)).port);
    for (const amount of [600_000, 700_000]) assert.equal((await peer.ask(forcedClearing(card.pan, amount))).fields.get(39), '00');
    const s = await sessions(h);
    const [first, second] = await listExceptions(h.db.database.db);
    assert.ok(first && second);

    const overview = (await consoleGet(h, s.get('viewer') ?? null, '/console')).body;
    assert.match(overview, /<span class="muted">Exceptions open<\/span><b>2 · 13000\.00 EUR<\/b>/);
    const page = await consoleGet(h, s.get('viewer') ?? null, '/console/exceptions');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, new RegExp(first.exceptionId));
    assert.match(page.body, /6000\.00 EUR/);
    assert.match(page.body, /7000\.00 EUR/);
    assert.match(page.body, /above CARDPROGRAM_FORCED_POST_MAX/);
    assert.doesNotMatch(page.body, /Post to the card/, 'a viewer gets no forms');
    assert.match(page.body, /support or admin decides/);
    assert.match((await consoleGet(h, s.get('support') ?? null, '/console/exceptions')).body, /Post to the card/);

    const before = await state(h);
    const refused = await consolePost(h, s.get('viewer') as ConsoleSessionCookies, `/console/exceptions/${first.exceptionId}/post`, {
      confirm: 'yes',
    });
    assert.equal(refused.statusCode, 403);
    assert.match(refused.body, /Your role, <b>viewer<\/b>, may not post or return the card network’s held advices/);
    const unconfirmed = await consolePost(h, s.get('support') as ConsoleSessionCookies, `/console/exceptions/${first.exceptionId}/post`);
    assert.equal(unconfirmed.statusCode, 400);
    assert.deepEqual(await state(h), before, 'nothing written');

    const posted = await consolePost(h, s.get('support') as ConsoleSessionCookies, `/console/exceptions/${first.exceptionId}/post`, {
      confirm: 'yes',
    });
    assert.equal(posted.statusCode, 303, posted.body);
    assert.equal(posted.headers.location, '/console/exceptions?done=posted');
    assert.equal((await ok(h, '/api/network/cardQuery.html', { cardId })).debtBalance, first.amount);
    // The same exception again (a second operator, a double click): refused, shown, nothing moves.
    const mid = await state(h);
    const twice = await consolePost(h, s.get('admin') as ConsoleSessionCookies, `/console/exceptions/${first.exceptionId}/return`, {
      confirm: 'yes',
    });
    assert.equal(twice.statusCode, 409);
    assert.match(twice.body, /is posted already \(by support@example\.com/);
    assert.deepEqual(await state(h), mid);

    h.advance(1000); // its audit record is the newest
    const returned = await consolePost(h, s.get('support') as ConsoleSessionCookies, `/console/exceptions/${second.exceptionId}/return`, {
      confirm: 'yes',
    });
    assert.equal(returned.statusCode, 303, returned.body);
    const done = await consoleGet(h, s.get('viewer') ?? null, '/console/exceptions?status=all');
    assert.match(done.body, /posted/);
    assert.match(done.body, /returned/);
    const trail = await h.db.database.db
      .selectFrom('audit_events')
      .select(['action', 'target', 'actor', 'source', 'before_json', 'after_json'])
      .where('action', 'like', 'exception.%')
      .orderBy('created_at')
      .execute();
    assert.deepEqual(
      trail.map((r) => [r.action, r.target, r.actor, r.source]),
      [
        ['exception.post', first.exceptionId, 'support@example.com', 'console'],
        ['exception.return', second.exceptionId, 'support@example.com', 'console'],
      ],
    );
    assert.equal(JSON.parse(trail[0]?.before_json ?? '{}').status, 'open');
    assert.equal(JSON.parse(trail[0]?.after_json ?? '{}').status, 'posted');
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('an admin settles a closed card’s debt from the card page; support may not', async (t) => {
    const h = await buildConsole(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 2 });
    const card = await cardSecrets(h, cardId);
    const peer = await Peer.open(t, (await linkOf(t, h)).port);
    assert.equal((await peer.ask(forcedClearing(card.pan, 1234))).fields.get(39), '00');
    const s = await sessions(h);
    const open = (await consoleGet(h, s.get('admin') ?? null, `/console/cards/${cardId}`)).body;
    assert.match(open, /<dt>Ledger<\/dt><dd>-10\.34 EUR<\/dd>/, 'the net position');
    assert.doesNotMatch(open, /Settle its debt/, 'an open card pays by top-up');
    await ok(h, '/api/network/cardClose.html', { cardId });
    assert.match((await consoleGet(h, s.get('admin') ?? null, `/console/cards/${cardId}`)).body, /Settle its debt/);
    assert.doesNotMatch((await consoleGet(h, s.get('support') ?? null, `/console/cards/${cardId}`)).body, /Settle its debt/);

    const before = await state(h);
    const refused = await consolePost(h, s.get('support') as ConsoleSessionCookies, `/console/cards/${cardId}/settle-debt`, {
      confirm: cardId,
    });
    assert.equal(refused.statusCode, 403);
    const unconfirmed = await consolePost(h, s.get('admin') as ConsoleSessionCookies, `/console/cards/${cardId}/settle-debt`, {
      confirm: 'no',
    });
    assert.equal(unconfirmed.statusCode, 400);
    assert.deepEqual(await state(h), before, 'nothing written');
    const settled = await consolePost(h, s.get('admin') as ConsoleSessionCookies, `/console/cards/${cardId}/settle-debt`, {
      confirm: cardId,
    });
    assert.equal(settled.statusCode, 303, settled.body);
    assert.equal((await ok(h, '/api/network/cardQuery.html', { cardId })).debtBalance, 0);
    const record = await h.db.database.db
      .selectFrom('audit_events')
      .select(['actor', 'source', 'before_json'])
      .where('action', '=', 'card.settleDebt')
      .executeTakeFirstOrThrow();
    assert.deepEqual(
      [record.actor, record.source, Number(JSON.parse(record.before_json ?? '{}').debt)],
      ['admin@example.com', 'console', 1034],
    );
    const again = await consolePost(h, s.get('admin') as ConsoleSessionCookies, `/console/cards/${cardId}/settle-debt`, {
      confirm: cardId,
    });
    assert.equal(again.statusCode, 400);
    assert.match(again.body, /the card owes nothing/);
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });
});
