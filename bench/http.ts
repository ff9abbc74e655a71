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
 * A full run measures the baseline too ("today": the landed main named in bench/baseline-ref, built
 * in a worktree of its own), each operation against both builds in turn, in the same run.
 *
 *   npm run bench:http                 both databases, both builds, 10 s per operation, 10,000 trades
 *   npm run bench:http -- --baseline REF   another baseline (a commit, a tag, a branch)
 *   npm run bench:http -- --quick      this checkout alone, tiny sizes, a few seconds (CI: checks that it works)
 *   npm run bench:http -- --baseline none   this checkout alone, full sizes
 *   npm run bench:http -- --baseline-dir DIR   the baseline built in DIR (a copy of another commit,
 *                                             its node_modules linked and `node scripts/build.mjs` run there)
 *   BENCH_DB=sqlite npm run bench:http
 *   BENCH_OPS=list npm run bench:http   only these operations (keys of bench/http-operations.ts)
 *
 * Every request is signed with a timestamp and the service requires one, as in production
 * (CARDPROGRAM_REQUIRE_TIMESTAMP=on; the SDK signs one too): a read's randomStr is then kept in the
 * read-nonce store (docs/idempotency.md), not in the idempotency keys. BENCH_TIMESTAMP=off measures
 * the sandbox's default instead (no timestamp: every read's nonce is a durable row).
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hmacSign, signingString } from '../src/http/signing.js';
import { childDatabaseUrl, ROOT } from '../test/helpers/cli.js';
import { isolatedDatabase, type TestDialect } from '../test/helpers/db.js';
import { type Build, buildsFromArgs } from './baseline.js';
import { CONNECTIONS, DURATION_S, drive, FILL_TRADES, type Measured, quick, type Signer } from './http-drive.js';
import { flatCost } from './http-list-growth.js';
import { operations } from './http-operations.js';
import { peakRssMb, startCeiling, startService, stop } from './http-processes.js';

/** Requests signed with a timestamp, which the service requires (production's mode); BENCH_TIMESTAMP=off: neither. */
const TIMESTAMPED = process.env.BENCH_TIMESTAMP !== 'off';
/** The operations to drive (BENCH_OPS=list,topup), by their keys in bench/http-operations.ts; all by default. */
const ONLY = process.env.BENCH_OPS ? new Set(process.env.BENCH_OPS.split(',')) : null;
const selected = (cards: string[]) => operations(cards).filter((o) => ONLY === null || ONLY.has(o.key));

/** The mean of a build's measured halves (errors summed). */
function mean(runs: Measured[]): Measured {
  const avg = (f: (m: Measured) => number) => Math.round(runs.reduce((s, m) => s + f(m), 0) / Math.max(1, runs.length));
  return {
    rps: avg((m) => m.rps),
    p50: avg((m) => m.p50),
    p99: avg((m) => m.p99),
    errors: runs.reduce((s, m) => s + m.errors, 0),
    non2xx: runs.reduce((s, m) => s + m.non2xx, 0),
  };
}

