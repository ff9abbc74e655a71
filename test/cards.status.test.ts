import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { StatusSource as AnySource } from '../src/db/schema.js';
import { formToken } from '../src/page/links.js';
import { runVerb } from '../src/runner.js';
import { build, type Harness, holderBody, randomStr } from './helpers/app.js';
import { ok } from './helpers/cards.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { eachDialect } from './helpers/dialects.js';

/**
 * Who froze a card decides who may unfreeze it (decisions §11), through each party's own channel:
 * the cardholder on the card page, the merchant through the signed API, the operator with the CLI.
 */

/** The parties with a channel of their own (`security` is the service's: test/card-verification.test.ts). */
type StatusSource = Exclude<AnySource, 'security'>;

const FREEZE = '/api/network/cardFreeze.html';
const UNFREEZE = '/api/network/cardUnfreeze.html';
const RANK: Record<StatusSource, number> = { cardholder: 1, merchant: 2, operator: 3 };
const SOURCES: StatusSource[] = ['cardholder', 'merchant', 'operator'];

/** One approved cardholder with a page session; cards are made per case. */
async function party(h: Harness) {
  const email = 'carla@example.com';
  const holder = await h.call('/api/network/holderCreate.html', holderBody({ email }));
  assert.equal(holder.status, 200, JSON.stringify(holder.body));
  const holderId = holder.body.holderId as string;
  await ok(h, '/sandbox/holder/review', { holderId, auditStatus: 2 });
  const link = new URL((await h.call('/open/merchant/api/v2', { email })).body.model.webUrl);
  const opened = await h.app.inject({ method: 'GET', url: `${link.pathname}${link.search}` });
  const cookie = String(opened.headers['set-cookie']).split(';')[0] ?? '';
  // No card yet, so no form on the page: the token is the session's own.
  const form = formToken(cookie.split('=')[1] ?? '');
  const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
  const newCard = async () => (await ok(h, '/api/network/cardApply.html', { holderId, currency: 'EUR' })).cardId as string;

  /** A freeze or unfreeze by `by` through its channel: whether it was refused, and how. */
  const act = async (by: StatusSource, action: 'freeze' | 'unfreeze', cardId: string, reason: string) => {
    if (by === 'cardholder') {
      const r = await h.app.inject({
        method: 'POST',
        url: `/page/cards/${cardId}/${action}`,
        payload: `form=${form}`,
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      });
      if (r.statusCode === 303) return { refused: null };
      assert.equal(r.statusCode, 409, r.body);
      assert.match(r.body, /frozen by your card provider; only they can unfreeze it/);
      return { refused: 'page 409' };
    }
    if (by === 'merchant') {
      const r = await h.call(action === 'freeze' ? FREEZE : UNFREEZE, { cardId, reason, randomStr: randomStr() });
      if (r.status === 200) {
        assert.equal(r.body.model.cardId, cardId);
        return { refused: null };
      }
      return { refused: `${r.status} ${r.body.code} ${r.body.msg}` };
    }
    const r = await runCli(['card', action, cardId, '--reason', reason, '--json'], env);
    if (r.code === 0) return { refused: null };
    return { refused: `cli ${r.stderr.trim()}` };
  };
  return { newCard, act, env };
}

async function cardRow(h: Harness, cardId: string) {
  return h.db.database.db
    .selectFrom('cards')
    .select(['status', 'status_source', 'status_reason'])
    .where('id', '=', cardId)
    .executeTakeFirstOrThrow();
}

async function statusEvents(h: Harness, cardId: string) {
  const rows = await h.db.database.db
    .selectFrom('callback_events')
    .select('payload')
    .where('type', '=', 'card.status')
    .orderBy('sequence')
    .execute();
  return rows.map((r) => JSON.parse(r.payload)).filter((b) => b.cardId === cardId);
}

const reasonFor = (by: StatusSource) => (by === 'cardholder' ? null : `${by} says so`);

