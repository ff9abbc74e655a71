/**
 * Wallet tokens' provisioning (decisions §15.2–15.3, docs/tokens.md) under load: `POST /tsp/provision`
 * latency (p50, p99, max) at a fixed arrival rate (default 100 requests a second, an open loop: each
 * request is sent at its time whatever the answers before it, and its latency counts from that
 * time), on SQLite and PostgreSQL. Issue 45's target: p99 within 100 ms at 100 requests/s.
 *
 * The built service runs as its own process (`bin/cardprogram.js serve`, as in production) with its
 * TSP endpoint on loopback (plain HTTP, as the sandbox allows); its cards are made through the API
 * (their numbers from the sandbox's card details). Each request is a new token (its own requestId
 * and tokenReferenceId) for one of the cards in turn, Apple Pay or Google Pay on a phone, with a risk
 * score from 0 to 9: the answers mix approve, require_authentication (a risk of 4 to 6, a card's
 * third request within 24 hours) and decline (7 or more; a card's live tokens past
 * CARDPROGRAM_TOKENS_PER_CARD); every answer must be a decision.
 *
 *   npm run bench:tokens                    both databases, 100 requests/s for 20 s
 *   npm run bench:tokens -- --quick         SQLite, 20 requests/s for 1 s (checks that it works)
 *   BENCH_RATE=200 BENCH_SECONDS=10 BENCH_DB=postgres npm run bench:tokens
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
import { startService, stop } from './http-processes.js';

const quick = process.argv.includes('--quick');
const RATE = quick ? 20 : Number(process.env.BENCH_RATE ?? 100);
const SECONDS = quick ? 1 : Number(process.env.BENCH_SECONDS ?? 20);
/** Enough cards that none passes 20 requests in the run (decisions §15.7: 20 a card a day), warm-up included. */
const CARDS = Math.max(4, Math.ceil((RATE * (SECONDS + 4)) / 12));
const WALLETS = [
  { walletProvider: 'apple_pay', tokenRequestorId: '40010030273', tokenRequestorName: 'Apple Pay' },
  { walletProvider: 'google_pay', tokenRequestorId: '40010075001', tokenRequestorName: 'Google Pay' },
];

interface Card {
  pan: string;
  expiry: string;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
const round = (ms: number) => Math.round(ms * 10) / 10;
/** This run's mark in its requestIds and tokenReferenceIds. */
const RUN = randomBytes(4).toString('hex');

/** `rate` provisioning requests a second for `seconds`, each at its time; latency from that time to the answer. */
async function drive(url: string, cards: Card[], rate: number, seconds: number, offset: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const total = Math.round(rate * seconds);
  const latencies: number[] = [];
  const outcomes: Record<string, number> = {};
  let failed = 0;
  const one = (card: Card, at: number, i: number) =>
    new Promise<void>((resolve) => {
      const wallet = WALLETS[i % WALLETS.length] as (typeof WALLETS)[number];
      const id = `${RUN}-${i}`;
      const body = JSON.stringify({
        requestId: `req-${id}`,
        tokenReferenceId: `DNITHE${id}`,
        ...wallet,
        accountNumber: card.pan,
        expiry: card.expiry,
        tokenLast4: String(1000 + (i % 9000)),
        tokenExpiry: card.expiry,
        device: { type: 'phone', name: 'Bench phone', locale: 'de-DE' },
        walletRiskScore: i % 10,
      });
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
                res.statusCode === 200
                  ? `${answer.decision}${answer.reason ? ` ${answer.reason}` : ''}`
                  : `${res.statusCode} ${answer.error}`;
              outcomes[key] = (outcomes[key] ?? 0) + 1;
              if (res.statusCode === 200 && answer.decision) latencies.push(performance.now() - at);
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
    pending.push(one(cards[(offset + i) % cards.length] as Card, at, offset + i));
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
  const dataDir = join(tmpdir(), `cardprogram-bench-tokens-${randomBytes(4).toString('hex')}`);
  mkdirSync(dataDir, { recursive: true });
  const tspPort = 30000 + Math.floor(Math.random() * 10000);
  const env = {
    DATABASE_URL: childDatabaseUrl(db),
    CARDPROGRAM_DATA_DIR: dataDir,
    CARDPROGRAM_WORKER: 'off',
    CARDPROGRAM_RATE_LIMIT: '1000000',
    CARDPROGRAM_KYC_AUTO_DECISION_MS: '0',
    CARDPROGRAM_TSP_PORT: String(tspPort),
    CARDPROGRAM_TSP_HOST: '127.0.0.1',
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
    // A notify URL: every token's token.updated callback is written (the worker is off: nothing is sent), as in production.
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
    return { service, url: `http://127.0.0.1:${tspPort}/tsp/provision`, cards, cleanup };
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
    // Warm-up: connections, prepared statements, the JIT (a few requests in all, spread over the cards).
    const warm = Math.min(RATE, 50) * (quick ? 0.2 : 2);
    await drive(p.url, p.cards, Math.min(RATE, 50), quick ? 0.2 : 2, 0);
    const measured = await drive(p.url, p.cards, RATE, SECONDS, Math.round(warm));
    process.stderr.write(
      `[${dialect.name}] ${RATE}/s for ${SECONDS} s: ${measured.answered} decisions, p50 ${measured.p50} ms, p99 ${measured.p99} ms, max ${measured.max} ms, ${measured.failed} failed ${JSON.stringify(measured.outcomes)}\n`,
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
  `Measured ${report.date.slice(0, 10)} on ${report.machine}; load average before the run ${load}; ${RATE} provisioning requests/s for ${SECONDS} s (open loop, latency from each request's scheduled time), client and service on the same machine; new Apple Pay and Google Pay tokens, risk scores 0–9, over ${results[0]?.cards ?? CARDS} cards.`,
  '',
  '| database | requests/s | decisions | p50 ms | p99 ms | max ms | failed | outcomes |',
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
  writeFileSync(new URL('./results/tokens.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(new URL('./results/tokens.md', import.meta.url), `${lines.join('\n')}\n`);
}
if (results.some((r) => r.failed > 0 || r.answered === 0)) {
  process.stderr.write('some provisioning requests got no decision\n');
  process.exitCode = 1;
}
