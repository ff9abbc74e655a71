/**
 * Benchmark of the ledger (issue: cards and the transaction ledger).
 *
 * 1. The 4.1 list at flat cost: with N stored trades (default 1,000,000) of which one hot card holds
 *    20 % (200,000) in a 30-day window, the whole list operation in process (total + page, any start
 *    including the last page) against an ordinary card with 100 trades; and, for contrast, the naive
 *    COUNT(*) + OFFSET query on the same data.
 * 2. Durable authorizations per second through the domain verb (idempotency key, balance move,
 *    journal entry, trade, day count: one committed transaction each), one at a time and 16 at once:
 *    plain; on a card with 3 active spending controls (a daily limit, blocked MCCs, allowed
 *    countries) and a cardholder's monthly limit, on the hot card with its long history (the check
 *    is a counter per limit, not a scan); and with the merchant's authorization endpoint pointing at a
 *    local receiver that answers in 1 ms (issue 16).
 *
 * Seeding writes the rows directly (the same tables and per-day counts the verbs maintain), because
 * a million acknowledged one-by-one writes would take the benchmark's whole budget.
 *
 *   npm run bench:ledger                     both databases, full size
 *   npm run bench:ledger -- --quick          tiny sizes: checks that it works (CI)
 *   BENCH_TRADES=100000 npm run bench:ledger
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, hostname } from 'node:os';
import { sql } from 'kysely';
import { pino } from 'pino';
import { applyCard } from '../src/cards/apply.js';
import type { Services } from '../src/context.js';
import { updateControls } from '../src/controls/update.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { withTrades } from '../src/db/trades-table.js';
import type { AuthorizationEndpoint } from '../src/directories/merchants.js';
import { createHolder } from '../src/holders/create.js';
import { reviewHolder } from '../src/holders/review.js';
import { authorize } from '../src/ledger/authorize.js';
import { topUp } from '../src/ledger/fund.js';
import { fundMerchant } from '../src/ledger/funding.js';
import { createMerchant } from '../src/merchants/create.js';
import { runVerb } from '../src/runner.js';
import { authorizeWithEndpoint } from '../src/sandbox/authorize-with-endpoint.js';
import { createServices } from '../src/services.js';
import { listTrades } from '../src/trades/list.js';
import { testConfig } from '../test/helpers/app.js';
import { isolatedDatabase, type TestDialect } from '../test/helpers/db.js';
import { dayBefore, seedTrades } from './seed.js';

const quick = process.argv.includes('--quick');
const TOTAL = Number(process.env.BENCH_TRADES ?? (quick ? 3000 : 1_000_000));
const HOT = Math.round(TOTAL * 0.2);
const ORDINARY = 100;
const ITERATIONS = quick ? 50 : 5000;
const AUTHS = quick ? 50 : 2000;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function stats(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: round(percentile(s, 50)), p99: round(percentile(s, 99)), max: round(s.at(-1) ?? 0) };
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

const TODAY = new Date(Date.UTC(2026, 10, 22));
const day = (offset: number) => dayBefore(TODAY, offset);

function progress(label: string, done: number, total: number) {
  if (!process.stderr.isTTY) return;
  const width = 30;
  const filled = Math.round((done / total) * width);
  process.stderr.write(`\r${label} [${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${done}/${total}`);
  if (done === total) process.stderr.write('\n');
}

async function setup(dialect: TestDialect) {
  const db = await isolatedDatabase(dialect);
  const config = testConfig(db.dataDir, { databaseUrl: db.url, merchantCacheMs: 5000 });
  await migrateToLatest(db.database);
  const svc = createServices(config, db.database, pino({ level: 'silent' }));
  await svc.vault.ensureKeys(db.database.db);
  const merchant = await runVerb(svc, createMerchant, { input: { name: 'Bench', signType: 'HMAC-SHA256' }, actor: 'test' });
  return { db, svc, merchantId: merchant.appId };
}

async function newCard(svc: Services, merchantId: string, i: number): Promise<string> {
  const now = Date.now();
  const holder = await runVerb(svc, createHolder, {
    merchantId,
    actor: 'bench',
    now,
    input: {
      mobile: '+4915112345678',
      firstName: 'Bench',
      lastName: `Holder`,
      email: `bench${i}@example.com`,
      dateOfBirth: '1990-01-01',
      nationality: 'DE',
      sex: 1,
      countryCode: 'DE',
      town: 'Berlin',
      address: 'Street 1',
      postCode: '10115',
      idnoType: 2,
      idno: `P${String(i).padStart(8, '0')}`,
    },
  });
  await runVerb(svc, reviewHolder, { input: { holderId: holder.holderId, auditStatus: 2 }, merchantId, actor: 'bench', now });
  const card = await runVerb(svc, applyCard, { input: { holderId: holder.holderId, currency: 'EUR' }, merchantId, actor: 'bench', now });
  return card.cardId;
}

/**
 * Times the list on the hot and the ordinary card alternately, so both see the same garbage
 * collections and machine noise; any start, the first three being the first, the last page and the
 * last record.
 */
