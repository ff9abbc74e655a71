/**
 * Callback delivery latency, from commit to receipt. The service runs as its own process (as in
 * production) on a fresh database; this process is the merchant: it creates a card through the
 * API, then makes N top-ups (default 1000), each of which commits a `trade` callback to its notify
 * URL, and a loopback receiver verifies every callback with `standardwebhooks`. Latency is the time
 * from the top-up's acknowledgement (sent after its commit) to the callback's arrival.
 * Three phases: paced (100 top-ups/s, the latency a merchant sees), a burst (10 at a time, as
 * fast as the service takes them: how the worker keeps up), and isolation (issue 33): 1 000
 * callbacks queued for three other merchants' broken receivers — one accepts connections and never
 * answers, one refuses them, one answers after 5 s — while the merchant makes 50 top-ups, 10 a
 * second; its p99 from commit to receipt is the figure docs/callbacks.md promises (1 s). And
 * fan-out (issue 46): another merchant makes 300 KYC requests, each with its own `callbackUrl` (its
 * own port: 300 endpoints), whose receivers answer 500 at 9 s, just before the 10 s timeout; once
 * the sandbox's reviewer has written their 600 `kyc.result` events, the merchant makes its 50
 * top-ups again. `attackerMostInFlight` is the most attempts the 300 receivers had open at once.
 *
 *   npm run bench:callbacks               both databases
 *   npm run bench:callbacks -- --quick    50 events per phase (CI)
 *   BENCH_PHASES=fanout npm run bench:callbacks   one phase (paced, burst, isolation, fanout)
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { hmacSign, signingString } from '../src/http/signing.js';
import { holderBody, kycBody } from '../test/helpers/app.js';
import { childDatabaseUrl, ROOT, runCli } from '../test/helpers/cli.js';
import { isolatedDatabase, type TestDialect } from '../test/helpers/db.js';
import { startService } from './http-processes.js';

const quick = process.argv.includes('--quick');
const EVENTS = quick ? 50 : Number(process.env.BENCH_EVENTS ?? 1000);
const PHASES = (process.env.BENCH_PHASES ?? 'paced,burst,isolation,fanout').split(',');
/** Isolation: callbacks queued for the broken receivers, and the good merchant's events measured. */
const BROKEN_QUEUED = 1000;
const ISOLATION_EVENTS = 50;
/** Fan-out: one merchant's endpoints (KYC callbackUrls on ports of their own), answering 500 at 90 % of the 10 s timeout. */
const FANOUT_ENDPOINTS = 300;
const FANOUT_ANSWER_MS = 9000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function stats(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => Math.round((s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN) * 10) / 10;
  return { n: s.length, p50: at(50), p99: at(99), max: at(100) };
}

/** The three broken receivers of the isolation phase, on loopback. */
async function brokenReceivers() {
  const sockets = new Set<net.Socket>();
  const hang = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  const slow = http.createServer((req, res) => {
    req.resume();
    const timer = setTimeout(() => res.end('ok'), 5000);
    res.on('close', () => clearTimeout(timer));
  });
  const closed = net.createServer();
  for (const s of [hang, slow, closed]) await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const url = (s: net.Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}/hooks`;
  const urls = [url(hang), url(closed), url(slow)];
  await new Promise<void>((r) => closed.close(() => r()));
  return {
    urls,
    close: async () => {
      for (const s of sockets) s.destroy();
      slow.closeAllConnections();
      await Promise.all([hang, slow].map((s) => new Promise<void>((r) => s.close(() => r()))));
    },
  };
}

/** The fan-out phase's receivers: each its own port, each answering 500 after `delayMs`; counts open requests. */
async function slow500Receivers(n: number, delayMs: number) {
  let open = 0;
  let mostOpen = 0;
  const servers: http.Server[] = [];
  for (let i = 0; i < n; i++) {
    const server = http.createServer((req, res) => {
      mostOpen = Math.max(mostOpen, ++open);
      let done = false;
      const end = () => {
        if (!done) open--;
        done = true;
      };
      req.resume();
      const timer = setTimeout(() => res.writeHead(500).end('try later'), delayMs);
      res.on('finish', end);
      res.on('close', () => {
        clearTimeout(timer);
        end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
  }
  return {
    urls: servers.map((s) => `http://127.0.0.1:${(s.address() as AddressInfo).port}/kyc`),
    mostOpen: () => mostOpen,
    close: async () => {
      for (const s of servers) s.closeAllConnections();
      await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    },
  };
}

