/**
 * The card network link (decisions §12, docs/network.md) under load: authorizations (0100,
 * purchase) per second and their p50/p99 latency at 1, 10, 50 and 100 messages in flight, on
 * SQLite and on PostgreSQL, next to a bare TCP server that answers the same frames with the same
 * codec (bench/network-ceiling.ts: the ceiling of this machine).
 *
 * For each database the built service runs as its own process (`bin/cardprogram.js serve`, as in
 * production) with the link on loopback (plain TCP, as the sandbox allows), filled by `cardprogram
 * demo` (its cards, each topped up); the client is src/card-network/link/client.ts, the simulator's,
 * on up to 10 connections (a processor's few links), each keeping its share of the messages in
 * flight, every message a new STAN. Every answer must be `00`.
 *
 *   npm run bench:network              both databases, 10 s per level
 *   npm run bench:network -- --quick   SQLite, 1 and 10 in flight, a second each (CI: checks that it works)
 *   BENCH_DB=sqlite npm run bench:network
 *   BENCH_PROFILE=/tmp/prof npm run bench:network   the service's CPU profile (.cpuprofile) written there
 *   npm run bench:network -- --root DIR   this build and DIR's (a baseline checkout, built), level by
 *                                         level in turn in one run, with the service's CPU time per message
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { LinkClient, transmissionTime } from '../src/card-network/link/client.js';
import { hmacSign, signingString } from '../src/http/signing.js';
import { type IsoMessage, message } from '../src/iso8583/codec.js';
import { childDatabaseUrl, ROOT } from '../test/helpers/cli.js';
import { isolatedDatabase, type TestDialect } from '../test/helpers/db.js';
import { startService, stop } from './http-processes.js';

const quick = process.argv.includes('--quick');
/** `--root DIR`: a baseline checkout (built) measured beside this one, level by level in turn. */
const rootAt = process.argv.indexOf('--root');
const BASE = rootAt > 0 && process.argv[rootAt + 1] ? resolve(process.argv[rootAt + 1] as string) : null;
const SECONDS = quick ? 1 : Number(process.env.BENCH_SECONDS ?? 10);
const LEVELS = quick ? [1, 10] : [1, 10, 50, 100];
const MAX_CONNECTIONS = 10;
const HOLDERS = quick ? 2 : 40;

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
  /** The service's CPU time (user + system) per approved message, ms; when measured (--root). */
  cpuMs?: number;
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

