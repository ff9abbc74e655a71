/**
 * The card network link (decisions §12, docs/network.md) under load, in the form of issue 42's
 * table: authorizations (0100, purchase) at 100 messages in flight (10 connections × 10) and at 10
 * (2 connections × 5), on SQLite and on PostgreSQL, two builds side by side (today, the landed main
 * named in bench/baseline-ref, and after, this checkout: bench/baseline.ts), each level against
 * each build twice in the order A B B A, so that a drift of the machine weighs on both. Reported per
 * build and level: approvals/s, p50/p99, the CPU time per authorization of the service's process
 * and (PostgreSQL) of its backends — read from /proc, robust to other work on the machine, unlike
 * the wall-clock figures — and the service's RSS at the end of each run (growing from run to run
 * is a leak). Beside them, once per level, a bare TCP server answering the same frames with the
 * same codec (bench/network-ceiling.ts: the ceiling of this machine).
 *
 * For each database and build the built service runs as its own process (`bin/cardprogram.js
 * serve`, as in production) with the link on loopback (plain TCP, as the sandbox allows), filled by
 * `cardprogram demo` (its cards, each topped up); the client is src/card-network/link/client.ts, the
 * simulator's, every message a new STAN. Every answer must be `00`.
 *
 *   npm run bench:network                      both databases, both builds, 10 s per run
 *   npm run bench:network -- --quick           SQLite, this checkout, 10 in flight, a second (CI: checks that it works)
 *   npm run bench:network -- --baseline REF    another baseline (--baseline none: this checkout alone)
 *   BENCH_DB=sqlite npm run bench:network      BENCH_SECONDS=N: seconds per run
 *   BENCH_PROFILE=/tmp/prof npm run bench:network   the service's CPU profile (.cpuprofile) written there
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { LinkClient, transmissionTime } from '../src/card-network/link/client.js';
import { hmacSign, signingString } from '../src/http/signing.js';
import { type IsoMessage, message } from '../src/iso8583/codec.js';
import { childDatabaseUrl, ROOT } from '../test/helpers/cli.js';
import { isolatedDatabase, type TestDialect } from '../test/helpers/db.js';
import { type Build, buildsFromArgs } from './baseline.js';
import { freePort, startService, stop } from './http-processes.js';
import { backendsOf, cpuOver, rssMb } from './network-measure.js';
import { postgresAnswers } from './outside-party.js';

const quick = process.argv.includes('--quick');
const SECONDS = quick ? 1 : Number(process.env.BENCH_SECONDS ?? 10);
/** Issue 42's table: messages in flight over so many connections (each keeping its share outstanding). */
const LEVELS: Level[] = quick
  ? [{ inFlight: 10, connections: 2 }]
  : [
      { inFlight: 100, connections: 10 },
      { inFlight: 10, connections: 2 },
    ];
const MAX_CONNECTIONS = 10;
const HOLDERS = quick ? 2 : 40;

interface Level {
  inFlight: number;
  connections: number;
}

interface Card {
  pan: string;
  expiry: string;
  cvv: string;
}

interface Measured {
  inFlight: number;
  connections: number;
  messages: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** Answers other than 00, and messages without an answer. */
  failed: number;
  codes: Record<string, number>;
}