eachDialect('card status: who froze a card decides who may unfreeze it', (dialect) => {
  it('every source and precedence combination, freeze then freeze or unfreeze, from the page, the API and the CLI', async (t) => {
    const h = await build(t, dialect);
    await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
    const p = await party(h);
    for (const first of SOURCES) {
      for (const second of SOURCES) {
        for (const action of ['freeze', 'unfreeze'] as const) {
          const what = `frozen by the ${first}, then ${action} by the ${second}`;
          const cardId = await p.newCard();
          assert.deepEqual(await p.act(first, 'freeze', cardId, `${first} says so`), { refused: null }, what);
          assert.deepEqual(await cardRow(h, cardId), { status: 'frozen', status_source: first, status_reason: reasonFor(first) }, what);
          const events = (await statusEvents(h, cardId)).length;
          const result = await p.act(second, action, cardId, `${second} says so`);
          const after = await cardRow(h, cardId);
          const newEvents = (await statusEvents(h, cardId)).slice(events);
          if (action === 'freeze') {
            // A freeze is never refused: a higher party takes it over, an equal or lower one is answered as is.
            assert.deepEqual(result, { refused: null }, what);
            const takesOver = RANK[second] > RANK[first];
            assert.deepEqual(
              after,
              takesOver
                ? { status: 'frozen', status_source: second, status_reason: reasonFor(second) }
                : { status: 'frozen', status_source: first, status_reason: reasonFor(first) },
              what,
            );
            assert.deepEqual(
              newEvents.map((e) => [e.status, e.source, e.reason]),
              takesOver ? [['frozen', second, reasonFor(second)]] : [],
              what,
            );
          } else if (second === first || second === 'operator') {
            assert.deepEqual(result, { refused: null }, what);
            assert.deepEqual(after, { status: 'active', status_source: null, status_reason: null }, what);
            assert.deepEqual(
              newEvents.map((e) => [e.status, e.source, e.reason, e.actor]),
              [['active', null, null, second]],
              what,
            );
          } else {
            const only = first === 'operator' ? 'the operator' : `the ${first} or the operator`;
            const expected = {
              cardholder: 'page 409',
              merchant: `409 2727 cardId: frozen by the ${first}; only ${only} can unfreeze it`,
              operator: '',
            }[second];
            assert.deepEqual(result, { refused: expected }, what);
            assert.deepEqual(after, { status: 'frozen', status_source: first, status_reason: reasonFor(first) }, what);
            assert.deepEqual(newEvents, [], what);
          }
        }
      }
    }
  });

  it('the page offers "Unfreeze" only for the cardholder’s own freeze; the card model carries statusSource and statusReason', async (t) => {
    const h = await build(t, dialect);
    const p = await party(h);
    const own = await p.newCard();
    const theirs = await p.newCard();
    await p.act('cardholder', 'freeze', own, '');
    await p.act('merchant', 'freeze', theirs, 'chargeback under review');
    const q = await h.call('/api/network/cardQuery.html', { cardId: theirs, randomStr: randomStr() });
    assert.equal(q.status, 200);
    assert.deepEqual(
      [q.body.model.status, q.body.model.statusSource, q.body.model.statusReason],
      ['frozen', 'merchant', 'chargeback under review'],
    );
    const link = new URL((await h.call('/open/merchant/api/v2', { email: 'carla@example.com' })).body.model.webUrl);
    const opened = await h.app.inject({ method: 'GET', url: `${link.pathname}${link.search}` });
    const cookie = String(opened.headers['set-cookie']).split(';')[0] ?? '';
    const page = (await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } })).body;
    assert.ok(page.includes(`/page/cards/${own}/unfreeze`));
    assert.ok(!page.includes(`/page/cards/${theirs}/unfreeze`));
    assert.match(page, /Frozen by your card provider: only they can unfreeze it/);
  });

  it('a cardholder rejected: its cards are frozen by the operator ("cardholder rejected"), taking over its own freeze; neither it nor the merchant can lift it', async (t) => {
    const h = await build(t, dialect);
    const p = await party(h);
    const own = await p.newCard();
    const active = await p.newCard();
    await p.act('cardholder', 'freeze', own, '');
    const holderId = (await h.db.database.db.selectFrom('cards').select('holder_id').where('id', '=', own).executeTakeFirstOrThrow())
      .holder_id;
    await ok(h, '/sandbox/holder/review', { holderId, auditStatus: 3 });
    for (const cardId of [own, active]) {
      assert.deepEqual(await cardRow(h, cardId), { status: 'frozen', status_source: 'operator', status_reason: 'cardholder rejected' });
      const r = await h.call(UNFREEZE, { cardId, randomStr: randomStr() });
      assert.deepEqual(
        [r.status, r.body.code, r.body.msg],
        [409, '2727', 'cardId: frozen by the operator; only the operator can unfreeze it'],
      );
      assert.equal((await cardRow(h, cardId)).status, 'frozen');
    }
  });

  it('the merchant API: replay with the same randomStr returns the stored answer; another merchant’s card is 2648; a bad reason is 1002; none writes', async (t) => {
    const h = await build(t, dialect);
    const p = await party(h);
    const cardId = await p.newCard();
    const body = { cardId, reason: 'lost phone', randomStr: randomStr() };
    const first = await h.call(FREEZE, body);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(
      [first.body.model.status, first.body.model.statusSource, first.body.model.statusReason],
      ['frozen', 'merchant', 'lost phone'],
    );
    const snapshot = async () => ({
      card: await cardRow(h, cardId),
      updated: (await h.db.database.db.selectFrom('cards').select('updated_at').where('id', '=', cardId).executeTakeFirstOrThrow())
        .updated_at,
      events: (await h.db.database.db.selectFrom('callback_events').select('id').execute()).length,
    });
    const before = await snapshot();
    const again = await h.call(FREEZE, body);
    assert.equal(again.headers['x-idempotent-replay'], 'true');
    assert.deepEqual(again.body.model, first.body.model);
    const other = await h.newMerchant();
    for (const path of [FREEZE, UNFREEZE, '/api/network/cardClose.html']) {
      const foreign = await h.call(path, { cardId, randomStr: randomStr() }, { merchant: other });
      assert.deepEqual([foreign.status, foreign.body.code], [404, '2648'], path);
      for (const reason of ['x'.repeat(201), 'line\nbreak', 'nul\u0000']) {
        const bad = await h.call(path, { cardId, reason, randomStr: randomStr() });
        assert.deepEqual([bad.status, bad.body.code], [400, '1002'], `${path} ${JSON.stringify(reason)}`);
        assert.match(bad.body.msg, /^reason: /);
      }
    }
    assert.deepEqual(await snapshot(), before, 'nothing written');
  });
});

