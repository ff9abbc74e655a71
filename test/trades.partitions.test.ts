// Issue 19: `trades` partitioned by month of its business date on PostgreSQL (migration 0014,
// src/db/partitions.ts). Lists across a month boundary, a record in a month that has no partition
// yet, partitions made while records arrive, ids unique across months, partition pruning in the
// list's and a lookup's plans, and the migration of existing records. SQLite keeps one table: the
// list tests run there too, the rest is PostgreSQL's.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { MIGRATIONS, migrateToLatest } from '../src/db/migrate.js';
import { ensureTradePartitions, monthOf, partitionName } from '../src/db/partitions.js';
import type { DB } from '../src/db/schema.js';
import { withTrades } from '../src/db/trades-table.js';
import { checkLedger } from '../src/ledger/check.js';
import { build, type Harness, randomStr, sign, testConfig } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { type IsolatedDatabase, isolatedDatabase, ownTables } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { testLogging } from './helpers/log-audit.js';

const LIST = '/api/network/networkAuthTradeList.html';
const QUERY = '/api/network/tradeQuery.html';
const N = '/sandbox/network';
const DAY = 86_400_000;
/** The service's clock in the boundary tests: 20 March 2031, so February and March both have partitions. */
const MARCH_2031 = Date.parse('2031-03-20T12:00:00Z');

async function list(h: Harness, cardId: string, beginDate: string, endDate: string, start = 0, maxSize = 30) {
  const res = await h.call(LIST, { cardId, beginDate, endDate, start, maxSize, randomStr: randomStr() });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as { total: number; tradeList: Array<{ tradeId: string; businessDate: string; tradeStatus: number }> };
}

/** The partition a trade's row is in (PostgreSQL). */
async function partitionOf(db: Kysely<DB>, tradeId: string): Promise<string | undefined> {
  const { rows } = await sql<{ p: string }>`select tableoid::regclass::text as p from trades where id = ${tradeId}`.execute(db);
  return rows[0]?.p;
}

async function exists(db: Kysely<DB>, table: string): Promise<boolean> {
  const { rows } = await sql<{ found: boolean }>`select to_regclass(${table}) is not null as found`.execute(db);
  return rows[0]?.found === true;
}

type PlanNode = { 'Relation Name'?: string; 'Actual Loops'?: number; Plans?: PlanNode[] };

/** The partitions of `trades` a statement's plan reads (with `analyze`: only those it ran). */
async function partitionsRead(db: Kysely<DB>, text: string, parameters: readonly unknown[], analyze = false): Promise<string[]> {
  const explain = `explain (${analyze ? 'analyze, ' : ''}format json) ${text}`;
  const res = await db.executeQuery<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(CompiledQuery.raw(explain, [...parameters]));
  const out = new Set<string>();
  const walk = (n: PlanNode) => {
    const name = n['Relation Name'];
    if (name?.startsWith('trades_') && (!analyze || (n['Actual Loops'] ?? 0) > 0)) out.add(name);
    for (const c of n.Plans ?? []) walk(c);
  };
  for (const p of res.rows[0]?.['QUERY PLAN'] ?? []) walk(p.Plan);
  return [...out].sort();
}

/** The statements one request sends on `trades` (not trade_day_counts nor trade_ids), with their parameters. */
async function tradeStatements(h: Harness, fn: () => Promise<unknown>) {
  const seen: Array<{ text: string; parameters: readonly unknown[] }> = [];
  h.db.database.onStatement = (text, parameters) => {
    if (/from "?trades"?(?!\w)/.test(text)) seen.push({ text, parameters });
  };
  try {
    await fn();
  } finally {
    h.db.database.onStatement = undefined;
  }
  return seen;
}

