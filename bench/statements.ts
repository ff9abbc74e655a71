/**
 * What the database alone costs per 4.1 list: the floor under the list's figure. One list request is
 * sent through the real app (in process, on the database `bench:profile` fills), its statements
 * are recorded with their parameters, and each is then sent again by itself, many times (the
 * writes' statements cannot be: their ids are taken once the request committed; `bench:scale`
 * measures what an authorization costs PostgreSQL): SQLite through better-sqlite3 (a prepared statement, on this process's thread: the time
 * the service's main thread spends in it); PostgreSQL through node-postgres as named statements,
 * one at a time (a round trip's latency) and from 50 clients at once (what the server can do).
 * A parameter that was the request's randomStr is a fresh one each time, so a nonce's insert inserts.
 *
 *   npm run bench:statements                 SQLite (--rounds N: how many times each, 3000)
 *   npm run bench:statements -- --db postgres
 *   npm run bench:statements -- --op topup [--db postgres]   a write's whole transactions (bench/statements-writes.ts): topup, holder
 *   npm run bench:statements -- --timestamp   requests signed with a timestamp the service requires
 *                                             (production's mode: a read's nonce in the read-nonce store)
 */
import { randomBytes } from 'node:crypto';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { hmacSign, signingString } from '../src/http/signing.js';
import { childDatabaseUrl } from '../test/helpers/cli.js';
import { arg, filledDatabase } from './filled.js';
import { operations } from './http-operations.js';
import { fromFiftyClients, recordTemplate, replayPostgres, replaySqlite } from './statements-writes.js';

const dbName = arg('db', 'sqlite');
const ROUNDS = Number(arg('rounds', '3000'));
const OP = arg('op', 'list');
const TIMESTAMPED = process.argv.includes('--timestamp');

const { db, env, cards, demo, cleanup } = await filledDatabase(dbName, 'statements', 'silent');

interface Sent {
  sql: string;
  parameters: unknown[];
}

try {
  const app = await buildApp(loadConfig({ ...env, CARDPROGRAM_REQUIRE_TIMESTAMP: TIMESTAMPED ? 'on' : 'off' }), { logger: false });
  const database = app.svc.database;
  const rows: Array<{ op: string; statement: string; us1: number; perSecond50?: number }> = [];
  if (OP !== 'list') {
    await writes(app, database);
    process.exit(0);
  }
  for (const op of operations(cards).filter((o) => o.key === 'list')) {
    const send = async () => {
      const body: Record<string, unknown> = { ...op.body(Math.floor(Math.random() * 1e9)), appId: demo.appId };
      const nonce = randomBytes(16).toString('hex');
      body.randomStr = nonce;
      if (TIMESTAMPED) body.timestamp = Date.now();
      body.sign = hmacSign(demo.secret, signingString(body));
      const res = await app.inject({ method: 'POST', url: op.path, payload: body });
      if (res.statusCode !== 200) throw new Error(`${op.name}: ${res.statusCode} ${res.body}`);
      return nonce;
    };
    // The first request also reads the merchant (then cached) and fills the rate limiter's bucket.
    await send();
    const sent: Sent[] = [];
    database.onStatement = (sql, parameters) => sent.push({ sql, parameters: [...parameters] });
    const nonce = await send();
    database.onStatement = undefined;
    const fresh = (s: Sent) => s.parameters.map((p) => (p === nonce ? randomBytes(16).toString('hex') : p));
    // The rate limiter's lease (src/http/rate-limit.ts) is taken once per batch of requests under
    // load, not per request: left out.
    const lease = (x: Sent) => x.sql.includes('"rate_buckets"') || x.sql.startsWith('set local synchronous_commit');
    for (const s of sent.filter((x) => !lease(x))) {
      // The group commit's BEGIN, SAVEPOINT, RELEASE and COMMIT (SQLite): its commit is timed below.
      if (/^(begin|commit|savepoint|release|rollback)/i.test(s.sql)) continue;
      rows.push({ op: op.name, statement: s.sql, ...(await timeOne(s, fresh)) });
    }
  }
  await app.close();
  if (dbName !== 'postgres') {
    // The group's durable COMMIT (fsync), shared by the transactions of one group.
    const raw = new SQLite(db.url.slice('file:'.length));
    raw.pragma('synchronous = FULL');
    let spent = 0;
    for (let i = 0; i < 300; i++) {
      raw.exec('begin immediate');
      raw.prepare('insert into rate_buckets (merchant_id, tokens, refilled_at) values (?, 1, 1)').run(`bench_${i}`);
      const t0 = performance.now();
      raw.exec('commit');
      if (i >= 100) spent += performance.now() - t0;
    }
    raw.exec("delete from rate_buckets where merchant_id like 'bench_%'");
    raw.close();
    rows.push({ op: 'one group commit', statement: 'commit (fsync), once per group', us1: (spent / 200) * 1000 });
  }
  const label = (s: string) => s.replace(/\s+/g, ' ').slice(0, 90);
  process.stdout.write(`${dbName}: each statement of one request, sent again ${ROUNDS} times by itself\n\n`);
  process.stdout.write(`| operation | statement | µs, one at a time |${dbName === 'postgres' ? ' per second, 50 clients |' : ''}\n`);
  process.stdout.write(`|---|---|---:|${dbName === 'postgres' ? '---:|' : ''}\n`);
  for (const r of rows)
    process.stdout.write(
      `| ${r.op} | \`${label(r.statement)}\` | ${r.us1.toFixed(0)} |${dbName === 'postgres' ? ` ${r.perSecond50 ?? ''} |` : ''}\n`,
    );
  const byOp = new Map<string, number>();
  for (const r of rows) byOp.set(r.op, (byOp.get(r.op) ?? 0) + r.us1);
  process.stdout.write('\nSum per request (µs, one at a time):\n');
  for (const [op, us] of byOp) process.stdout.write(`  ${op}: ${us.toFixed(0)}\n`);
  if (dbName !== 'postgres')
    process.stdout.write("  (a list also shares its group's commit: the commit ÷ the group's size, see cardprogram_group_commit_size)\n");
} finally {
  await cleanup();
}

