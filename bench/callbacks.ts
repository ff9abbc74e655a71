/**
 * Callback delivery latency, from commit to receipt, over N events (default 1000): top-ups through
 * the real HTTP app (in process) on a card whose merchant has a notify URL, 10 at a time; a loopback
 * receiver verifies each `trade` callback with `standardwebhooks` and records when it arrived. The
 * in-service worker is woken by each commit (and polls every second besides).
 *
 *   npm run bench:callbacks               both databases
 *   npm run bench:callbacks -- --quick    50 events (CI)
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { buildApp } from '../src/app.js';
import { hmacSign, signingString } from '../src/http/signing.js';
import { createMerchant } from '../src/merchants/create.js';
import { testConfig } from '../test/helpers/app.js';
import { isolatedDatabase, type TestDialect } from '../test/helpers/db.js';

const quick = process.argv.includes('--quick');
const EVENTS = quick ? 50 : Number(process.env.BENCH_EVENTS ?? 1000);

async function run(dialect: TestDialect) {
  const db = await isolatedDatabase(dialect);
  const arrivals = new Map<string, number>();
  let wh: Webhook | null = null;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const at = Date.now();
      const event = wh?.verify(raw, req.headers as Record<string, string>) as { type: string; tradeId: string; occurredAt: string };
      if (event.type === 'trade') arrivals.set(event.tradeId, at - Date.parse(event.occurredAt));
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  const config = testConfig(db.dataDir, {
    callbacks: { worker: true, retryScheduleMs: [1000], maxAgeMs: 600_000, timeoutMs: 10_000, pollMs: 1000 },
  });
  const app = await buildApp(config, { database: db.database, logger: false });
  try {
    const m = await createMerchant({ ctx: app.svc, input: { name: 'Bench', signType: 'HMAC-SHA256', notifyUrl: url } });
    wh = new Webhook(m.webhookSecret);
    const call = async (path: string, body: Record<string, unknown>) => {
      const signed = { ...body, appId: m.appId, randomStr: randomBytes(16).toString('hex') };
      const res = await app.inject({
        method: 'POST',
        url: path,
        payload: { ...signed, sign: hmacSign(m.secret ?? '', signingString(signed)) },
      });
      if (res.statusCode !== 200) throw new Error(`${path}: ${res.body}`);
      return res.json();
    };
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const holder = await call('/api/network/holderCreate.html', {
      mobile: '+4915112345678',
      firstName: b64('Bench'),
      email: 'bench@example.com',
      dateOfBirth: '1990-01-01',
      nationality: 'DE',
      sex: 1,
      countryCode: 'DE',
      town: b64('Berlin'),
      address: b64('Street 1'),
      postCode: '10115',
      idnoType: 2,
      idno: 'P1234567',
    });
    await call('/sandbox/holder/review', { holderId: holder.holderId, auditStatus: 2 });
    const card = await call('/api/network/cardApply.html', { holderId: holder.holderId, currency: 'EUR' });
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < EVENTS) {
          next++;
          await call('/api/network/cardTopUp.html', { cardId: card.model.cardId, amount: 1 });
        }
      }),
    );
    const deadline = Date.now() + 60_000;
    while (arrivals.size < EVENTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const seconds = (performance.now() - started) / 1000;
    const lat = [...arrivals.values()].sort((a, b) => a - b);
    const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))];
    return {
      dialect: dialect.name,
      events: EVENTS,
      received: arrivals.size,
      seconds: Math.round(seconds * 10) / 10,
      latencyMs: { p50: pct(50), p99: pct(99), max: lat.at(-1) },
    };
  } finally {
    await app.close();
    server.close();
    await db.cleanup();
  }
}

const which = process.env.BENCH_DIALECTS ?? 'sqlite,postgres';
const results = [];
if (which.includes('sqlite')) results.push(await run({ name: 'sqlite', url: 'file:' }));
if (which.includes('postgres'))
  results.push(await run({ name: 'postgres', url: process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test' }));
console.log(JSON.stringify({ date: new Date().toISOString(), quick, results }, null, 2));
for (const r of results) if (r.received !== r.events) process.exitCode = 1;