/** The card page's lines, every page of them, by their titles (a purchase's remark, or `Top-up`). */
async function pageTitles(h: Harness, cardId: string): Promise<string[]> {
  const link = await h.call('/open/merchant/api/v2', { email: 'alice@example.com', randomStr: randomStr() });
  assert.equal(link.status, 200, JSON.stringify(link.body));
  const url = new URL(link.body.model.webUrl);
  const opened = await h.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
  const cookie = String(opened.headers['set-cookie']).split(';')[0] ?? '';
  const titles: string[] = [];
  let query = '';
  for (let pages = 0; pages < 20; pages++) {
    const res = await h.app.inject({ method: 'GET', url: `/page${query}`, headers: { cookie } });
    assert.equal(res.statusCode, 200);
    const cells = [...res.body.matchAll(/<tr><td>[^<]*<\/td><td>(.*?)<\/td>/g)].map((m) => m[1] ?? '');
    titles.push(
      ...cells.map(
        (html) =>
          html
            .replace(/<br>/g, ' | ')
            .replace(/<[^>]+>/g, '')
            .split(' | ')[0] ?? '',
      ),
    );
    const older = /href="\/page\?card=[^&]+&amp;older=([^"#]+)#/.exec(res.body)?.[1];
    if (!older) return titles;
    query = `?card=${cardId}&older=${older}`;
  }
  throw new Error('the card page did not end');
}