/**
 * A write (`--op topup|holder`): its whole transactions, as the service sends them, replayed by the
 * database alone (bench/statements-writes.ts). Printed: per transaction, one at a time, and per
 * second (PostgreSQL: 50 clients; SQLite: one thread, groups of 30 under one commit).
 */
async function writes(app: Awaited<ReturnType<typeof buildApp>>, database: typeof app.svc.database) {
  const op = operations(cards).find((o) => o.key === OP);
  if (!op)
    throw new Error(
      `--op: one of list, ${operations(cards)
        .map((o) => o.key)
        .join(', ')}`,
    );
  const templates = [];
  for (let i = 0; i < Math.min(cards.length, 20); i++) {
    const send = async () => {
      const body: Record<string, unknown> = { ...op.body(i + cards.length * (1 + Math.floor(Math.random() * 1e6))), appId: demo.appId };
      if (op.randomStr) body.randomStr = randomBytes(16).toString('hex');
      body.sign = hmacSign(demo.secret, signingString(body));
      const res = await app.inject({ method: 'POST', url: op.path, payload: body });
      if (res.statusCode !== 200) throw new Error(`${op.name}: ${res.statusCode} ${res.body}`);
    };
    await send();
    templates.push(await recordTemplate(database, send));
  }
  await app.close();
  const first = templates[0] ?? [];
  process.stdout.write(
    `${dbName}, ${op.name}: ${first.length} statements a transaction\n${first.map((s) => `  ${s.sql.replace(/\s+/g, ' ').slice(0, 110)}`).join('\n')}\n`,
  );
  if (dbName === 'postgres') {
    const r = await replayPostgres(childDatabaseUrl(db), templates, Math.min(ROUNDS, 1000));
    process.stdout.write(
      `database alone: ${r.us1.toFixed(0)} µs a transaction one at a time; ${r.perSecond50} transactions/s from 50 clients\n`,
    );
  } else {
    const r = replaySqlite(db.url.slice('file:'.length), templates, ROUNDS);
    process.stdout.write(
      `database alone: ${r.us1.toFixed(0)} µs a transaction (its share of a group's commit included); ${r.perSecond} transactions/s on one thread\n`,
    );
  }
  await cleanup();
}

/**
 * One statement's time: run by itself, each run in a savepoint rolled back (a write leaves the tables
 * as the request found them, so that its fixed ids can be inserted again), only the statement timed.
 * On PostgreSQL also from 50 clients at once, for real: a read, and a nonce that is fresh each time.
 */
async function timeOne(s: Sent, fresh: (s: Sent) => unknown[]): Promise<{ us1: number; perSecond50?: number }> {
  let spent = 0;
  if (dbName !== 'postgres') {
    const raw = new SQLite(db.url.slice('file:'.length));
    raw.pragma('busy_timeout = 5000');
    try {
      const statement = raw.prepare(s.sql);
      raw.exec('begin');
      for (let i = 0; i < ROUNDS + 200; i++) {
        raw.exec('savepoint one');
        const params = fresh(s);
        const t0 = performance.now();
        if (statement.reader) statement.all(...params);
        else statement.run(...params);
        if (i >= 200) spent += performance.now() - t0;
        raw.exec('rollback to one');
      }
      raw.exec('rollback');
      return { us1: (spent / ROUNDS) * 1000 };
    } finally {
      raw.close();
    }
  }
  const config = { connectionString: childDatabaseUrl(db) };
  const one = new pg.Client(config);
  await one.connect();
  const name = `b${randomBytes(4).toString('hex')}`;
  const send = (c: pg.Client) => c.query({ name, text: s.sql, values: fresh(s) });
  try {
    await one.query('begin');
    for (let i = 0; i < ROUNDS + 200; i++) {
      await one.query('savepoint one');
      const t0 = performance.now();
      await send(one);
      if (i >= 200) spent += performance.now() - t0;
      await one.query('rollback to one');
    }
    await one.query('rollback');
    const us1 = (spent / ROUNDS) * 1000;
    return { us1, perSecond50: await fromFiftyClients(config.connectionString, (c) => send(c)) };
  } finally {
    await one.end();
  }
}
