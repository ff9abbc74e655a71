/**
 * The crash harness (issue 8): the real service as a child process, concurrent writers that retry
 * every request with the same randomStr / requestNo until they get an answer, and SIGKILL at random
 * moments, restarting the service each time. Afterwards the database must hold every acknowledged
 * write exactly once and nothing else, the ledger's invariants must hold, every card's balance
 * must be what the acknowledged operations add up to, and every callback event must have reached
 * the receiver at least once.
 *
 * `npm run crashtest` runs it in full (test/crash/main.ts); test/crash.test.ts runs a short version
 * in `npm test`.
 */
import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { openDatabase } from '../../src/db/index.js';
import type { LedgerReport } from '../../src/ledger/check.js';
import { holderBody, kycBody, randomStr } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import type { TestDialect } from '../helpers/db.js';
import { eventually, receiver } from '../helpers/receiver.js';
import { crashService } from './service.js';
import { signedClient } from './signed-client.js';
import { type Acknowledged, compareWithDatabase } from './verify.js';

export interface CrashOptions {
  dialect: TestDialect;
  /** How many times the service is killed (and restarted). */
  kills: number;
  /** Concurrent writers. */
  writers: number;
  /** The service runs between ~min and ~max ms under load before each kill. */
  upMs: [number, number];
  /**
   * PostgreSQL only: also restart the PostgreSQL server itself this many times under load, while the
   * service keeps running (`pg_ctlcluster … restart`; every other user of the server sees it too,
   * so this is for `npm run crashtest`, not the suite).
   */
  pgRestarts?: number;
  log?: (line: string) => void;
}

export interface CrashReport {
  database: string;
  kills: number;
  pgRestarts: number;
  /** Acknowledged writes by operation. */
  acknowledged: Record<string, number>;
  /** Attempts that met a dead service (refused, reset) or a 503 and were sent again (a 500 is a problem). */
  retries: number;
  /** Answers marked x-idempotent-replay: the service had done it before the client heard. */
  replays: number;
  callbacks: { events: number; received: number; redelivered: number };
  ledger: LedgerReport;
  /** Acknowledged writes missing from the database (must be 0). */
  lost: number;
  /** Writes in the database that no client was told about, or present twice (must be 0). */
  extra: number;
  problems: string[];
  seconds: number;
}

const cents = (minor: number) => minor / 100;

/**
 * Restarts the machine's PostgreSQL cluster as a crash would (immediate stop: no checkpoint, crash
 * recovery at start), without blocking the writers meanwhile. Debian's pg_ctlcluster;
 * CRASH_PG_CLUSTER names the cluster when it is not the first version's `main`.
 */
async function restartPostgres(): Promise<void> {
  const [version, name] = (process.env.CRASH_PG_CLUSTER ?? `${readdirSync('/etc/postgresql')[0] ?? ''}/main`).split('/');
  if (!version || !name) throw new Error('no PostgreSQL cluster found: set CRASH_PG_CLUSTER=VERSION/NAME');
  await promisify(execFile)('pg_ctlcluster', ['--skip-systemctl-redirect', version, name, 'restart', '-m', 'immediate']);
}