eachDialect('trades across a month boundary', (dialect) => {
  it('the list across 28 February / 1 March: total, every start and size in order; each month alone; the card page’s cursor walks across', async (t) => {
    const h = await build(t, dialect, {}, { clock: () => MARCH_2031 });
    const { cardId } = await fundedCard(h, { topUp: 1000 });
    // Days on both sides of the boundary, unevenly; every fourth purchase reversed (a status 2 record, the original 3).
    const plan = ['2031-02-26', '2031-02-26', '2031-02-27', '2031-02-28', '2031-02-28', '2031-02-28', '2031-03-01', '2031-03-01'];
    plan.push('2031-03-01', '2031-03-02', '2031-03-02', '2031-03-05', '2031-02-28', '2031-03-01');
    const made: Array<{ id: string; day: string; remark: string }> = [];
    for (const [i, day] of plan.entries()) {
      const a = await ok(h, `${N}/authorize`, { cardId, amount: 1, businessDate: day, remark: `P${i}` });
      made.push({ id: a.tradeId, day, remark: `P${i}` });
      if (i % 4 === 3) await ok(h, `${N}/reverse`, { tradeId: a.tradeId, businessDate: day });
    }
    const db = h.db.database.db;
    if (dialect.name === 'postgres') {
      for (const m of made) assert.equal(await partitionOf(db, m.id), partitionName(m.day.slice(0, 7)), `${m.remark} in its month`);
    }
    const naive = async (from: string, to: string) =>
      (
        await withTrades(db)
          .selectFrom('trades')
          .select('id')
          .where('card_id', '=', cardId)
          .where('trade_status', 'in', [1, 10])
          .where('business_date', '>=', from)
          .where('business_date', '<=', to)
          .orderBy('business_date', 'desc')
          .orderBy('seq', 'desc')
          .execute()
      ).map((r) => r.id);

    const expected = await naive('2031-02-20', '2031-03-20');
    // 14 purchases, 3 reversed (not listed by default), and the top-up of 20 March.
    assert.equal(expected.length, 14 - 3 + 1);
    for (const maxSize of [1, 4, 30]) {
      for (let start = 0; start <= expected.length; start++) {
        const page = await list(h, cardId, '2031-02-20', '2031-03-20', start, maxSize);
        assert.equal(page.total, expected.length);
        assert.deepEqual(
          page.tradeList.map((x) => x.tradeId),
          expected.slice(start, start + maxSize),
          `start ${start}, maxSize ${maxSize}`,
        );
      }
    }
    const february = await list(h, cardId, '2031-02-01', '2031-02-28');
    assert.deepEqual(
      february.tradeList.map((x) => x.tradeId),
      await naive('2031-02-01', '2031-02-28'),
    );
    assert.ok(february.tradeList.every((x) => x.businessDate.startsWith('2031-02')) && february.total === 6);
    const march = await list(h, cardId, '2031-03-01', '2031-03-31');
    assert.equal(march.total, expected.length - 6);
    // Other statuses across the boundary too: the reversals (2) and the reversed originals (3).
    const others = await list(h, cardId, '2031-02-20', '2031-03-20');
    const all = await h.call(LIST, {
      cardId,
      beginDate: '2031-02-20',
      endDate: '2031-03-20',
      start: 0,
      maxSize: 30,
      tradeStatusList: [2, 3],
      randomStr: randomStr(),
    });
    assert.equal(all.body.total, 6);
    assert.equal(others.total + all.body.total, 14 + 3 + 1);

    // The card page: newest first by day, then by when written; its `older` cursor crosses the month.
    const order = made.map((m, i) => ({ ...m, i })).sort((a, b) => (a.day === b.day ? b.i - a.i : a.day < b.day ? 1 : -1));
    assert.deepEqual(await pageTitles(h, cardId), ['Top-up', ...order.map((m) => m.remark)]);

    if (dialect.name === 'postgres') {
      // The list's statements on trades read the partitions of their window, never another month's
      // nor the default (EXPLAIN of what it sent, with its parameters).
      for (const [from, to, want] of [
        ['2031-03-01', '2031-03-20', ['trades_2031_03']],
        ['2031-02-20', '2031-03-20', ['trades_2031_02', 'trades_2031_03']],
        ['2031-02-20', '2031-02-27', ['trades_2031_02']],
      ] as const) {
        for (const start of [0, 2]) {
          const statements = await tradeStatements(h, () => list(h, cardId, from, to, start, 4));
          assert.ok(statements.length >= 1, 'the page (its walk and its rows, one statement or two)');
          const all = new Set<string>();
          for (const s of statements) {
            // A statement whose bounds select nothing (older days than the window's first) reads none.
            const read = await partitionsRead(db, s.text, s.parameters);
            assert.ok(
              read.every((p) => (want as readonly string[]).includes(p)),
              `${from}..${to} reads ${read}: ${s.text}`,
            );
            for (const p of read) all.add(p);
          }
          assert.ok(all.size > 0);
        }
      }
      // tradeQuery by id: trade_ids names the partition, and only that one is read (pruned when it runs).
      // An authorization's query also looks for the payment an 0200 made with it (its network message,
      // issue 43): on its card and business day, so in that day's partition only.
      const [february26] = made;
      const statements = await tradeStatements(h, () => ok(h, QUERY, { tradeId: february26?.id }));
      assert.ok(statements.length >= 1 && statements.length <= 2, `${statements.length} statements`);
      const [byId, ...others] = statements as Array<{ text: string; parameters: readonly unknown[] }>;
      assert.ok(byId);
      assert.deepEqual(await partitionsRead(db, byId.text, byId.parameters, true), ['trades_2031_02']);
      assert.ok((await partitionsRead(db, byId.text, byId.parameters)).length > 1, 'planned over every month, run on one');
      for (const s of others) assert.deepEqual(await partitionsRead(db, s.text, s.parameters), ['trades_2031_02'], s.text);
    }
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });
});