async function run(dialect: TestDialect) {
  const db = await isolatedDatabase(dialect);
  const arrivals = new Map<string, number>();
  let wh: Webhook | null = null;
  const receiver = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const at = performance.now();
      const event = wh?.verify(raw, req.headers as Record<string, string>) as { type: string; tradeId: string };
      if (event.type === 'trade') arrivals.set(event.tradeId, at);
      res.end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hooks = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  const env = {
    DATABASE_URL: childDatabaseUrl(db),
    CARDPROGRAM_DATA_DIR: db.dataDir,
    CARDPROGRAM_MASTER_KEY: randomBytes(32).toString('hex'),
    CARDPROGRAM_DEMO_MERCHANT: 'off',
    // Callback delivery is measured here, not the per-merchant rate limit (the burst phase exceeds it).
    CARDPROGRAM_RATE_LIMIT: '0',
    // Fan-out: the sandbox's reviewer takes the KYC requests into review at once, and decides them a second later.
    CARDPROGRAM_KYC_AUTO_DECISION_MS: '1000',
  };
  type Merchant = { appId: string; secret: string; webhookSecret: string };
  const merchant = async (name: string, notifyUrl: string): Promise<Merchant> => {
    const created = await runCli(['merchant', 'create', '--name', name, '--notify-url', notifyUrl, '--json'], env);
    if (created.code !== 0) throw new Error(created.stderr);
    const made = JSON.parse(created.stdout) as Merchant;
    // Top-ups draw from the merchant's funding account (docs/funding.md): the operator credits it first.
    const funded = await runCli(['merchant', 'fund', made.appId, '1000000', '--currency', 'EUR', '--reference', 'bench'], env);
    if (funded.code !== 0) throw new Error(funded.stderr);
    return made;
  };
  const m = await merchant('Bench', hooks);
  const broken = PHASES.includes('isolation') ? await brokenReceivers() : null;
  const others = broken ? await Promise.all(broken.urls.map((url, i) => merchant(`Broken ${i}`, url))) : [];
  const fanout = PHASES.includes('fanout') ? await slow500Receivers(FANOUT_ENDPOINTS, FANOUT_ANSWER_MS) : null;
  const fanoutMerchant = fanout ? await merchant('Fanout', 'http://127.0.0.1:9/unused') : null;
  wh = new Webhook(m.webhookSecret);
  const service = await startService(env);
  try {
    const call = async (path: string, body: Record<string, unknown>, as: Merchant = m) => {
      // A KYC request's requestNo is its idempotency key: it takes no randomStr.
      const nonce = path.startsWith('/open/api/kyc/') ? {} : { randomStr: randomBytes(16).toString('hex') };
      const signed = { ...body, appId: as.appId, ...nonce };
      const res = await fetch(`${service.base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...signed, sign: hmacSign(as.secret, signingString(signed)) }),
      });
      const json = (await res.json()) as Record<string, any>;
      if (res.status !== 200) throw new Error(`${path}: ${JSON.stringify(json)}`);
      return json;
    };
    const cardOf = async (as: Merchant) => {
      const holder = await call('/api/network/holderCreate.html', holderBody({ idnoType: 2, idno: 'P1234567' }), as);
      await call('/sandbox/holder/review', { holderId: holder.holderId, auditStatus: 2 }, as);
      const card = await call('/api/network/cardApply.html', { holderId: holder.holderId, currency: 'EUR' }, as);
      return card.model.cardId as string;
    };
    const cardId = await cardOf(m);

    const phase = async (concurrency: number, intervalMs: number, events = EVENTS) => {
      const acked = new Map<string, number>();
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < events) {
            next++;
            const t0 = performance.now();
            const r = await call('/api/network/cardTopUp.html', { cardId, amount: 1 });
            acked.set(r.model.tradeId, performance.now());
            if (intervalMs) await sleep(Math.max(0, intervalMs - (performance.now() - t0)));
          }
        }),
      );
      const deadline = Date.now() + 60_000;
      while ([...acked.keys()].some((id) => !arrivals.has(id)) && Date.now() < deadline) await sleep(10);
      const lat = [...acked].filter(([id]) => arrivals.has(id)).map(([id, t]) => Math.max(0, (arrivals.get(id) ?? t) - t));
      return { ...stats(lat), lost: events - lat.length };
    };
    const result: Record<string, unknown> = { dialect: dialect.name, events: EVENTS };
    if (PHASES.includes('paced')) result.pacedCommitToReceiptMs = await phase(1, 10);
    if (PHASES.includes('burst')) result.burstCommitToReceiptMs = await phase(10, 0);
    if (broken) {
      // 1 000 trade callbacks for the broken receivers (a third each), written as fast as the
      // service takes them; the worker is busy with them when the measured top-ups start.
      const cards = await Promise.all(others.map((o) => cardOf(o)));
      let queued = 0;
      await Promise.all(
        Array.from({ length: 10 }, async () => {
          while (queued < BROKEN_QUEUED) {
            const i = queued++ % others.length;
            await call('/api/network/cardTopUp.html', { cardId: cards[i], amount: 1 }, others[i] as Merchant);
          }
        }),
      );
      result.isolation = { brokenQueued: BROKEN_QUEUED, commitToReceiptMs: await phase(1, 100, ISOLATION_EVENTS) };
    }
    if (fanout && fanoutMerchant) {
      // One KYC request per endpoint (10 at a time); the reviewer writes two events for each.
      let next = 0;
      await Promise.all(
        Array.from({ length: 10 }, async () => {
          while (next < FANOUT_ENDPOINTS) {
            const i = next++;
            await call('/open/api/kyc/share/information', kycBody({ callbackUrl: fanout.urls[i] }), fanoutMerchant);
          }
        }),
      );
      const undecided = () =>
        db.database.db
          .selectFrom('kyc_requests')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('merchant_id', '=', fanoutMerchant.appId)
          .where('status', 'in', ['init', 'reviewing'])
          .executeTakeFirstOrThrow();
      const until = Date.now() + 120_000;
      while (Number((await undecided()).n) > 0 && Date.now() < until) await sleep(200);
      const events = await db.database.db
        .selectFrom('callback_events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('merchant_id', '=', fanoutMerchant.appId)
        .executeTakeFirstOrThrow();
      const commitToReceiptMs = await phase(1, 100, ISOLATION_EVENTS);
      result.fanout = {
        endpoints: FANOUT_ENDPOINTS,
        answerMs: FANOUT_ANSWER_MS,
        attackerEvents: Number(events.n),
        attackerMostInFlight: fanout.mostOpen(),
        commitToReceiptMs,
      };
    }
    return result;
  } finally {
    await broken?.close();
    await fanout?.close();
    service.child.kill('SIGTERM');
    await new Promise((r) => service.child.once('exit', r));
    receiver.close();
    await db.cleanup();
  }
}

const which = process.env.BENCH_DIALECTS ?? 'sqlite,postgres';
const results = [];
if (which.includes('sqlite')) results.push(await run({ name: 'sqlite', url: 'file:' }));
if (which.includes('postgres'))
  results.push(await run({ name: 'postgres', url: process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test' }));
const report = { date: new Date().toISOString(), quick, results };
console.log(JSON.stringify(report, null, 2));
if (!quick) {
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/callbacks.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
}
type Phase = { lost: number } | undefined;
const lost = (r: Record<string, unknown>) =>
  [
    r.pacedCommitToReceiptMs as Phase,
    r.burstCommitToReceiptMs as Phase,
    (r.isolation as { commitToReceiptMs: Phase } | undefined)?.commitToReceiptMs,
    (r.fanout as { commitToReceiptMs: Phase } | undefined)?.commitToReceiptMs,
  ].some((p) => (p?.lost ?? 0) > 0);
if (results.some(lost)) process.exitCode = 1;
