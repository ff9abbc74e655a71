import assert from 'node:assert/strict';
import { it } from 'node:test';
import { build, type Harness, holderBody, kycBody, randomStr } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

// Issue 19: the round trips each hot operation makes to the database, counted statement by
// statement through the real app, against the budget written down in docs/architecture.md
// ("Round trips per operation"). A change that adds a statement to a hot path fails here until the
// budget (and the doc) says why.

/** The statements one request sends, with their SQL. */
async function statementsOf(h: Harness, path: string, body: Record<string, unknown>) {
  const seen: string[] = [];
  h.db.database.onStatement = (s) => seen.push(s.replace(/\s+/g, ' ').slice(0, 100));
  try {
    const res = await h.call(path, body);
    assert.ok(res.status === 200 || res.status === 409, JSON.stringify(res.body));
  } finally {
    h.db.database.onStatement = undefined;
  }
  return seen;
}

/**
 * Statements per request, as docs/architecture.md lists them. PostgreSQL's are network round trips;
 * SQLite's are calls in the process, the group commit's BEGIN, SAVEPOINT, RELEASE and COMMIT among them.
 */
const BUDGET: Record<string, { sqlite: number; postgres: number }> = {
  // The list (4.1): the nonce, then the card, the day counts, the page's keys and its rows (PostgreSQL: all in one statement).
  // On SQLite the nonce in the group commit's frame, the reads in a read batch's (BEGIN, COMMIT: shared
  // by the requests of the batch, issue 31).
  tradeList: { sqlite: 11, postgres: 1 },
  // A top-up (issue 31, decision 2): on PostgreSQL BEGIN, one statement that claims the key, locks
  // the card (with its merchant's notify URL) and reads which of the drawn authCodes it used, one
  // statement that writes every effect (the card balance, the journal, the code's claim, the trade,
  // its day count, the callback, the funding balance and its statement line, the stored answer),
  // COMMIT. On SQLite the way of every money verb, statements built once (no round trip to save, and
  // building the parts per request cost more): the key, the card, the balance, the journal, the
  // code, the trade, the day count, the callback's URL, the funding balance, its line, the answer.
  cardTopUp: { sqlite: 15, postgres: 4 },
  // An authorization without limits or endpoint (issue 31, decision 2): on PostgreSQL BEGIN, one
  // statement that claims the key, locks the card (with its merchant's notify URL), reads which drawn
  // authCodes it used and its cardholder's controls (with the card's row version as the statement's
  // snapshot saw it: changed while it waited, the controls are read again), one that writes every
  // effect (the hold, the journal, the code, the trade, its day count, the callback, the
  // authorization's record, the stored answer), COMMIT. On SQLite as a top-up, without the funding,
  // with the cardholder's controls and the authorization's record.
  authorize: { sqlite: 13, postgres: 4 },
  // A cardholder (4.2), issue 31: on PostgreSQL BEGIN, one statement with the key's claim and the
  // duplicate check by document (keyed hash), one with the holder and the stored answer, COMMIT; on
  // SQLite the key, the check, the holder and the answer (the runner's), in the group commit's frame.
  holderCreate: { sqlite: 8, postgres: 4 },
  // A KYC submission (4.3; its requestNo is the key): BEGIN, the requestNo or e-mail already used,
  // the request, COMMIT.
  kycSubmit: { sqlite: 6, postgres: 4 },
  // A login-free link (4.4): BEGIN, the merchant's permission (read in the transaction), the lock
  // per merchant and e-mail (PostgreSQL, advisory), the last links' times (a limit per minute), the
  // link, COMMIT; then the merchant's domains for the link's host.
  pageLink: { sqlite: 8, postgres: 7 },
};

eachDialect('round trips per operation (the budget of docs/architecture.md)', (dialect) => {
  it('the hot operations stay within their budget of statements', async (t) => {
    // The merchant cache as in production (5 s): the signature check reads no row per request.
    const h = await build(t, dialect, { merchantCacheMs: 60_000 });
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const day = new Date().toISOString().slice(0, 10);
    const counted = {
      tradeList: await statementsOf(h, '/api/network/networkAuthTradeList.html', {
        cardId,
        beginDate: day,
        endDate: day,
        start: 0,
        randomStr: randomStr(),
      }),
      cardTopUp: await statementsOf(h, '/api/network/cardTopUp.html', { cardId, amount: 1, randomStr: randomStr() }),
      authorize: await statementsOf(h, '/sandbox/network/authorize', { cardId, amount: 1, randomStr: randomStr() }),
      holderCreate: await statementsOf(h, '/api/network/holderCreate.html', holderBody({ email: 'rt@example.com', idno: 'RT1' })),
      kycSubmit: await statementsOf(
        h,
        '/open/api/kyc/share/information',
        kycBody({ requestNo: 'RT-1', email: 'kyc.rt@example.com', callbackUrl: 'https://merchant.example/hooks' }, { number: 'FR1' }),
      ),
      pageLink: await statementsOf(h, '/open/merchant/api/v2', { email: 'alice@example.com' }),
    };
    for (const [op, statements] of Object.entries(counted)) {
      const budget = BUDGET[op]?.[dialect.name as 'sqlite' | 'postgres'] ?? 0;
      assert.ok(statements.length <= budget, `${op}: ${statements.length} statements, budget ${budget}:\n${statements.join('\n')}`);
      t.diagnostic(`${op}: ${statements.length} statements (budget ${budget}):\n${statements.join('\n')}`);
    }
  });
});

// Issue 31: where a signed timestamp is required (production), a read's nonce goes to the read-nonce
// store, not to idempotency_keys: on SQLite the process's memory (no statement, no commit), on
// PostgreSQL an unlogged table spent in the list's one statement. On SQLite the four reads run in a
// read batch (a deferred BEGIN and its COMMIT, shared by the requests that arrived together).
const TIMESTAMPED_LIST_BUDGET = { sqlite: 6, postgres: 1 };

eachDialect('round trips of the list where a timestamp is required (issue 31)', (dialect) => {
  it('its nonce costs no statement of its own, and no durable commit', async (t) => {
    const h = await build(t, dialect, { merchantCacheMs: 60_000, requireTimestamp: true });
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const day = new Date().toISOString().slice(0, 10);
    const body = { cardId, beginDate: day, endDate: day, start: 0, randomStr: randomStr() };
    const statements = await statementsOf(h, '/api/network/networkAuthTradeList.html', body);
    const budget = TIMESTAMPED_LIST_BUDGET[dialect.name as 'sqlite' | 'postgres'];
    assert.ok(statements.length <= budget, `${statements.length} statements, budget ${budget}:\n${statements.join('\n')}`);
    // No write: no key, no write transaction (BEGIN IMMEDIATE, the group commit's savepoints).
    assert.ok(
      !statements.some((s) => /idempotency_keys|^begin immediate|^savepoint|^(insert|update|delete)/i.test(s)),
      statements.join('\n'),
    );
    t.diagnostic(`tradeList: ${statements.length} statements (budget ${budget}):\n${statements.join('\n')}`);
  });
});