eachDialect('card status under concurrency', (dialect) => {
  it('the operator freezing while the merchant unfreezes its own freeze always ends frozen by the operator (whichever commits first)', async (t) => {
    const h = await build(t, dialect);
    const { setCardFrozen } = await import('../src/cards/status.js');
    const p = await party(h);
    for (let i = 0; i < 8; i++) {
      const cardId = await p.newCard();
      await p.act('merchant', 'freeze', cardId, 'first');
      const [operator, merchant] = await Promise.allSettled([
        runVerb(h.app.svc, setCardFrozen, { input: { cardId, frozen: true, source: 'operator', reason: 'audit' }, actor: 'cli' }),
        h.call(UNFREEZE, { cardId, randomStr: randomStr() }),
      ]);
      assert.equal(operator.status, 'fulfilled', String(operator.status === 'rejected' && operator.reason));
      assert.equal(merchant.status, 'fulfilled');
      const answer = merchant.status === 'fulfilled' ? merchant.value : null;
      assert.ok(answer?.status === 200 || answer?.body.code === '2727', JSON.stringify(answer?.body));
      assert.deepEqual(await cardRow(h, cardId), { status: 'frozen', status_source: 'operator', status_reason: 'audit' });
    }
  });

  it('closing while authorizations arrive: the card ends closed with nothing available, and the books balance', async (t) => {
    const h = await build(t, dialect);
    const { checkLedger } = await import('../src/ledger/check.js');
    const p = await party(h);
    for (let i = 0; i < 4; i++) {
      const cardId = await p.newCard();
      await ok(h, '/api/network/cardTopUp.html', { cardId, amount: 50 });
      const answers = await Promise.all([
        ...Array.from({ length: 6 }, () => h.call('/sandbox/network/authorize', { cardId, amount: 3, randomStr: randomStr() })),
        h.call('/api/network/cardClose.html', { cardId, randomStr: randomStr() }),
      ]);
      for (const a of answers) assert.ok(a.status === 200 || ['2724', '2725'].includes(a.body.code), JSON.stringify(a.body));
      const card = await h.db.database.db
        .selectFrom('cards')
        .select(['status', 'available_balance'])
        .where('id', '=', cardId)
        .executeTakeFirstOrThrow();
      assert.deepEqual([card.status, Number(card.available_balance)], ['closed', 0]);
    }
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });
});