/** `inFlight` messages outstanding at all times, over min(inFlight, 10) connections, for `seconds`. */
async function drive(port: number, cards: Card[], inFlight: number, seconds: number): Promise<Measured> {
  const connections = Math.min(inFlight, MAX_CONNECTIONS);
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

/** The service on a fresh database of this engine, with the link on, and its cards' numbers (from the sandbox's card details). */
async function prepare(dialect: TestDialect, root = ROOT) {
  const db = await isolatedDatabase(dialect);
  const dataDir = join(tmpdir(), `cardprogram-bench-net-${randomBytes(4).toString('hex')}`);
  mkdirSync(dataDir, { recursive: true });
  const linkPort = 30000 + Math.floor(Math.random() * 10000);
  const env = {
    DATABASE_URL: childDatabaseUrl(db),
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
    const first = await startService(env, root);
    await stop(first.child);
    const filled = JSON.parse(
      execFileSync(
        process.execPath,
        [join(root, 'bin', 'cardprogram.js'), 'demo', '--holders', String(HOLDERS), '--days', '1', '--seed', '1', '--json'],
        {
          cwd: root,
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
    const service = await startService(env, root, profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []);
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
    return { service, linkPort, cards, cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

/** A process's CPU time so far (user + system, ms), from /proc (Linux). */
function cpuTime(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** One level against a service, with the service's CPU time per approved message. */
async function measure(p: Awaited<ReturnType<typeof prepare>>, inFlight: number): Promise<Measured> {
  const before = cpuTime(p.service.child.pid);
  const m = await drive(p.linkPort, p.cards, inFlight, SECONDS);
  const used = cpuTime(p.service.child.pid) - before;
  return { ...m, cpuMs: m.messages ? Math.round((used / m.messages) * 1000) / 1000 : 0 };
}

/** This build and the baseline's (--root), each on a database of its own, level by level in turn. */
async function compare(dialect: TestDialect, base: string) {
  const ours = await prepare(dialect);
  const theirs = await prepare(dialect, base);
  try {
    const rows = [];
    await drive(ours.linkPort, ours.cards, 10, quick ? 0.2 : 2);
    await drive(theirs.linkPort, theirs.cards, 10, quick ? 0.2 : 2);
    for (const inFlight of LEVELS) {
      // In turn, twice, so that the machine's noise falls on both alike.
      const a1 = await measure(theirs, inFlight);
      const b1 = await measure(ours, inFlight);
      const b2 = await measure(ours, inFlight);
      const a2 = await measure(theirs, inFlight);
      const sum = (x: Measured, y: Measured) => ({
        perSecond: Math.round((x.perSecond + y.perSecond) / 2),
        p50: Math.round(((x.p50 + y.p50) / 2) * 10) / 10,
        p99: Math.round(((x.p99 + y.p99) / 2) * 10) / 10,
        cpuMs: Math.round((((x.cpuMs ?? 0) + (y.cpuMs ?? 0)) / 2) * 1000) / 1000,
        failed: x.failed + y.failed,
      });
      const row = { inFlight, baseline: sum(a1, a2), build: sum(b1, b2) };
      rows.push(row);
      process.stderr.write(
        `[${dialect.name}] ${inFlight} in flight: this build ${row.build.perSecond}/s, ${row.build.cpuMs} ms CPU/msg (p50 ${row.build.p50}, p99 ${row.build.p99}); baseline ${row.baseline.perSecond}/s, ${row.baseline.cpuMs} ms CPU/msg (p50 ${row.baseline.p50}, p99 ${row.baseline.p99})\n`,
      );
    }
    return { database: dialect.name, rows };
  } finally {
    await stop(ours.service.child);
    await stop(theirs.service.child);
    await ours.cleanup();
    await theirs.cleanup();
  }
}

async function run(dialect: TestDialect) {
  const p = await prepare(dialect);
  const ceiling = await startCeiling();
  try {
    const rows = [];
    // Warm-up: connections, prepared statements, the JIT.
    await drive(p.linkPort, p.cards, 10, quick ? 0.2 : 2);
    for (const inFlight of LEVELS) {
      const service = await drive(p.linkPort, p.cards, inFlight, SECONDS);
      const top = await drive(ceiling.port, p.cards, inFlight, SECONDS);
      rows.push({ inFlight, service, ceiling: top, ratio: Math.round((service.perSecond / top.perSecond) * 100) / 100 });
      process.stderr.write(
        `[${dialect.name}] ${inFlight} in flight: ${service.perSecond}/s (p50 ${service.p50} ms, p99 ${service.p99} ms, ${service.failed} not 00 ${JSON.stringify(service.codes)}) vs ceiling ${top.perSecond}/s (p50 ${top.p50}, p99 ${top.p99})\n`,
      );
    }
    return { database: dialect.name, cards: p.cards.length, rows };
  } finally {
    await stop(ceiling.child);
    await stop(p.service.child);
    await p.cleanup();
  }
}

function markdown(report: { date: string; machine: string; load: string; results: Awaited<ReturnType<typeof run>>[] }): string {
  const lines = [
    `Measured ${report.date.slice(0, 10)} on ${report.machine}; load average before the run ${report.load}; ${SECONDS} s per level; client (src/card-network/link/client.ts, up to ${MAX_CONNECTIONS} connections) and service on the same machine; 0100 purchases of 0.01 EUR spread over the demo's cards; the ceiling: a bare node:net server decoding and answering the same frames with the same codec.`,
    '',
    '| database | in flight | authorizations/s | p50 ms | p99 ms | not 00 | ceiling/s | ceiling p50 ms | ceiling p99 ms | ratio |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of report.results) {
    for (const row of r.rows) {
      lines.push(
        `| ${r.database} | ${row.inFlight} | ${row.service.perSecond} | ${row.service.p50} | ${row.service.p99} | ${row.service.failed} | ${row.ceiling.perSecond} | ${row.ceiling.p50} | ${row.ceiling.p99} | ${row.ratio} |`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

// The built program is what runs in production: build it first.
execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
const load = loadavg()
  .map((l) => l.toFixed(2))
  .join(' ');
const which = (process.env.BENCH_DB ?? (quick ? 'sqlite' : 'sqlite,postgres')).split(',');
if (BASE) {
  const compared = [];
  if (which.includes('sqlite')) compared.push(await compare({ name: 'sqlite', url: 'file:' }, BASE));
  if (which.includes('postgres')) {
    const url = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    if (await postgresAnswers(url)) compared.push(await compare({ name: 'postgres', url }, BASE));
  }
  const lines = [
    `Load average before the run ${load}; ${SECONDS} s per level, each build twice in turn (baseline, this, this, baseline); the service's CPU time (user + system) per approved 0100.`,
    '',
    '| database | in flight | baseline /s | this build /s | baseline CPU ms/msg | this build CPU ms/msg | baseline p50 / p99 ms | this build p50 / p99 ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...compared.flatMap((r) =>
      r.rows.map(
        (x) =>
          `| ${r.database} | ${x.inFlight} | ${x.baseline.perSecond} | ${x.build.perSecond} | ${x.baseline.cpuMs} | ${x.build.cpuMs} | ${x.baseline.p50} / ${x.baseline.p99} | ${x.build.p50} / ${x.build.p99} |`,
      ),
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  process.exit(compared.flatMap((r) => r.rows).some((x) => x.build.failed > 0 || x.baseline.failed > 0) ? 1 : 0);
}
const results = [];
if (which.includes('sqlite')) results.push(await run({ name: 'sqlite', url: 'file:' }));
if (which.includes('postgres')) {
  const url = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  if (await postgresAnswers(url)) results.push(await run({ name: 'postgres', url }));
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
const failed = results.flatMap((r) => r.rows).filter((row) => row.service.failed > 0 || row.service.messages === 0);
if (failed.length) {
  process.stderr.write(`authorizations not approved: ${failed.map((r) => `${r.inFlight} in flight: ${r.service.failed}`).join(', ')}\n`);
  process.exitCode = 1;
}