async function timeLists(svc: Services, merchantId: string, cards: Array<{ cardId: string; total: number }>, maxSize = 30) {
  const samples = cards.map(() => [] as number[]);
  for (let i = 0; i < ITERATIONS; i++) {
    for (const [c, { cardId, total }] of cards.entries()) {
      const starts = [0, Math.max(0, total - maxSize), Math.max(0, total - 1)];
      const start = i < starts.length ? (starts[i] as number) : Math.floor(Math.random() * total);
      const t0 = performance.now();
      const page = await listTrades({
        db: svc.database.db,
        vault: svc.vault,
        merchantId,
        input: { cardId, beginDate: day(29), endDate: day(0), start, maxSize, tradeStatusList: [1, 2, 3, 6, 7, 10] },
      });
      samples[c]?.push(performance.now() - t0);
      if (page.total !== total) throw new Error(`total ${page.total}, expected ${total}`);
      if (start < total && page.tradeList.length === 0) throw new Error(`empty page at ${start}`);
    }
  }
  return samples.map(stats);
}

/** The approach the per-day counts replace: COUNT(*) over the window and OFFSET into it. */
async function timeNaive(svc: Services, cardId: string, total: number) {
  const samples: number[] = [];
  const n = Math.min(ITERATIONS, 200);
  for (let i = 0; i < n; i++) {
    const start = i === 0 ? Math.max(0, total - 30) : Math.floor(Math.random() * total);
    const t0 = performance.now();
    await withTrades(svc.database.db)
      .selectFrom('trades')
      .select(sql<number>`count(*)`.as('n'))
      .where('card_id', '=', cardId)
      .where('business_date', '>=', day(29))
      .where('business_date', '<=', day(0))
      .executeTakeFirst();
    await withTrades(svc.database.db)
      .selectFrom('trades')
      .selectAll()
      .where('card_id', '=', cardId)
      .where('business_date', '>=', day(29))
      .where('business_date', '<=', day(0))
      .orderBy('business_date', 'desc')
      .orderBy('seq', 'desc')
      .limit(30)
      .offset(start)
      .execute();
    samples.push(performance.now() - t0);
  }
  return stats(samples);
}

type AuthorizeHow = 'plain' | 'controls' | 'endpoint';

