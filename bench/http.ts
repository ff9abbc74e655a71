/**
 * The interface's operations over loopback, side by side with the ceiling of this machine.
 *
 * For each database the service runs as its own process (the built `bin/cardprogram.js`, as in
 * production) on a fresh database, filled through its own verbs (`cardprogram demo --trades N`).
 * autocannon then drives each operation with 50 connections, every request freshly signed with its
 * own `randomStr` (and its own `idno`, `requestNo` or e-mail where the operation needs one), and
 * drives a bare `node:http` server (bench/ceiling.mjs: parse a JSON body, answer a JSON body of the
 * same size) with the very same requests. Reported: requests/s, p50/p99 latency, the ratio to the
 * ceiling, the service's peak RSS, and how long it takes to be ready on an existing database.
 *
 *   npm run bench:http                 both databases, 10 s per operation, 10,000 trades
 *   npm run bench:http -- --quick      tiny sizes, a few seconds (CI: checks that it works)
 *   BENCH_DB=sqlite npm run bench:http
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { hmacSign, signingString } from '../src/http/signing.js';
import { holderBody, kycBody } from '../test/helpers/app.js';
import { childDatabaseUrl, ROOT } from '../test/helpers/cli.js';
import { isolatedDatabase, type TestDialect } from '../test/helpers/db.js';
import { dayBefore, seedTrades } from './seed.js';

const quick = process.argv.includes('--quick');
const DURATION_S = quick ? 1 : Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 50;
const FILL_TRADES = quick ? 100 : Number(process.env.BENCH_TRADES ?? 10_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Peak resident memory of a process, from /proc (Linux), in MB. */
function peakRssMb(pid: number | undefined): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

async function waitReady(base: string, child: ChildProcess, started: number): Promise<number> {
  for (let i = 0; i < 400; i++) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/healthz`)).ok) return Math.round(performance.now() - started);
    } catch {}
    await sleep(5);
  }
  throw new Error('service did not become ready');
}

async function startService(env: Record<string, string>) {
  const port = 20000 + Math.floor(Math.random() * 10000);
  const started = performance.now();
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'cardprogram.js'), 'serve'], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  const readyMs = await waitReady(base, child, started);
  return { child, base, readyMs };
}

async function startCeiling(): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'bench', 'ceiling.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.once('data', (d) => resolve(JSON.parse(String(d)).port));
    child.once('exit', () => reject(new Error('ceiling server exited')));
  });
  return { child, base: `http://127.0.0.1:${port}` };
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });

interface Operation {
  name: string;
  path: string;
  /** Whether the operation takes a randomStr (KYC submission is keyed by its requestNo instead). */
  randomStr: boolean;
  body: (n: number) => Record<string, unknown>;
}

function operations(cards: string[]): Operation[] {
  const today = new Date().toISOString().slice(0, 10);
  const from = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10);
  const run = randomBytes(3).toString('hex');
  return [
    {
      name: 'transaction list (4.1)',
      path: '/api/network/networkAuthTradeList.html',
      randomStr: true,
      body: (n) => ({ cardId: cards[n % cards.length], beginDate: from, endDate: today, start: 0, maxSize: 10 }),
    },
    {
      name: 'create cardholder (4.2)',
      path: '/api/network/holderCreate.html',
      randomStr: true,
      body: (n) => holderBody({ email: `bench.${run}.${n}@example.com`, idnoType: 2, idno: `B${run}${n}`.toUpperCase() }),
    },
    {
      name: 'KYC submission (4.3)',
      path: '/open/api/kyc/share/information',
      randomStr: false,
      body: (n) =>
        kycBody(
          { requestNo: `BENCH-${run}-${n}`, email: `kyc.${run}.${n}@example.com`, callbackUrl: 'https://merchant.example/hooks' },
          { number: `FR${run}${n}` },
        ),
    },
    {
      name: 'login-free link (4.4)',
      path: '/open/merchant/api/v2',
      randomStr: false,
      body: (n) => ({ email: `page.${run}.${n}@example.com` }),
    },
  ];
}

interface Measured {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

type Signer = (body: Record<string, unknown>, withRandomStr: boolean) => string;

async function drive(base: string, op: Operation, sign: Signer, query = '', seconds = DURATION_S): Promise<Measured> {
  let n = Math.floor(Math.random() * 1e9);
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        path: `${op.path}${query}`,
        headers: { 'content-type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: sign(op.body(n++), op.randomStr) }),
      },
    ],
  });
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

const FLAT_SIZES = quick ? [1_000, 3_000] : [10_000, 100_000, 1_000_000];
const FLAT_SECONDS = quick ? 1 : 5;

/**
 * The list over HTTP as the table grows: at each size (stored trades in all), a hot card holding
 * 20 % of them in the 30-day window and an ordinary card with its demo history, both listed at
 * random pages. Trades are seeded straight into the tables (the same rows and per-day counts the
 * verbs keep), as the ledger benchmark does.
 */
