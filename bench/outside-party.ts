/**
 * What the benches of the listeners for outside parties share (bench/three-ds.ts: the ACS's
 * AReqs; bench/tokens.ts: the TSP's provisioning requests): the built service started with its
 * cards made through the API, an open-loop JSON driver with its latency percentiles, the databases
 * to run on, and the report (stdout, and bench/results/ on a full default run). The card network
 * link's bench (bench/network.ts) asks PostgreSQL here too.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { hmacSign, signingString } from '../src/http/signing.js';
import { holderBody } from '../test/helpers/app.js';
import { childDatabaseUrl, ROOT } from '../test/helpers/cli.js';
import { isolatedDatabase, type TestDialect } from '../test/helpers/db.js';
import { freePort, startService, stop } from './http-processes.js';

/** The outside party's listener and its variables, named in full (test/config-vars.test.ts finds each in the one list). */
const LISTENER_VARS = {
  acs: { port: 'CARDPROGRAM_3DS_PORT', host: 'CARDPROGRAM_3DS_HOST' },
  tsp: { port: 'CARDPROGRAM_TSP_PORT', host: 'CARDPROGRAM_TSP_HOST' },
} as const;
type ListenerName = keyof typeof LISTENER_VARS;

export interface Card {
  pan: string;
  expiry: string;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
const round = (ms: number) => Math.round(ms * 10) / 10;

/** Whether PostgreSQL answers at `url` (else a bench measures on SQLite only). */
export async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

export interface Drive {
  url: string;
  rate: number;
  seconds: number;
  /** The JSON body of the i-th request (0 to rate × seconds − 1). */
  body(i: number): string;
  /** An answer's outcome (counted by key); `ok`: its latency counts, else it failed. */
  outcome(status: number | undefined, answer: Record<string, string>): { key: string; ok: boolean };
}

export interface Driven {
  sent: number;
  answered: number;
  perSecond: number;
  p50: number;
  p99: number;
  max: number;
  failed: number;
  outcomes: Record<string, number>;
}

/** `rate` requests a second for `seconds`, each at its time (an open loop); latency from that time to the answer. */
export async function driveOpenLoop(d: Drive): Promise<Driven> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const total = Math.round(d.rate * d.seconds);
  const latencies: number[] = [];
  const outcomes: Record<string, number> = {};
  let failed = 0;
  const one = (i: number, at: number) =>
    new Promise<void>((resolve) => {
      const body = d.body(i);
      const req = http.request(
        d.url,
        { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            try {
              const answer = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, string>;
              const { key, ok } = d.outcome(res.statusCode, answer);
              outcomes[key] = (outcomes[key] ?? 0) + 1;
              if (ok) latencies.push(performance.now() - at);
              else failed++;
            } catch {
              failed++;
            }
            resolve();
          });
        },
      );
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end(body);
    });
  const started = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const at = started + (i * 1000) / d.rate;
    const wait = at - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    pending.push(one(i, at));
  }
  await Promise.all(pending);
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    sent: total,
    answered: latencies.length,
    perSecond: Math.round(latencies.length / elapsed),
    p50: round(percentile(latencies, 50)),
    p99: round(percentile(latencies, 99)),
    max: round(latencies.at(-1) ?? 0),
    failed,
    outcomes,
  };
}

/**
 * A database of its own and the built service on it with the listener on loopback (plain HTTP, as
 * the sandbox allows): `cards` EUR cards made through the API (their numbers from the sandbox's card
 * details), then the service restarted with the demo merchant given a notify URL (a challenge needs
 * one; every callback is written, none sent: the worker is off), as in production.
 */