export async function runCrashTest(opts: CrashOptions): Promise<CrashReport> {
  const log = opts.log ?? (() => undefined);
  const started = Date.now();
  const cleanups: Array<() => unknown> = [];
  try {
    const { db, port, env, demo, start, kill, selfExits, errorLog } = await crashService(
      opts.dialect,
      { CARDPROGRAM_WORKER_POLL_MS: '50', CARDPROGRAM_KYC_AUTO_DECISION_MS: '200' },
      cleanups,
    );
    const base = `http://127.0.0.1:${port}`;
    const rx = await receiver({ after: (fn) => cleanups.push(fn) }, demo.webhookSecret);
    const notify = await runCli(['merchant', 'update', demo.appId, '--notify-url', rx.url], env);
    if (notify.code !== 0) throw new Error(`merchant update failed: ${notify.stderr}`);

    // ---- Clients that never give up on a request ----
    let stopping = false;
    const { send, ok, stats } = signedClient(base, demo, errorLog);

    // What the clients were told, to hold the database to.
    const acked: Acknowledged = {
      holders: new Map(),
      cards: new Map(),
      kyc: new Set(),
      trades: new Map(),
    };
    const expectedAvailable = new Map<string, number>();
    const counts: Record<string, number> = {};
    const count = (k: string) => {
      counts[k] = (counts[k] ?? 0) + 1;
    };

    const writer = async (w: number) => {
      while (!stopping) {
        const holder = holderBody();
        const created = ok('holderCreate', await send('/api/network/holderCreate.html', holder));
        acked.holders.set(String(holder.idno), created.holderId);
        count('holderCreate');
        ok('holder review', await send('/sandbox/holder/review', { holderId: created.holderId, auditStatus: 2, randomStr: randomStr() }));
        count('holderReview');
        const card = ok(
          'cardApply',
          await send('/api/network/cardApply.html', { holderId: created.holderId, currency: 'EUR', randomStr: randomStr() }),
        );
        const cardId = card.model.cardId as string;
        acked.cards.set(cardId, created.holderId);
        expectedAvailable.set(cardId, 0);
        count('cardApply');
        for (let i = 0; i < 8 && !stopping; i++) {
          const topUp = 1000 + randomInt(100_000);
          const t = ok('cardTopUp', await send('/api/network/cardTopUp.html', { cardId, amount: cents(topUp), randomStr: randomStr() }));
          acked.trades.set(t.model.tradeId, { cardId, kind: 'topUp' });
          expectedAvailable.set(cardId, (expectedAvailable.get(cardId) ?? 0) + topUp);
          count('cardTopUp');

          const amount = 100 + randomInt(Math.max(1, Math.floor(topUp / 2)));
          const auth = await send('/sandbox/network/authorize', { cardId, amount: cents(amount), randomStr: randomStr() });
          const authBody = ok('authorize', auth);
          acked.trades.set(authBody.model.tradeId, { cardId, kind: 'authorize' });
          expectedAvailable.set(cardId, (expectedAvailable.get(cardId) ?? 0) - amount);
          count('authorize');

          if (randomInt(2) === 0) {
            const part = randomInt(2) === 0 ? amount : 1 + randomInt(amount);
            const rev = ok(
              'reverse',
              await send('/sandbox/network/reverse', { tradeId: authBody.model.tradeId, amount: cents(part), randomStr: randomStr() }),
            );
            acked.trades.set(rev.model.tradeId, { cardId, kind: 'reverse' });
            expectedAvailable.set(cardId, (expectedAvailable.get(cardId) ?? 0) + part);
            count('reverse');
          }
        }
        if (w % 2 === 0) {
          const kyc = kycBody({ callbackUrl: rx.url });
          ok('kyc share', await send('/open/api/kyc/share/information', kyc));
          acked.kyc.add(String(kyc.requestNo));
          count('kycShare');
        }
      }
    };

    const writers = Array.from({ length: opts.writers }, (_, w) => writer(w));
    const failures: unknown[] = [];
    const running = Promise.all(writers.map((p) => p.catch((err) => failures.push(err))));

    // ---- The killer ----
    for (let k = 1; k <= opts.kills && failures.length === 0; k++) {
      await new Promise((r) => setTimeout(r, opts.upMs[0] + randomInt(Math.max(1, opts.upMs[1] - opts.upMs[0]))));
      await kill();
      log(`kill ${k}/${opts.kills}: ${Object.values(counts).reduce((a, b) => a + b, 0)} writes acknowledged so far`);
      await start();
    }
    const pgRestarts = opts.dialect.name === 'postgres' ? (opts.pgRestarts ?? 0) : 0;
    for (let r = 1; r <= pgRestarts && failures.length === 0; r++) {
      await new Promise((res) => setTimeout(res, opts.upMs[0] + randomInt(Math.max(1, opts.upMs[1] - opts.upMs[0]))));
      await restartPostgres();
      log(`PostgreSQL restart ${r}/${pgRestarts}: ${Object.values(counts).reduce((a, b) => a + b, 0)} writes acknowledged so far`);
    }
    stopping = true;
    await running;
    if (failures.length) throw failures[0];

    // ---- Everything is answered; let the callbacks drain (a dead worker's lease runs 30 s) ----
    const check = openDatabase(db.url, db.pgSchema ? { pgSchema: db.pgSchema } : {});
    cleanups.push(() => check.close());
    const undelivered = async () =>
      Number(
        (
          await check.db
            .selectFrom('callback_events')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('status', '<>', 'delivered')
            .executeTakeFirstOrThrow()
        ).n,
      );
    const kycUndecided = async () =>
      Number(
        (
          await check.db
            .selectFrom('kyc_requests')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('status', 'in', ['init', 'reviewing'])
            .executeTakeFirstOrThrow()
        ).n,
      );
    await eventually(
      async () => (await kycUndecided()) === 0 && (await undelivered()) === 0,
      90_000,
      'every KYC decided and every callback delivered',
    );
    await kill();

    // ---- The database against what the clients were told ----
    const problems: string[] = [
      ...selfExits,
      ...stats.serverErrors.slice(0, 20).map((e) => `answered with a server error: ${e}`),
      ...(stats.serverErrors.length ? errorLog.map((line) => `the service logged: ${line}`) : []),
    ];
    const { lost, extra, ledger, events, receivedIds, seen } = await compareWithDatabase(
      check,
      acked,
      expectedAvailable,
      rx.received,
      problems,
    );

    return {
      database: opts.dialect.name,
      kills: opts.kills,
      pgRestarts: opts.dialect.name === 'postgres' ? (opts.pgRestarts ?? 0) : 0,
      acknowledged: counts,
      retries: stats.retries,
      replays: stats.replays,
      callbacks: { events: events.length, received: receivedIds.length, redelivered: receivedIds.length - seen.size },
      ledger,
      lost,
      extra,
      problems,
      seconds: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    for (const fn of cleanups.reverse()) await fn();
  }
}
