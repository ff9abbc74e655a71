/**
 * The figures behind docs/operations.md, "The arithmetic" (issue 19): on PostgreSQL, what one durable
 * authorization costs the database, and what a stored trade takes on disk.
 *
 * - WAL bytes per authorization (pg_current_wal_lsn before and after), WAL records, full-page images
 *   and WAL flushes (pg_stat_wal) per authorization, 16 at once over 64 cards;
 * - CPU per authorization of this process (the verbs, Kysely, pg; no HTTP) and, when
 *   BENCH_PG_PID names the postmaster of a PostgreSQL on this machine, of every PostgreSQL process;
 * - bytes per row, heap and indexes, of the tables an authorization writes, after VACUUM.
 *
 * WAL and CPU are the server's, not this run's alone: run it against a PostgreSQL nothing else
 * writes to (a cluster of its own: `initdb`, `pg_ctl start`), or the figures include the others'.
 *
 *   BENCH_PG_URL=postgres://postgres@127.0.0.1:5499/test BENCH_PG_PID=$(head -1 $PGDATA/postmaster.pid) npm run bench:scale
 *   npm run bench:scale -- --quick          a few hundred authorizations: checks that it works
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, hostname } from 'node:os';
import { sql } from 'kysely';
import { pino } from 'pino';
import { applyCard } from '../src/cards/apply.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createHolder } from '../src/holders/create.js';
import { reviewHolder } from '../src/holders/review.js';
import { authorize } from '../src/ledger/authorize.js';
import { topUp } from '../src/ledger/fund.js';
import { fundMerchant } from '../src/ledger/funding.js';
import { createMerchant } from '../src/merchants/create.js';
import { runVerb } from '../src/runner.js';
import { createServices } from '../src/services.js';
import { testConfig } from '../test/helpers/app.js';
import { DEFAULT_PG_URL, isolatedDatabase } from '../test/helpers/db.js';

const quick = process.argv.includes('--quick');
const AUTHS = quick ? 300 : 20_000;
const CARDS = quick ? 8 : 64;
const CONCURRENCY = 16;
const url = process.env.BENCH_PG_URL ?? process.env.TEST_POSTGRES_URL ?? DEFAULT_PG_URL;
const postmaster = process.env.BENCH_PG_PID;

/** CPU ms used so far by the postmaster and its children (Linux /proc; clock ticks of 10 ms). */
function postgresCpuMs(): number {
  let ms = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ');
      if (pid === postmaster || fields[1] === postmaster) ms += (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      // A process that ended meanwhile.
    }
  }
  return ms;
}

const db = await isolatedDatabase({ name: 'postgres', url });
try {
  await migrateToLatest(db.database);
  const k = db.database.db;
  const svc = createServices(testConfig(db.dataDir, { databaseUrl: db.url }), db.database, pino({ level: 'silent' }));
  await svc.vault.ensureKeys(k);
  const { appId: merchantId } = await runVerb(svc, createMerchant, { input: { name: 'Scale', signType: 'HMAC-SHA256' }, actor: 'bench' });
  await runVerb(svc, fundMerchant, {
    input: { appId: merchantId, currency: 'EUR', amount: '100000000', reference: 'bench' },
    actor: 'bench',
  });
  const cards: string[] = [];
  for (let c = 0; c < CARDS; c++) {
    const holder = await runVerb(svc, createHolder, {
      merchantId,
      actor: 'bench',
      input: {
        mobile: '+4915112345678',
        firstName: 'Scale',
        lastName: 'Holder',
        email: `scale${c}@example.com`,
        dateOfBirth: '1990-01-01',
        nationality: 'DE',
        sex: 1,
        countryCode: 'DE',
        town: 'Berlin',
        address: 'Street 1',
        postCode: '10115',
        idnoType: 2,
        idno: `S${String(c).padStart(8, '0')}`,
      },
    });
    await runVerb(svc, reviewHolder, { input: { holderId: holder.holderId, auditStatus: 2 }, merchantId, actor: 'bench' });
    const card = await runVerb(svc, applyCard, { input: { holderId: holder.holderId, currency: 'EUR' }, merchantId, actor: 'bench' });
    await runVerb(svc, topUp, { input: { cardId: card.cardId, amount: 100_000 }, merchantId, actor: 'bench' });
    cards.push(card.cardId);
  }
  const authorizeOne = (i: number) => {
    const input = { cardId: cards[i % cards.length] as string, amount: 1 };
    // As the route runs it: once per randomStr, the answer stored with the effect.
    const once = { randomStr: randomBytes(16).toString('hex'), operation: 'sandboxAuthorize', canonical: JSON.stringify(input) };
    return runVerb(svc, authorize, { input, merchantId, actor: 'bench', once });
  };
  for (let i = 0; i < 200; i++) await authorizeOne(i);

  const lsn = async () => (await sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(k)).rows[0]?.lsn ?? '0/0';
  await sql`checkpoint`.execute(k);
  await sql`select pg_stat_reset_shared('wal')`.execute(k);
  const from = await lsn();
  const pg0 = postgresCpuMs();
  const node0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < AUTHS) await authorizeOne(next++);
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const nodeCpu = process.cpuUsage(node0);
  const pgCpu = postgresCpuMs() - pg0;
  const to = await lsn();
  const bytes = Number((await sql<{ d: string }>`select pg_wal_lsn_diff(${to}::pg_lsn, ${from}::pg_lsn) as d`.execute(k)).rows[0]?.d);
  // Each server process reports its WAL counters when idle for a while (PostgreSQL 15: within 10 s).
  await new Promise((resolve) => setTimeout(resolve, 11_000));
  const wal = (
    await sql<{ wal_records: string; wal_fpi: string; wal_sync: string }>`select wal_records, wal_fpi, wal_sync from pg_stat_wal`.execute(k)
  ).rows[0];
  const per = (n: number, digits = 2) => Math.round((n / AUTHS) * 10 ** digits) / 10 ** digits;

  await sql`vacuum analyze`.execute(k);
  const { rows } = await sql<{ name: string; heap: string; indexes: string; n: number }>`
    select t.relname as name, pg_relation_size(t.oid) as heap, t.reltuples as n,
      coalesce((select sum(pg_relation_size(i.indexrelid)) from pg_index i where i.indrelid = t.oid), 0) as indexes
    from pg_class t
    where t.relnamespace = current_schema()::regnamespace and t.relkind = 'r' and t.reltuples >= ${AUTHS / 2}
    order by 1`.execute(k);

  const result = {
    authorizations: AUTHS,
    cards: CARDS,
    concurrency: CONCURRENCY,
    authorizationsPerSecond: Math.round(AUTHS / seconds),
    perAuthorization: {
      walBytes: per(bytes, 0),
      walRecords: per(Number(wal?.wal_records)),
      fullPageImages: per(Number(wal?.wal_fpi)),
      walFlushes: per(Number(wal?.wal_sync)),
      cpuMsThisProcess: per((nodeCpu.user + nodeCpu.system) / 1000),
      cpuMsPostgres: postmaster ? per(pgCpu) : null,
    },
    bytesPerRow: Object.fromEntries(
      rows.map((r) => [
        r.name,
        { rows: Number(r.n), heap: Math.round(Number(r.heap) / r.n), indexes: Math.round(Number(r.indexes) / r.n) },
      ]),
    ),
  };
  const report = {
    date: new Date().toISOString(),
    machine: `${hostname()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}`,
    quick,
    result,
  };
  console.log(JSON.stringify(report, null, 2));
  if (!quick) {
    mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
    writeFileSync(new URL('./results/scale-postgres.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
  }
} finally {
  await db.cleanup();
}