async function flatCost(
  database: Awaited<ReturnType<typeof isolatedDatabase>>['database'],
  dialectName: string,
  base: string,
  sign: Signer,
  merchantId: string,
  hotCard: string,
  ordinaryCard: string,
  startTotal: number,
) {
  const call = async (path: string, body: Record<string, unknown>, withRandomStr = true) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: sign(body, withRandomStr),
    });
    const json = (await res.json()) as Record<string, any>;
    if (!res.ok) throw new Error(`${path}: ${json.code} ${json.msg}`);
    return json.model ?? json;
  };
  const holder = await call(
    '/api/network/holderCreate.html',
    holderBody({ email: 'filler@example.com', idnoType: 2, idno: `F${randomBytes(4).toString('hex')}`.toUpperCase() }),
  );
  await call('/sandbox/holder/review', { holderId: holder.holderId, auditStatus: 2 });
  const today = new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
  const window = { beginDate: dayBefore(today, 29), endDate: dayBefore(today, 0), tradeStatusList: [1, 2, 3, 6, 7, 10] };
  const listTotal = async (cardId: string) =>
    (await call('/api/network/networkAuthTradeList.html', { cardId, ...window, start: 0, maxSize: 1 })).total as number;
  let stored = startTotal;
  let hot = 0;
  let round = 0;
  const rows = [];
  for (const size of FLAT_SIZES) {
    const hotAdd = Math.max(0, Math.round(size * 0.2) - hot);
    await seedTrades(database, merchantId, hotCard, hotAdd, 30, `hot${round}`, today);
    hot += hotAdd;
    stored += hotAdd;
    for (let c = 0; stored < size; c++) {
      const n = Math.min(50_000, size - stored);
      const card = await call('/api/network/cardApply.html', { holderId: holder.holderId, currency: 'EUR' });
      await seedTrades(database, merchantId, card.cardId, n, 365, `fill${round}_${c}`, today);
      stored += n;
    }
    round++;
    if (dialectName === 'postgres') await sql`vacuum analyze`.execute(database.db);
    const measure = async (cardId: string) => {
      const total = await listTotal(cardId);
      const op: Operation = {
        name: 'list',
        path: '/api/network/networkAuthTradeList.html',
        randomStr: true,
        body: () => ({ cardId, ...window, start: Math.floor(Math.random() * total), maxSize: 30 }),
      };
      await drive(base, op, sign, '', 1); // warm-up
      return { total, ...(await drive(base, op, sign, '', FLAT_SECONDS)) };
    };
    const hotM = await measure(hotCard);
    const ordM = await measure(ordinaryCard);
    rows.push({ storedTrades: stored, hotCard: hotM, ordinaryCard: ordM });
    process.stderr.write(
      `[${dialectName}] list at ${stored} stored trades: hot card (${hotM.total} in 30 days) p50 ${hotM.p50} ms p99 ${hotM.p99} ms ${hotM.rps} req/s; ordinary (${ordM.total}) p50 ${ordM.p50} ms p99 ${ordM.p99} ms ${ordM.rps} req/s\n`,
    );
  }
  return rows;
}