/** A merchant's authorization endpoint on loopback that approves everything after 1 ms. */
async function approvingEndpoint(): Promise<{ url: string; close: () => void }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"approved":true}'), 1));
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/authorize`, close: () => server.close() };
}

async function timeAuthorizations(svc: Services, merchantId: string, cardId: string, concurrency: number, how: AuthorizeHow = 'plain') {
  // Top-ups draw from the merchant's funding account (docs/funding.md): the operator credits it first.
  await runVerb(svc, fundMerchant, {
    input: { appId: merchantId, currency: 'EUR', amount: '1000000', reference: 'bench' },
    actor: 'bench',
  });
  await runVerb(svc, topUp, { input: { cardId, amount: 1_000_000 }, merchantId, actor: 'bench' });
  const endpoint = how === 'endpoint' ? await approvingEndpoint() : null;
  // As the route finds it: the merchant's settings, from the merchant directory.
  let settings: AuthorizationEndpoint | null = null;
  if (endpoint) {
    await svc.database.db.updateTable('merchants').set({ authorization_url: endpoint.url }).where('id', '=', merchantId).execute();
    svc.merchants.forget(merchantId);
    settings = (await svc.merchants.get(merchantId))?.authorizationEndpoint ?? null;
  }
  const approvedSoFar = async () =>
    Number(
      (
        await svc.database.db
          .selectFrom('authorizations')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('card_id', '=', cardId)
          .where('approved', '=', 1)
          .executeTakeFirstOrThrow()
      ).n,
    );
  const before = await approvedSoFar();
  if (how === 'controls') {
    const card = await svc.database.db.selectFrom('cards').select('holder_id').where('id', '=', cardId).executeTakeFirstOrThrow();
    const controls = {
      spendingLimits: [{ amount: 10_000_000, interval: 'daily' as const }],
      blockedMccs: ['7995'],
      allowedCountries: ['DE', 'FR'],
    };
    await runVerb(svc, updateControls, { input: { cardId, controls }, merchantId, actor: 'bench' });
    await runVerb(svc, updateControls, {
      input: { holderId: card.holder_id, controls: { spendingLimits: [{ amount: 10_000_000, interval: 'monthly' as const }] } },
      merchantId,
      actor: 'bench',
    });
  }
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < AUTHS) {
      const i = next++;
      const randomStr = randomBytes(16).toString('hex');
      const input = how === 'plain' ? { cardId, amount: 1 } : { cardId, amount: 1, mcc: '5411', merchantCountry: 'DE' };
      // As the route runs it: once per randomStr, the answer stored with the effect.
      const once = { randomStr, operation: 'sandboxAuthorize', canonical: JSON.stringify(input) };
      if (settings) {
        await authorizeWithEndpoint(svc, merchantId, settings, once, input);
      } else {
        await runVerb(svc, authorize, { input, merchantId, actor: 'bench', once });
      }
      if (i % 100 === 0) progress(`  authorizations ×${concurrency}`, Math.min(i + 100, AUTHS), AUTHS);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - t0) / 1000;
  endpoint?.close();
  if (endpoint) {
    await svc.database.db.updateTable('merchants').set({ authorization_url: null }).where('id', '=', merchantId).execute();
    svc.merchants.forget(merchantId);
  }
  const approved = (await approvedSoFar()) - before;
  if (approved !== AUTHS) throw new Error(`${how}: ${approved} of ${AUTHS} authorizations approved`);
  return Math.round(AUTHS / seconds);
}

async function run(dialect: TestDialect) {
  console.error(`\n== ${dialect.name}: ${TOTAL.toLocaleString('en')} trades, hot card ${HOT.toLocaleString('en')} in 30 days`);
  const { db, svc, merchantId } = await setup(dialect);
  try {
    const hot = await newCard(svc, merchantId, 1);
    const ordinary = await newCard(svc, merchantId, 2);
    const t0 = performance.now();
    await seedTrades(svc.database, merchantId, hot, HOT, 30, 'hot', TODAY);
    progress('  seeding', HOT, TOTAL);
    await seedTrades(svc.database, merchantId, ordinary, ORDINARY, 30, 'ord', TODAY);
    const others = TOTAL - HOT - ORDINARY;
    const perCard = 10_000;
    let seeded = HOT + ORDINARY;
    for (let c = 0; seeded < TOTAL; c++) {
      const n = Math.min(perCard, others - (seeded - HOT - ORDINARY));
      await seedTrades(svc.database, merchantId, await newCard(svc, merchantId, 10 + c), n, 365, `o${c}`, TODAY);
      seeded += n;
      progress('  seeding', seeded, TOTAL);
    }
    // As after any bulk import: statistics, and the visibility map index-only scans rely on.
    if (dialect.name === 'postgres') await sql`vacuum analyze`.execute(db.database.db);
    const seedSeconds = Math.round((performance.now() - t0) / 100) / 10;
    const [hotList, ordinaryList] = await timeLists(svc, merchantId, [
      { cardId: hot, total: HOT },
      { cardId: ordinary, total: ORDINARY },
    ]);
    if (!hotList || !ordinaryList) throw new Error('no samples');
    const naive = await timeNaive(svc, hot, HOT);
    const serial = await timeAuthorizations(svc, merchantId, await newCard(svc, merchantId, 3), 1);
    const parallel = await timeAuthorizations(svc, merchantId, await newCard(svc, merchantId, 4), 16);
    // The controls on the hot card: its 200,000 records do not enter the check.
    const controlsSerial = await timeAuthorizations(svc, merchantId, hot, 1, 'controls');
    const controlsParallel = await timeAuthorizations(svc, merchantId, hot, 16, 'controls');
    const endpointSerial = await timeAuthorizations(svc, merchantId, await newCard(svc, merchantId, 5), 1, 'endpoint');
    const endpointParallel = await timeAuthorizations(svc, merchantId, await newCard(svc, merchantId, 6), 16, 'endpoint');
    return {
      dialect: dialect.name,
      trades: TOTAL,
      hotCardTrades: HOT,
      seedSeconds,
      listHotCardMs: hotList,
      listOrdinaryCardMs: ordinaryList,
      hotToOrdinaryP99: Math.round((hotList.p99 / ordinaryList.p99) * 100) / 100,
      naiveCountOffsetMs: naive,
      durableAuthorizationsPerSecond: { sequential: serial, concurrent16: parallel },
      withThreeControlsOnTheHotCard: { sequential: controlsSerial, concurrent16: controlsParallel },
      withEndpointAnswering1ms: { sequential: endpointSerial, concurrent16: endpointParallel },
    };
  } finally {
    await db.cleanup();
  }
}

const dialects: TestDialect[] = [];
const which = process.env.BENCH_DIALECTS ?? 'sqlite,postgres';
if (which.includes('sqlite')) dialects.push({ name: 'sqlite', url: 'file:' });
if (which.includes('postgres'))
  dialects.push({ name: 'postgres', url: process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test' });

const results = [];
for (const d of dialects) results.push(await run(d));
const report = {
  date: new Date().toISOString(),
  machine: `${hostname()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`,
  quick,
  results,
};
console.log(JSON.stringify(report, null, 2));
if (!quick) {
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  for (const r of results) {
    writeFileSync(
      new URL(`./results/ledger-${r.dialect}.json`, import.meta.url),
      `${JSON.stringify({ ...report, results: [r] }, null, 2)}\n`,
    );
  }
}
