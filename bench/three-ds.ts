/**
 * The 3-D Secure ACS (decisions §14, docs/3ds.md) under load: AReq → ARes latency (p50, p99, max) at
 * a fixed arrival rate (default 200 AReqs a second, an open loop: each AReq is sent at its time
 * whatever the answers before it, and its latency counts from that time), on SQLite and PostgreSQL.
 *
 * The built service runs as its own process (`bin/cardprogram.js serve`, as in production) with its
 * ACS on loopback (plain HTTP, as the sandbox allows); its cards are made through the API (their
 * numbers from the sandbox's card details), the merchant has a notify URL (so challenges are
 * possible: each writes its callback). The AReqs are EMV 3DS 2.2.0 browser payments of 1.00 to
 * 60.00 EUR spread over the cards (within the 30 an hour each), so the answers mix frictionless
 * (the exemption) and challenges; every answer must be an ARes.
 *
 *   npm run bench:3ds                    both databases, 200 AReqs/s for 20 s
 *   npm run bench:3ds -- --quick         SQLite, 50 AReqs/s for 1 s (CI: checks that it works)
 *   BENCH_RATE=400 BENCH_SECONDS=10 BENCH_DB=postgres npm run bench:3ds
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { hmacSign, signingString } from '../src/http/signing.js';
import { buildAReq } from '../src/three-ds/areq-builder.js';
import { holderBody } from '../test/helpers/app.js';
import { childDatabaseUrl, ROOT } from '../test/helpers/cli.js';
import { isolatedDatabase, type TestDialect } from '../test/helpers/db.js';
import { startService, stop } from './http-processes.js';

const quick = process.argv.includes('--quick');
const RATE = quick ? 50 : Number(process.env.BENCH_RATE ?? 200);
const SECONDS = quick ? 1 : Number(process.env.BENCH_SECONDS ?? 20);
/** Enough cards that none passes 30 AReqs in the run (the hourly limit would answer N/04). */
const CARDS = Math.max(4, Math.ceil((RATE * (SECONDS + 4)) / 25));

interface Card {
  pan: string;
  expiry: string;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
const round = (ms: number) => Math.round(ms * 10) / 10;

/** `rate` AReqs a second for `seconds`, each at its time; latency from that time to the answer. */
async function drive(url: string, cards: Card[], rate: number, seconds: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const total = Math.round(rate * seconds);
  const latencies: number[] = [];
  const outcomes: Record<string, number> = {};
  let failed = 0;
  const one = (card: Card, at: number) =>
    new Promise<void>((resolve) => {
      const body = JSON.stringify(
        buildAReq({
          pan: card.pan,
          expiry: card.expiry,
          amount: 100 + Math.floor(Math.random() * 5900),
          currency: '978',
          exponent: 2,
          notificationURL: 'https://3dss.bench.invalid/n',
        }),
      );
      const req = http.request(
        url,
        { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            try {
              const answer = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, string>;
              const key =
                answer.messageType === 'ARes' ? `${answer.transStatus}${answer.transStatusReason ?? ''}` : `Erro ${answer.errorCode}`;
              outcomes[key] = (outcomes[key] ?? 0) + 1;
              if (answer.messageType === 'ARes') latencies.push(performance.now() - at);
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
    const at = started + (i * 1000) / rate;
    const wait = at - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    pending.push(one(cards[i % cards.length] as Card, at));
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

async function prepare(dialect: TestDialect) {
  const db = await isolatedDatabase(dialect);
  const dataDir = join(tmpdir(), `cardprogram-bench-3ds-${randomBytes(4).toString('hex')}`);
  mkdirSync(dataDir, { recursive: true });
  const acsPort = 30000 + Math.floor(Math.random() * 10000);
  const env = {
    DATABASE_URL: childDatabaseUrl(db),
    CARDPROGRAM_DATA_DIR: dataDir,
    CARDPROGRAM_WORKER: 'off',
    CARDPROGRAM_RATE_LIMIT: '1000000',
    CARDPROGRAM_KYC_AUTO_DECISION_MS: '0',
    CARDPROGRAM_3DS_PORT: String(acsPort),
    CARDPROGRAM_3DS_HOST: '127.0.0.1',
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
    while (cards.length < CARDS) {
      const holder = await call('/api/network/holderCreate.html', holderBody());
      await call('/sandbox/holder/review', { holderId: holder.holderId, auditStatus: 2 });
      for (let k = 0; k < 5 && cards.length < CARDS; k++) {
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
    // A notify URL: a challenge needs one (N/13 without), and writes its callback (the worker is off: nothing is sent).
    execFileSync(
      process.execPath,
      [join(ROOT, 'bin', 'cardprogram.js'), 'merchant', 'update', demo.appId, '--notify-url', 'http://127.0.0.1:9/hooks'],
      {
        cwd: ROOT,
        env: { ...process.env, ...env },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    const service = await startService(env);
    return { service, url: `http://127.0.0.1:${acsPort}/3ds/areq`, cards, cleanup };
  } catch (err) {
    for (const child of services) await stop(child);
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

async function run(dialect: TestDialect) {
  const p = await prepare(dialect);
  try {
    // Warm-up: connections, prepared statements, the JIT (a few AReqs per card, well within its 30).
    await drive(p.url, p.cards, Math.min(RATE, 50), quick ? 0.2 : 2);
    const measured = await drive(p.url, p.cards, RATE, SECONDS);
    process.stderr.write(
      `[${dialect.name}] ${RATE}/s for ${SECONDS} s: ${measured.answered} ARes, p50 ${measured.p50} ms, p99 ${measured.p99} ms, max ${measured.max} ms, ${measured.failed} failed ${JSON.stringify(measured.outcomes)}\n`,
    );
    return { database: dialect.name, cards: p.cards.length, ...measured };
  } finally {
    await stop(p.service.child);
    await p.cleanup();
  }
}

execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
const load = loadavg()
  .map((l) => l.toFixed(2))
  .join(' ');
const which = (process.env.BENCH_DB ?? (quick ? 'sqlite' : 'sqlite,postgres')).split(',');
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
  rate: RATE,
  seconds: SECONDS,
  results,
};
const lines = [
  `Measured ${report.date.slice(0, 10)} on ${report.machine}; load average before the run ${load}; ${RATE} AReqs/s for ${SECONDS} s (open loop, latency from each AReq's scheduled time), client and service on the same machine; EMV 3DS 2.2.0 browser payments of 1.00–60.00 EUR over ${results[0]?.cards ?? CARDS} cards.`,
  '',
  '| database | AReqs/s | ARes | p50 ms | p99 ms | max ms | failed | outcomes |',
  '|---|---:|---:|---:|---:|---:|---:|---|',
  ...results.map(
    (r) =>
      `| ${r.database} | ${r.perSecond} | ${r.answered} | ${r.p50} | ${r.p99} | ${r.max} | ${r.failed} | ${Object.entries(r.outcomes)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')} |`,
  ),
];
process.stdout.write(`${lines.join('\n')}\n`);
if (!quick && !process.env.BENCH_RATE && !process.env.BENCH_SECONDS && !process.env.BENCH_DB) {
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/three-ds.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(new URL('./results/three-ds.md', import.meta.url), `${lines.join('\n')}\n`);
}
if (results.some((r) => r.failed > 0 || r.answered === 0)) {
  process.stderr.write('some AReqs got no ARes\n');
  process.exitCode = 1;
}