/** One build's service on a fresh database of its own, filled through its own verbs. */
async function prepare(dialect: TestDialect, build: Build) {
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
    CARDPROGRAM_REQUIRE_TIMESTAMP: TIMESTAMPED ? 'on' : 'off',
  };
  const cleanup = async () => {
    await db.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const first = await startService(env, build.root);
    await stop(first.child);
    process.stderr.write(`[${dialect.name}, ${build.label}] filling with ${FILL_TRADES} trades (cardprogram demo --trades)\n`);
    const filled = JSON.parse(
      execFileSync(
        process.execPath,
        [join(build.root, 'bin', 'cardprogram.js'), 'demo', '--trades', String(FILL_TRADES), '--days', '30', '--seed', '1', '--json'],
        { cwd: build.root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 28 },
      ).toString(),
    );
    const cards: string[] = filled.holders.flatMap((h: { cards: Array<{ cardId: string }> }) => h.cards.map((c) => c.cardId));
    const demo = JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8'));
    // Start again on the existing database: how long until it serves?
    const service = await startService(env, build.root);
    const sign: Signer = (body, withRandomStr) => {
      const signed: Record<string, unknown> = { ...body, appId: demo.appId };
      if (withRandomStr) signed.randomStr = randomBytes(16).toString('hex');
      if (TIMESTAMPED) signed.timestamp = Date.now();
      signed.sign = hmacSign(demo.secret, signingString(signed));
      return JSON.stringify(signed);
    };
    return { build, db, service, sign, cards, demo, trades: filled.trades as number, cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/**
 * Every build's service side by side on one database engine: each operation is driven against each
 * build in turn, then against the ceiling, so that all of them see the machine in the same state.
 */
async function run(dialect: TestDialect, builds: Build[]) {
  const prepared: Array<Awaited<ReturnType<typeof prepare>>> = [];
  const children: ChildProcess[] = [];
  try {
    for (const build of builds) {
      const p = await prepare(dialect, build);
      prepared.push(p);
      children.push(p.service.child);
    }
    const ceiling = await startCeiling();
    children.push(ceiling.child);
    const rows = [];
    const cardsOf = (p: (typeof prepared)[number]) => selected(p.cards);
    for (const [i, op] of selected((prepared[0] as (typeof prepared)[number]).cards).entries()) {
      let size = 0;
      const measured = [];
      for (const p of prepared) {
        const mine = cardsOf(p)[i] as typeof op;
        // The service's answer size for this operation sets the ceiling's answer size.
        const sample = await fetch(`${p.service.base}${mine.path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: p.sign(mine.body(0), mine.randomStr),
        });
        size = (await sample.text()).length;
        if (!sample.ok) throw new Error(`${op.name} (${p.build.label}): the sample request failed with ${sample.status}`);
        await drive(p.service.base, mine, p.sign, '', 1); // warm-up
      }
      // Each build twice, half the time each, in the order A B … B A: a drift of the machine over the
      // run (another process, the disk, a VM's neighbours) weighs on every build alike.
      const halves = new Map<string, Measured[]>();
      const order = prepared.length > 1 ? [...prepared, ...[...prepared].reverse()] : prepared;
      for (const p of order) {
        const mine = cardsOf(p)[i] as typeof op;
        const m = await drive(p.service.base, mine, p.sign, '', prepared.length > 1 ? DURATION_S / 2 : DURATION_S);
        halves.set(p.build.label, [...(halves.get(p.build.label) ?? []), m]);
      }
      for (const p of prepared) measured.push({ build: p.build.label, service: mean(halves.get(p.build.label) ?? []) });
      const top = await drive(ceiling.base, op, (prepared[0] as (typeof prepared)[number]).sign, `?size=${size}`);
      for (const m of measured) {
        rows.push({
          operation: op.name,
          build: m.build,
          service: m.service,
          ceiling: top,
          ratio: Math.round((m.service.rps / top.rps) * 100) / 100,
          replyBytes: size,
        });
        process.stderr.write(
          `[${dialect.name}, ${m.build}] ${op.name}: ${m.service.rps} req/s (p50 ${m.service.p50} ms, p99 ${m.service.p99} ms, ${m.service.non2xx} non-2xx, ${m.service.errors} errors) vs ceiling ${top.rps} req/s → ${rows.at(-1)?.ratio}\n`,
        );
      }
    }
    await stop(ceiling.child);
    const builds_ = prepared.map((p) => ({
      build: p.build.label,
      trades: p.trades,
      readyMs: p.service.readyMs,
      peakRssMb: peakRssMb(p.service.child.pid),
    }));
    // The list as the table grows: this checkout only (it fills the database to a million trades;
    // BENCH_GROWTH=off skips it, for a quick comparison of the builds).
    const after = prepared.at(-1) as (typeof prepared)[number];
    for (const p of prepared.slice(0, -1)) await stop(p.service.child);
    const flat =
      process.env.BENCH_GROWTH === 'off'
        ? []
        : await flatCost(
            after.db.database,
            dialect.name,
            after.service.base,
            after.sign,
            after.demo.appId,
            after.cards[0] as string,
            after.cards[1] as string,
            after.trades,
          );
    await stop(after.service.child);
    return { database: dialect.name, builds: builds_, operations: rows, flat };
  } finally {
    for (const c of children) await stop(c);
    for (const p of prepared) await p.cleanup();
  }
}

function markdown(report: { date: string; machine: string; results: Awaited<ReturnType<typeof run>>[] }): string {
  const lines = [
    `Measured ${report.date.slice(0, 10)} on ${report.machine}; ${CONNECTIONS} connections, ${DURATION_S} s per operation, client and server on the same machine; each operation against each build twice, half the time each, in the order A B B A (so that a drift of the machine weighs on both), then against the ceiling (a bare node:http server parsing and answering bodies of the same size).`,
    '',
    '| database | operation | build | req/s | p50 ms | p99 ms | ceiling req/s | ratio |',
    '|---|---|---|---:|---:|---:|---:|---:|',
  ];
  for (const r of report.results) {
    for (const o of r.operations) {
      lines.push(
        `| ${r.database} | ${o.operation} | ${o.build} | ${o.service.rps} | ${o.service.p50} | ${o.service.p99} | ${o.ceiling.rps} | ${o.ratio} |`,
      );
    }
  }
  lines.push('', '| database | build | trades stored | ready after start (existing database) | peak RSS |', '|---|---|---:|---:|---:|');
  for (const r of report.results) {
    for (const b of r.builds) lines.push(`| ${r.database} | ${b.build} | ${b.trades} | ${b.readyMs} ms | ${b.peakRssMb} MB |`);
  }
  lines.push(
    '',
    'The list as the table grows (this checkout; random pages of 30, all statuses; the hot card holds 20 % of all trades in its 30-day window):',
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
// Today's figures beside this checkout's (bench/baseline.ts): --quick measures this checkout alone.
const builds: Build[] = buildsFromArgs(quick);
const which = (process.env.BENCH_DB ?? 'sqlite,postgres').split(',');
const results = [];
if (which.includes('sqlite')) results.push(await run({ name: 'sqlite', url: 'file:' }, builds));
if (which.includes('postgres')) {
  results.push(await run({ name: 'postgres', url: process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test' }, builds));
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