async function prepareWithCards(dialect: TestDialect, o: { name: string; listener: ListenerName; path: string; cards: number }) {
  const db = await isolatedDatabase(dialect);
  const dataDir = join(tmpdir(), `cardprogram-bench-${o.name}-${randomBytes(4).toString('hex')}`);
  mkdirSync(dataDir, { recursive: true });
  const port = await freePort();
  const env = {
    DATABASE_URL: childDatabaseUrl(db),
    CARDPROGRAM_DATA_DIR: dataDir,
    CARDPROGRAM_WORKER: 'off',
    CARDPROGRAM_RATE_LIMIT: '1000000',
    CARDPROGRAM_KYC_AUTO_DECISION_MS: '0',
    [LISTENER_VARS[o.listener].port]: String(port),
    [LISTENER_VARS[o.listener].host]: '127.0.0.1',
  };
  const cleanup = async () => {
    await db.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  };
  const services: ChildProcess[] = [];
  try {
    const first = await startService(env);
    services.push(first.child);
    const demo = JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8'));
    const call = async (path: string, body: Record<string, unknown>) => {
      const signed: Record<string, unknown> = { ...body, appId: demo.appId, randomStr: randomBytes(16).toString('hex') };
      signed.sign = hmacSign(demo.secret, signingString(signed));
      const res = await fetch(`${first.base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(signed),
      });
      const reply = (await res.json()) as { code?: string; holderId?: string; model?: Record<string, string> };
      if (res.status !== 200) throw new Error(`${path}: ${JSON.stringify(reply)}`);
      return reply;
    };
    const cards: Card[] = [];
    while (cards.length < o.cards) {
      const holder = await call('/api/network/holderCreate.html', holderBody());
      await call('/sandbox/holder/review', { holderId: holder.holderId, auditStatus: 2 });
      for (let k = 0; k < 5 && cards.length < o.cards; k++) {
        const card = await call('/api/network/cardApply.html', { holderId: holder.holderId, currency: 'EUR' });
        const details = (await call('/sandbox/network/cardDetails', { cardId: card.model?.cardId })).model as {
          cardNo: string;
          expiry: string;
        };
        const [mm, yy] = details.expiry.split('/');
        cards.push({ pan: details.cardNo, expiry: `${yy}${mm}` });
      }
    }
    await stop(first.child);
    services.length = 0;
    execFileSync(
      process.execPath,
      [join(ROOT, 'bin', 'cardprogram.js'), 'merchant', 'update', demo.appId, '--notify-url', 'http://127.0.0.1:9/hooks'],
      {
        cwd: ROOT,
        env: { ...process.env, ...env },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    // BENCH_PROFILE=DIR: the measured service writes a CPU profile there when it stops (what takes the time).
    const profile = process.env.BENCH_PROFILE;
    const service = await startService(env, ROOT, profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []);
    return { service, url: `http://127.0.0.1:${port}${o.path}`, cards, cleanup };
  } catch (err) {
    for (const child of services) await stop(child);
    await cleanup();
    throw err;
  }
}

/** The databases BENCH_DB names (default: both; SQLite only with --quick), each run in turn; PostgreSQL skipped when it does not answer. */
async function onEachDatabase<R>(quick: boolean, run: (dialect: TestDialect) => Promise<R>): Promise<R[]> {
  const which = (process.env.BENCH_DB ?? (quick ? 'sqlite' : 'sqlite,postgres')).split(',');
  const results: R[] = [];
  if (which.includes('sqlite')) results.push(await run({ name: 'sqlite', url: 'file:' }));
  if (which.includes('postgres')) {
    const url = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    if (await postgresAnswers(url)) results.push(await run({ name: 'postgres', url }));
    else process.stderr.write(`PostgreSQL did not answer at ${url}: measured on SQLite only\n`);
  }
  return results;
}

/**
 * The report of a run: a line saying what was measured (after the date, machine and load), a table
 * of each database's results (`columns`: the names of the rate's and the answers' columns), written
 * to stdout and, on a full default run, to bench/results/<name>.json and .md; the exit code 1 with
 * `whenFailed` if any request failed.
 */
async function report(o: {
  name: string;
  load: string;
  quick: boolean;
  rate: number;
  seconds: number;
  what: string;
  columns: [string, string];
  results: ({ database: string } & Driven)[];
  whenFailed: string;
}): Promise<void> {
  const cpus = (await import('node:os')).cpus();
  const report = {
    date: new Date().toISOString(),
    machine: `${cpus.length} × ${cpus[0]?.model.trim()}, Node ${process.version}`,
    load: o.load,
    rate: o.rate,
    seconds: o.seconds,
    results: o.results,
  };
  const lines = [
    `Measured ${report.date.slice(0, 10)} on ${report.machine}; load average before the run ${o.load}; ${o.what}`,
    '',
    `| database | ${o.columns[0]} | ${o.columns[1]} | p50 ms | p99 ms | max ms | failed | outcomes |`,
    '|---|---:|---:|---:|---:|---:|---:|---|',
    ...o.results.map(
      (r) =>
        `| ${r.database} | ${r.perSecond} | ${r.answered} | ${r.p50} | ${r.p99} | ${r.max} | ${r.failed} | ${Object.entries(r.outcomes)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ')} |`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (!o.quick && !process.env.BENCH_RATE && !process.env.BENCH_SECONDS && !process.env.BENCH_DB && !process.env.BENCH_PROFILE) {
    mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
    writeFileSync(new URL(`./results/${o.name}.json`, import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
    writeFileSync(new URL(`./results/${o.name}.md`, import.meta.url), `${lines.join('\n')}\n`);
  }
  if (o.results.some((r) => r.failed > 0 || r.answered === 0)) {
    process.stderr.write(`${o.whenFailed}\n`);
    process.exitCode = 1;
  }
}

/**
 * A whole bench of a listener: the service built, then on each database its cards made and the
 * listener driven (`measure`: a warm-up, then the measured run), each run's line on stderr, and the report.
 */
export async function benchOutsideParty(o: {
  /** Its results' name in bench/results/ (and its temporary folder's). */
  name: string;
  quick: boolean;
  rate: number;
  seconds: number;
  listener: { listener: ListenerName; path: string; cards: number };
  measure(url: string, cards: Card[]): Promise<Driven>;
  /** What a good answer is called in the run's line and the table ("decisions", "ARes"). */
  answers: string;
  /** The report's line of what was measured, given the cards used. */
  what(cards: number): string;
  rateColumn: string;
  whenFailed: string;
}): Promise<void> {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  const results = await onEachDatabase(o.quick, async (dialect) => {
    const p = await prepareWithCards(dialect, { name: o.name, ...o.listener });
    try {
      const measured = await o.measure(p.url, p.cards);
      process.stderr.write(
        `[${dialect.name}] ${o.rate}/s for ${o.seconds} s: ${measured.answered} ${o.answers}, p50 ${measured.p50} ms, p99 ${measured.p99} ms, max ${measured.max} ms, ${measured.failed} failed ${JSON.stringify(measured.outcomes)}\n`,
      );
      return { database: dialect.name, cards: p.cards.length, ...measured };
    } finally {
      await stop(p.service.child);
      await p.cleanup();
    }
  });
  await report({
    name: o.name,
    load,
    quick: o.quick,
    rate: o.rate,
    seconds: o.seconds,
    what: o.what(results[0]?.cards ?? o.listener.cards),
    columns: [o.rateColumn, o.answers],
    results,
    whenFailed: o.whenFailed,
  });
}