async function run(dialect: TestDialect) {
  const db = await isolatedDatabase(dialect);
  const dataDir = join(tmpdir(), `cardprogram-bench-${randomBytes(4).toString('hex')}`);
  mkdirSync(dataDir, { recursive: true });
  const env = {
    DATABASE_URL: childDatabaseUrl(db),
    CARDPROGRAM_DATA_DIR: dataDir,
    // API throughput alone: callbacks have their own benchmark (bench/callbacks.ts).
    CARDPROGRAM_WORKER: 'off',
    // The limiter runs but never refuses (one merchant sends it all); with this budget it leases rarely,
    // so its database cost is not in these figures (a merchant near its limit leases a batch at a time).
    CARDPROGRAM_RATE_LIMIT: '1000000',
    CARDPROGRAM_KYC_AUTO_DECISION_MS: '0',
  };
  const children: ChildProcess[] = [];
  try {
    const first = await startService(env);
    await stop(first.child);
    process.stderr.write(`[${dialect.name}] filling with ${FILL_TRADES} trades (cardprogram demo --trades)\n`);
    const filled = JSON.parse(
      execFileSync(
        process.execPath,
        [join(ROOT, 'bin', 'cardprogram.js'), 'demo', '--trades', String(FILL_TRADES), '--days', '30', '--seed', '1', '--json'],
        {
          cwd: ROOT,
          env: { ...process.env, ...env },
          stdio: ['ignore', 'pipe', 'inherit'],
          maxBuffer: 1 << 28,
        },
      ).toString(),
    );
    const cards: string[] = filled.holders.flatMap((h: { cards: Array<{ cardId: string }> }) => h.cards.map((c) => c.cardId));
    const demo = JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8'));
    // Start again on the existing database: how long until it serves?
    const service = await startService(env);
    const ceiling = await startCeiling();
    children.push(service.child, ceiling.child);
    const sign: Signer = (body, withRandomStr) => {
      const signed: Record<string, unknown> = { ...body, appId: demo.appId };
      if (withRandomStr) signed.randomStr = randomBytes(16).toString('hex');
      signed.sign = hmacSign(demo.secret, signingString(signed));
      return JSON.stringify(signed);
    };
    const rows = [];
    for (const op of operations(cards)) {
      // The service's answer size for this operation sets the ceiling's answer size.
      const sample = await fetch(`${service.base}${op.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: sign(op.body(0), op.randomStr),
      });
      const size = (await sample.text()).length;
      if (!sample.ok) throw new Error(`${op.name}: the sample request failed with ${sample.status}`);
      await drive(service.base, op, sign, '', 1); // warm-up
      const svc = await drive(service.base, op, sign);
      const top = await drive(ceiling.base, op, sign, `?size=${size}`);
      rows.push({
        operation: op.name,
        service: svc,
        ceiling: top,
        ratio: Math.round((svc.rps / top.rps) * 100) / 100,
        replyBytes: size,
      });
      process.stderr.write(
        `[${dialect.name}] ${op.name}: ${svc.rps} req/s (p50 ${svc.p50} ms, p99 ${svc.p99} ms, ${svc.non2xx} non-2xx, ${svc.errors} errors) vs ceiling ${top.rps} req/s → ${rows.at(-1)?.ratio}\n`,
      );
    }
    const rssMb = peakRssMb(service.child.pid);
    await stop(ceiling.child);
    const flat = await flatCost(
      db.database,
      dialect.name,
      service.base,
      sign,
      demo.appId,
      cards[0] as string,
      cards[1] as string,
      filled.trades,
    );
    await stop(service.child);
    return { database: dialect.name, trades: filled.trades, readyMs: service.readyMs, peakRssMb: rssMb, operations: rows, flat };
  } finally {
    for (const c of children) await stop(c);
    await db.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function markdown(report: { date: string; machine: string; results: Awaited<ReturnType<typeof run>>[] }): string {
  const lines = [
    `Measured ${report.date.slice(0, 10)} on ${report.machine}; ${CONNECTIONS} connections, ${DURATION_S} s per operation, client and server on the same machine.`,
    '',
    '| database | operation | req/s | p50 ms | p99 ms | ceiling req/s | ratio |',
    '|---|---|---:|---:|---:|---:|---:|',
  ];
  for (const r of report.results) {
    for (const o of r.operations) {
      lines.push(
        `| ${r.database} | ${o.operation} | ${o.service.rps} | ${o.service.p50} | ${o.service.p99} | ${o.ceiling.rps} | ${o.ratio} |`,
      );
    }
  }
  lines.push('');
  lines.push(
    report.results
      .map((r) => `${r.database}: ${r.trades} trades stored, ready ${r.readyMs} ms after start, peak RSS ${r.peakRssMb} MB`)
      .join('; '),
  );
  lines.push(
    '',
    'The list as the table grows (random pages of 30, all statuses; the hot card holds 20 % of all trades in its 30-day window):',
    '',
  );
  lines.push(
    '| database | stored trades | hot card: trades in window | p50 ms | p99 ms | req/s | ordinary card: p50 ms | p99 ms | req/s |',
  );
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of report.results) {
    for (const f of r.flat) {
      lines.push(
        `| ${r.database} | ${f.storedTrades} | ${f.hotCard.total} | ${f.hotCard.p50} | ${f.hotCard.p99} | ${f.hotCard.rps} | ${f.ordinaryCard.p50} | ${f.ordinaryCard.p99} | ${f.ordinaryCard.rps} |`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

// The built program is what runs in production: build it first (npm run build).
execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
const which = (process.env.BENCH_DB ?? 'sqlite,postgres').split(',');
const results = [];
if (which.includes('sqlite')) results.push(await run({ name: 'sqlite', url: 'file:' }));
if (which.includes('postgres')) {
  results.push(await run({ name: 'postgres', url: process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test' }));
}
const cpus = (await import('node:os')).cpus();
const report = {
  date: new Date().toISOString(),
  machine: `${cpus.length} × ${cpus[0]?.model.trim()}, Node ${process.version}`,
  quick,
  results,
};
const table = markdown(report);
process.stdout.write(table);
if (!quick) {
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/http.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(new URL('./results/http.md', import.meta.url), table);
}
const failed = [
  ...results.flatMap((r) => r.operations.map((o) => ({ operation: o.operation, service: o.service }))),
  ...results.flatMap((r) =>
    r.flat.flatMap((f) => [
      { operation: `list at ${f.storedTrades}`, service: f.hotCard },
      { operation: `list at ${f.storedTrades} (ordinary)`, service: f.ordinaryCard },
    ]),
  ),
].filter((o) => o.service.errors > 0 || o.service.non2xx > 0);
if (failed.length) {
  process.stderr.write(
    `requests failed: ${failed.map((o) => `${o.operation} (${o.service.errors} errors, ${o.service.non2xx} non-2xx)`).join(', ')}\n`,
  );
  process.exitCode = 1;
}