eachDialect('partitions of trades', (dialect) => {
  if (dialect.name !== 'postgres') return;

  it('a record in a month without a partition (the clock years ahead) is stored in the default, listed, queried, settled; the next pass moves it into its own', async (t) => {
    let now = Date.now();
    const h = await build(t, dialect, {}, { clock: () => now });
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const db = h.db.database.db;
    now += 5 * 365 * DAY;
    const day = new Date(now).toISOString().slice(0, 10);
    const month = monthOf(now);
    assert.equal(await exists(db, partitionName(month)), false, 'no partition for that month yet');

    const auth = await ok(h, `${N}/authorize`, { cardId, amount: 10 });
    const held = await ok(h, `${N}/authorize`, { cardId, amount: 5 });
    assert.equal((await h.call(QUERY, { tradeId: auth.tradeId, randomStr: randomStr() })).body.model.trade.tradeId, auth.tradeId);
    const pay = await ok(h, `${N}/clear`, { tradeId: auth.tradeId, amount: 4 });
    for (const id of [auth.tradeId, held.tradeId, pay.tradeId]) assert.equal(await partitionOf(db, id), 'trades_default');
    const before = await list(h, cardId, day, day);
    assert.deepEqual(
      before.tradeList.map((x) => x.tradeId),
      [pay.tradeId, held.tradeId, auth.tradeId],
    );

    // The next pass (start-up, or the hourly reaper) makes the months around the clock's, the default's month among them.
    const made = await ensureTradePartitions(h.db.database, now);
    assert.ok(made.includes(month), `made ${made}`);
    assert.equal(made.length, 5, 'the month before, this one and three after');
    for (const id of [auth.tradeId, held.tradeId, pay.tradeId]) assert.equal(await partitionOf(db, id), partitionName(month));
    const { rows } = await sql<{ n: string }>`select count(*) as n from trades_default`.execute(db);
    assert.equal(Number(rows[0]?.n), 0);
    assert.deepEqual(await list(h, cardId, day, day), before);
    // Settled where it now is: the hold released.
    const rev = await ok(h, `${N}/reverse`, { tradeId: held.tradeId });
    assert.equal(await partitionOf(db, rev.tradeId), partitionName(month));
    assert.deepEqual(await ensureTradePartitions(h.db.database, now), [], 'nothing more to make');
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('passes at once make each month once, while records of that month arrive; a record routed to the default while its month is attached is written again into the new partition', async (t) => {
    let now = Date.now();
    const h = await build(t, dialect, {}, { clock: () => now });
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const db = h.db.database.db;

    // Years ahead: no partition for these months. Four passes and twenty authorizations at once.
    now += 7 * 365 * DAY;
    const month = monthOf(now);
    const authorizing = Array.from({ length: 20 }, () => ok(h, `${N}/authorize`, { cardId, amount: 1 }));
    // A pass that waits more than 1 s for a table lock gives up (55P03) and is tried again, as the
    // hourly reaper would.
    const pass = async (): Promise<string[]> => {
      for (;;) {
        try {
          return await ensureTradePartitions(h.db.database, now);
        } catch (err) {
          if ((err as { code?: string }).code !== '55P03') throw err;
        }
      }
    };
    const passes = await Promise.all([1, 2, 3, 4].map(() => pass()));
    const ids = (await Promise.all(authorizing)).map((a) => a.tradeId as string);
    const made = passes.flat().sort();
    assert.equal(made.length, 5);
    assert.equal(new Set(made).size, 5, 'no month made twice');
    assert.ok(made.includes(month));
    for (const id of ids) assert.equal(await partitionOf(db, id), partitionName(month));
    assert.equal((await list(h, cardId, new Date(now).toISOString().slice(0, 10), new Date(now).toISOString().slice(0, 10))).total, 20);

    // The race the pass's locks leave open: a record with no money moved (a balance inquiry, which
    // locks its card's row but writes no balance) routed to the default partition before its month's
    // partition was attached. Played by hand in the pass's order (lock the default, make the table,
    // attach), with the inquiry waiting on the default partition's lock in between.
    now += 2 * 365 * DAY;
    const later = monthOf(now);
    const byHand = new pg.Client({ connectionString: h.db.url, options: `-c search_path=${h.db.pgSchema}` });
    await byHand.connect();
    t.after(() => byHand.end());
    await byHand.query('begin');
    await byHand.query('lock table trades_default in share row exclusive mode');
    const inquiring = h.call(`${N}/balanceInquiry`, { cardId, randomStr: randomStr() });
    for (let i = 0; ; i++) {
      const { rows } = await byHand.query(
        `select count(*)::int as n from pg_locks where not granted and relation = 'trades_default'::regclass`,
      );
      if (rows[0].n > 0) break;
      assert.ok(i < 400, 'the inquiry waits for the lock');
      await new Promise((r) => setTimeout(r, 10));
    }
    const name = partitionName(later);
    const [y, m] = later.split('-').map(Number) as [number, number];
    const next = new Date(Date.UTC(y, m, 1)).toISOString().slice(0, 10);
    await byHand.query(`create table ${name} (like trades including defaults including constraints)`);
    await byHand.query(`alter table trades attach partition ${name} for values from ('${later}-01') to ('${next}')`);
    await byHand.query('commit');
    const res = await inquiring;
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(await partitionOf(db, res.body.model.tradeId), name);
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('an id is unique across months (trade_ids), and a trade’s id and business date never change', async (t) => {
    const h = await build(t, dialect, {}, { clock: () => MARCH_2031 });
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const a = await ok(h, `${N}/authorize`, { cardId, amount: 1, businessDate: '2031-02-27' });
    const db = h.db.database.db;
    // The same id in another month: another partition, refused all the same.
    await assert.rejects(
      sql`insert into trades (id, merchant_id, card_id, trade_type, trade_status, currency, amount, fee, currency_txn,
            txn_amount, business_date, auth_code, remark, original_id, held, refunded, created_at)
          select id, merchant_id, card_id, trade_type, trade_status, currency, amount, fee, currency_txn,
            txn_amount, '2031-03-02', auth_code, remark, original_id, 0, refunded, created_at
          from trades where id = ${a.tradeId}`.execute(db),
      (err: { code?: string; constraint?: string }) => err.code === '23505' && err.constraint === 'trade_ids_pkey',
    );
    await assert.rejects(sql`update trades set business_date = '2031-03-02' where id = ${a.tradeId}`.execute(db), /never change/);
    // Settling it does not touch either: allowed.
    await ok(h, `${N}/clear`, { tradeId: a.tradeId, businessDate: '2031-03-02' });
    const ids = await db.selectFrom('trade_ids').selectAll().where('id', '=', a.tradeId).execute();
    assert.deepEqual(ids, [{ id: a.tradeId, business_date: '2031-02-27' }]);
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
    // ledger check finds an id claimed for another day than its trade's (a hand-made fault).
    await sql`update trade_ids set business_date = '2031-02-26' where id = ${a.tradeId}`.execute(db);
    const problems = (await checkLedger(h.db.database)).problems;
    assert.equal(problems.length, 2, problems.join('\n'));
    assert.match(problems.join('\n'), new RegExp(`trade ${a.tradeId} \\(2031-02-27\\): its id is not claimed`));
  });

  it('migration 0014 moves the records of a database migrated up to 0012 into their months, and they list, settle and check as before', async (t) => {
    const h = await build(t, dialect, {}, { clock: () => MARCH_2031 });
    const { cardId } = await fundedCard(h, { topUp: 500 });
    const made: string[] = [];
    for (const day of ['2031-02-27', '2031-02-28', '2031-03-01', '2031-03-02', '2029-06-15']) {
      made.push((await ok(h, `${N}/authorize`, { cardId, amount: 2, businessDate: day })).tradeId);
    }
    await ok(h, `${N}/clear`, { tradeId: made[1], businessDate: '2031-03-01' });
    const window = (hh: Harness) => list(hh, cardId, '2031-02-20', '2031-03-20');
    const listed = await window(h);

    // Another database, migrated to the state before 0014, holding the same rows (copied table by table).
    const old = await isolatedDatabase(dialect);
    t.after(() => old.cleanup());
    await migrateBefore(old, '2026_11_24_0014_trades_partitioned');
    assert.equal(await exists(old.database.db, 'trade_ids'), false);
    await copyRows(h.db, old);

    // 0014 and whatever came after it.
    const from0014 = MIGRATIONS.slice(MIGRATIONS.findIndex(([n]) => n === '2026_11_24_0014_trades_partitioned')).map(([n]) => n);
    assert.deepEqual(await migrateToLatest(old.database), from0014);
    const db = old.database.db;
    const { rows } = await sql<{ p: string; n: string }>`
      select tableoid::regclass::text as p, count(*) as n from trades group by 1 order by 1`.execute(db);
    // Every month with records has its partition; the default is empty.
    assert.deepEqual(
      rows.map((r) => [r.p, Number(r.n)]),
      [
        ['trades_2029_06', 1],
        ['trades_2031_02', 2],
        ['trades_2031_03', 4],
      ],
    );
    for (const m of [-1, 0, 1, 2, 3]) {
      const month = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + m, 1)).toISOString().slice(0, 7);
      assert.ok(await exists(db, partitionName(month)), `${month} made ahead`);
    }
    const count = async (k: Kysely<DB>, table: 'trades' | 'trade_ids') =>
      Number(
        (
          await withTrades(k)
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    assert.equal(await count(db, 'trade_ids'), await count(h.db.database.db, 'trades'));
    const report = await checkLedger(old.database);
    assert.deepEqual(report.problems, []);
    assert.equal(report.trades, 7);

    // The service on the migrated database: the same list, and an old authorization settles (by id, through trade_ids).
    const app = await buildApp(testConfig(old.dataDir, { masterKey: h.config.masterKey }), {
      database: old.database,
      ...testLogging(),
      clock: () => MARCH_2031,
    });
    t.after(() => app.close());
    const migrated: Harness = {
      ...h,
      app,
      call: async (path, body) => {
        const res = await app.inject({
          method: 'POST',
          url: path,
          payload: sign(body, h.merchant),
          headers: { 'content-type': 'application/json' },
        });
        return { status: res.statusCode, body: res.json(), headers: res.headers };
      },
    };
    assert.deepEqual(await window(migrated), listed);
    const pay = await ok(migrated, `${N}/clear`, { tradeId: made[0], businessDate: '2031-03-02' });
    assert.equal(await partitionOf(db, pay.tradeId), 'trades_2031_03');
    assert.equal((await window(migrated)).total, listed.total + 1);
    // New records take seqs after the copied ones: the payment comes before its day's older record.
    assert.deepEqual(
      (await window(migrated)).tradeList.slice(1, 3).map((x) => x.tradeId),
      [pay.tradeId, made[3]],
    );
    assert.deepEqual((await checkLedger(old.database)).problems, []);
  });
});

/** Applies the migrations before `name`, as migrateToLatest would (recorded, in one transaction). */
async function migrateBefore(db: IsolatedDatabase, name: string): Promise<void> {
  const upTo = MIGRATIONS.findIndex(([n]) => n === name);
  assert.ok(upTo > 0);
  await db.database.withTx(async (tx) => {
    const k = tx as unknown as Kysely<any>;
    await k.schema
      .createTable('cardprogram_migrations')
      .addColumn('name', 'varchar(128)', (c) => c.primaryKey())
      .addColumn('applied_at', 'bigint', (c) => c.notNull())
      .execute();
    for (const [n, migration] of MIGRATIONS.slice(0, upTo)) {
      await migration.up(k);
      await k.insertInto('cardprogram_migrations').values({ name: n, applied_at: Date.now() }).execute();
    }
  });
}

/** Copies every row of `from` into `to` (its own schema on the same PostgreSQL), sequences included. */
async function copyRows(from: IsolatedDatabase, to: IsolatedDatabase): Promise<void> {
  const source = from.pgSchema as string;
  await to.database.withTx(async (tx) => {
    // Foreign keys and triggers off while copying: the tables go in any order.
    await sql`set local session_replication_role = replica`.execute(tx);
    for (const table of await ownTables(to)) {
      const cols = sql.join(table.columns.map((c) => sql.ref(c)));
      await sql`insert into ${sql.table(table.name)} (${cols}) select ${cols} from ${sql.table(`${source}.${table.name}`)}`.execute(tx);
    }
    const { rows } = await sql<{ name: string }>`
      select sequencename as name from pg_sequences where schemaname = current_schema()`.execute(tx);
    for (const { name } of rows) {
      await sql`select setval(${name}::regclass, (select coalesce(last_value, 1) from ${sql.table(`${source}.${name}`)}))`.execute(tx);
    }
  });
}
