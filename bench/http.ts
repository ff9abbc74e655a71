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
import { type ChildProcess, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hmacSign, signingString } from '../src/http/signing.js';
import { holderBody, kycBody } from '../test/helpers/app.js';
import { childDatabaseUrl, ROOT } from '../test/helpers/cli.js';
import { isolatedDatabase, type TestDialect } from '../test/helpers/db.js';
import { CONNECTIONS, DURATION_S, drive, FILL_TRADES, type Operation, quick, type Signer } from './http-drive.js';
import { flatCost } from './http-list-growth.js';
import { operations } from './http-operations.js';
import { peakRssMb, startCeiling, startService, stop } from './http-processes.js';

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