let stan = 0;
/** An 0100 purchase of 0.01 EUR for one of the cards: a new STAN (and field 7) every time. */
function purchase(card: Card, acquirer: string): IsoMessage {
  stan = (stan + 1) % 1_000_000;
  return message('0100', {
    2: card.pan,
    3: '000000',
    4: '000000000001',
    7: transmissionTime(),
    11: String(stan).padStart(6, '0'),
    12: '120000',
    13: '1125',
    14: card.expiry,
    18: '5411',
    22: '810',
    32: acquirer,
    37: 'BENCH0000001',
    41: 'BENCH001',
    42: 'BENCHACCEPTOR01',
    43: `${'Bench Store'.padEnd(25)}${'Berlin'.padEnd(13)}DE`,
    48: `92${String(card.cvv.length).padStart(2, '0')}${card.cvv}`,
    49: '978',
  });
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;

/** `inFlight` messages outstanding at all times, spread over `connections` connections, for `seconds`. */
async function drive(port: number, cards: Card[], { inFlight, connections }: Level, seconds: number): Promise<Measured> {
  const clients = await Promise.all(Array.from({ length: connections }, () => LinkClient.connect({ host: '127.0.0.1', port })));
  const latencies: number[] = [];
  const codes: Record<string, number> = {};
  let failed = 0;
  let next = 0;
  const until = performance.now() + seconds * 1000;
  const worker = async (client: LinkClient, i: number) => {
    // Each connection its own acquirer id: identities never collide across connections.
    const acquirer = String(10000000 + i);
    while (performance.now() < until) {
      const card = cards[next++ % cards.length] as Card;
      const sent = performance.now();
      try {
        const answer = await client.ask(purchase(card, acquirer), 30_000);
        const code = answer.fields.get(39) ?? '--';
        codes[code] = (codes[code] ?? 0) + 1;
        if (code === '00') latencies.push(performance.now() - sent);
        else failed++;
      } catch {
        failed++;
      }
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: inFlight }, (_, i) => worker(clients[i % connections] as LinkClient, i % connections)));
  const elapsed = (performance.now() - started) / 1000;
  for (const c of clients) c.close();
  latencies.sort((a, b) => a - b);
  return {
    inFlight,
    connections,
    messages: latencies.length,
    perSecond: Math.round(latencies.length / elapsed),
    p50: Math.round(percentile(latencies, 50) * 10) / 10,
    p99: Math.round(percentile(latencies, 99) * 10) / 10,
    failed,
    codes,
  };
}

async function startCeiling(): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'network-ceiling.ts')], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.once('data', (d) => resolve(JSON.parse(String(d)).port));
    child.once('exit', () => reject(new Error('ceiling server exited')));
  });
  return { child, port };
}

/**
 * A build's service on a fresh database of this engine, with the link on, and its cards' numbers
 * (from the sandbox's card details); on PostgreSQL its connections named (application_name), so
 * that their backends' CPU can be read.
 */
async function prepare(dialect: TestDialect, build: Build) {
  const db = await isolatedDatabase(dialect);
  const applicationName = `bench-net-${randomBytes(4).toString('hex')}`;
  const databaseUrl = db.pgSchema ? `${childDatabaseUrl(db)}&application_name=${applicationName}` : childDatabaseUrl(db);
  const dataDir = join(tmpdir(), `cardprogram-bench-net-${randomBytes(4).toString('hex')}`);
  mkdirSync(dataDir, { recursive: true });
  const linkPort = await freePort();
  const env = {
    DATABASE_URL: databaseUrl,
    CARDPROGRAM_DATA_DIR: dataDir,
    CARDPROGRAM_WORKER: 'off',
    CARDPROGRAM_RATE_LIMIT: '1000000',
    CARDPROGRAM_KYC_AUTO_DECISION_MS: '0',
    CARDPROGRAM_NETWORK_PORT: String(linkPort),
    CARDPROGRAM_NETWORK_HOST: '127.0.0.1',
    // Its MAX_CONNECTIONS connections come from one address, above the link's default per-address cap
    // (8); twice that, as the next level's connections may arrive before the server has seen the last close.
    CARDPROGRAM_NETWORK_MAX_PER_ADDRESS: String(2 * MAX_CONNECTIONS),
  };
  const cleanup = async () => {
    await db.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const first = await startService(env, build.root);
    await stop(first.child);
    process.stderr.write(`[${dialect.name}, ${build.label}] filling (cardprogram demo --holders ${HOLDERS})\n`);
    const filled = JSON.parse(
      execFileSync(
        process.execPath,
        [join(build.root, 'bin', 'cardprogram.js'), 'demo', '--holders', String(HOLDERS), '--days', '1', '--seed', '1', '--json'],
        {
          cwd: build.root,
          env: { ...process.env, ...env },
          stdio: ['ignore', 'pipe', 'inherit'],
          maxBuffer: 1 << 26,
        },
      ).toString(),
    );
    const cardIds: string[] = filled.holders.flatMap((h: { cards: Array<{ cardId: string; currency?: string }> }) =>
      h.cards.filter((c) => (c.currency ?? 'EUR') === 'EUR').map((c) => c.cardId),
    );
    const demo = JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8'));
    // BENCH_PROFILE=DIR: the measured service writes a CPU profile there when it stops (what takes the time).
    const profile = process.env.BENCH_PROFILE;
    const service = await startService(env, build.root, profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []);
    const call = async (path: string, body: Record<string, unknown>) => {
      const signed: Record<string, unknown> = { ...body, appId: demo.appId, randomStr: randomBytes(16).toString('hex') };
      signed.sign = hmacSign(demo.secret, signingString(signed));
      const res = await fetch(`${service.base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(signed),
      });
      return (await res.json()) as { code: string; model?: Record<string, unknown> };
    };
    const cards: Card[] = [];
    for (const cardId of cardIds) {
      const details = await call('/sandbox/network/cardDetails', { cardId });
      const model = details.model as { cardNo: string; expiry: string; cvv: string; status?: string } | undefined;
      if (!model) continue;
      const query = await call('/api/network/cardQuery.html', { cardId });
      if ((query.model as { status?: string } | undefined)?.status !== 'active') continue;
      await call('/api/network/cardTopUp.html', { cardId, amount: 500 });
      const [mm, yy] = model.expiry.split('/');
      cards.push({ pan: model.cardNo, expiry: `${yy}${mm}`, cvv: model.cvv });
    }
    if (cards.length === 0) throw new Error('the demo made no active EUR card');
    const backends = db.pgSchema ? backendsOf(dialect.url, applicationName) : async () => [];
    return { build, service, linkPort, cards, backends, cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** One run of one build at one level: the link driven, and the CPU its processes used meanwhile. */
async function measure(p: Prepared, level: Level) {
  const pid = p.service.child.pid;
  const service = await cpuOver(async () => (pid ? [pid] : []));
  const database = await cpuOver(p.backends);
  const m = await drive(p.linkPort, p.cards, level, SECONDS);
  const serviceMs = await service();
  const databaseMs = await database();
  return { ...m, serviceCpuMs: serviceMs, databaseCpuMs: databaseMs, rssMb: rssMb(pid) };
}

type Prepared = Awaited<ReturnType<typeof prepare>>;
type Run = Awaited<ReturnType<typeof measure>>;

/** A build's runs at one level summed: approvals/s and latency the mean of the runs', CPU per approval over all of them. */
function summary(build: string, level: Level, runs: Run[], database: boolean) {
  const messages = runs.reduce((s, r) => s + r.messages, 0);
  const avg = (f: (r: Run) => number) => Math.round((runs.reduce((s, r) => s + f(r), 0) / runs.length) * 10) / 10;
  const perAuth = (f: (r: Run) => number) => Math.round((runs.reduce((s, r) => s + f(r), 0) / Math.max(1, messages)) * 1000) / 1000;
  return {
    build,
    ...level,
    runs: runs.length,
    messages,
    perSecond: Math.round(avg((r) => r.perSecond)),
    p50: avg((r) => r.p50),
    p99: avg((r) => r.p99),
    failed: runs.reduce((s, r) => s + r.failed, 0),
    serviceCpuMsPerAuth: perAuth((r) => r.serviceCpuMs),
    databaseCpuMsPerAuth: database ? perAuth((r) => r.databaseCpuMs) : null,
    // Text, not an array: the JSON as written is as biome formats it (npm run lint checks bench/results).
    rssMb: runs.map((r) => r.rssMb).join(', '),
  };
}

async function run(dialect: TestDialect, builds: Build[]) {
  const prepared: Prepared[] = [];
  try {
    for (const build of builds) prepared.push(await prepare(dialect, build));
    // Warm-up: connections, prepared statements, the JIT.
    for (const p of prepared) await drive(p.linkPort, p.cards, { inFlight: 10, connections: 2 }, quick ? 0.2 : 2);
    const rows = [];
    const ceilings = [];
    for (const level of LEVELS) {
      // A B B A: each build twice, the order mirrored.
      const order = [...prepared, ...[...prepared].reverse()];
      const runs = new Map<Prepared, Run[]>(prepared.map((p) => [p, []]));
      for (const p of order) {
        const r = await measure(p, level);
        runs.get(p)?.push(r);
        process.stderr.write(
          `[${dialect.name}, ${p.build.label}] ${level.inFlight} in flight (${level.connections} × ${level.inFlight / level.connections}): ${r.perSecond}/s, p50 ${r.p50} ms, p99 ${r.p99} ms, service CPU ${(r.serviceCpuMs / Math.max(1, r.messages)).toFixed(3)} ms/auth${dialect.name === 'postgres' ? `, PostgreSQL CPU ${(r.databaseCpuMs / Math.max(1, r.messages)).toFixed(3)} ms/auth` : ''}, RSS ${r.rssMb} MB, ${r.failed} not 00 ${JSON.stringify(r.codes)}\n`,
        );
      }
      for (const p of prepared) rows.push(summary(p.build.label, level, runs.get(p) ?? [], dialect.name === 'postgres'));
      ceilings.push({ ...level, ...(await ceilingAt(prepared[0] as Prepared, level)) });
    }
    return { database: dialect.name, cards: prepared[0]?.cards.length ?? 0, rows, ceilings };
  } finally {
    for (const p of prepared) {
      await stop(p.service.child);
      await p.cleanup();
    }
  }
}

/** The ceiling at a level: the bare TCP server driven as the service was. */
async function ceilingAt(p: Prepared, level: Level) {
  const ceiling = await startCeiling();
  try {
    const top = await drive(ceiling.port, p.cards, level, SECONDS);
    return { perSecond: top.perSecond, p50: top.p50, p99: top.p99 };
  } finally {
    await stop(ceiling.child);
  }
}

function markdown(report: { date: string; machine: string; load: string; results: Awaited<ReturnType<typeof run>>[] }): string {
  const lines = [
    `Measured ${report.date.slice(0, 10)} on ${report.machine}; load average before the run ${report.load}; ${SECONDS} s per run, each build twice per level (A B B A); client (src/card-network/link/client.ts) and service on the same machine; 0100 purchases of 0.01 EUR spread over the demo's cards. CPU per authorization from /proc (user + system time of the service's process; of PostgreSQL's backends serving it), over the approvals of the runs. RSS: the service's at the end of each run. The ceiling: a bare node:net server decoding and answering the same frames with the same codec.`,
    '',
    '| database | in flight | build | approvals/s | p50 ms | p99 ms | service CPU ms/auth | PostgreSQL CPU ms/auth | RSS MB after each run | not 00 |',
    '|---|---|---|---:|---:|---:|---:|---:|---|---:|',
  ];
  for (const r of report.results) {
    for (const row of r.rows) {
      lines.push(
        `| ${r.database} | ${row.inFlight} (${row.connections} × ${row.inFlight / row.connections}) | ${row.build} | ${row.perSecond} | ${row.p50} | ${row.p99} | ${row.serviceCpuMsPerAuth} | ${row.databaseCpuMsPerAuth ?? '—'} | ${row.rssMb} | ${row.failed} |`,
      );
    }
  }
  lines.push('', '| database | in flight | ceiling/s | ceiling p50 ms | ceiling p99 ms |', '|---|---|---:|---:|---:|');
  for (const r of report.results) {
    for (const c of r.ceilings)
      lines.push(
        `| ${r.database} | ${c.inFlight} (${c.connections} × ${c.inFlight / c.connections}) | ${c.perSecond} | ${c.p50} | ${c.p99} |`,
      );
  }
  return `${lines.join('\n')}\n`;
}

// The built program is what runs in production: build it first.
execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
const load = loadavg()
  .map((l) => l.toFixed(2))
  .join(' ');
const builds = buildsFromArgs(quick);
const which = (process.env.BENCH_DB ?? (quick ? 'sqlite' : 'sqlite,postgres')).split(',');
const results = [];
if (which.includes('sqlite')) results.push(await run({ name: 'sqlite', url: 'file:' }, builds));
if (which.includes('postgres')) {
  const url = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  if (await postgresAnswers(url)) results.push(await run({ name: 'postgres', url }, builds));
  else process.stderr.write(`PostgreSQL did not answer at ${url}: measured on SQLite only\n`);
}
const cpus = (await import('node:os')).cpus();
const report = {
  date: new Date().toISOString(),
  machine: `${cpus.length} × ${cpus[0]?.model.trim()}, Node ${process.version}`,
  load,
  quick,
  results,
};
const table = markdown(report);
process.stdout.write(table);
// A profiled run (BENCH_PROFILE) or a partial one (BENCH_SECONDS, BENCH_DB) does not replace the recorded results.
if (!quick && !process.env.BENCH_PROFILE && !process.env.BENCH_SECONDS && !process.env.BENCH_DB) {
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/network.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(new URL('./results/network.md', import.meta.url), table);
}
const failed = results.flatMap((r) => r.rows).filter((row) => row.failed > 0 || row.messages === 0);
if (failed.length) {
  process.stderr.write(
    `authorizations not approved: ${failed.map((r) => `${r.build}, ${r.inFlight} in flight: ${r.failed}`).join(', ')}\n`,
  );
  process.exitCode = 1;
}
