/**
 * What the database alone costs per write (issue 31): the same transactions the service sends for
 * one operation, replayed without the service. Two requests of the operation on the same card are
 * sent through the real app and their statements recorded; a parameter that differs between the two
 * (the randomStr and its fingerprint, new ids, drawn codes, the stored answer, a document's keyed
 * hash) is a fresh value of the same shape on each replay, the others stay as recorded. Each
 * template is one card's, and the replays go round the cards, as bench:http's requests do.
 *
 * PostgreSQL: whole transactions (BEGIN … COMMIT, every statement named, as the service sends
 * them), one at a time (the latency of one) and from 50 clients at once (what the server does).
 * SQLite: whole transactions in groups of GROUP under one durable COMMIT, each in a savepoint, as the
 * group commit runs them, on this process's thread.
 */
import { randomBytes } from 'node:crypto';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import type { Database } from '../src/db/index.js';
import { backendsOf, cpuOver } from './network-measure.js';

interface Statement {
  sql: string;
  parameters: unknown[];
  /** Which parameters differ from request to request: a fresh value each replay. */
  vary: boolean[];
}

/** Transactions of one SQLite group commit (its usual size under 50 connections: 20–40). */
const GROUP = 30;

const isFrame = (s: string) => /^(begin|commit|savepoint|release|rollback)/i.test(s);
/** The rate limiter's lease (taken once per batch of requests under load, not per request): left out. */
const isLease = (s: string) => s.includes('"rate_buckets"') || s.startsWith('set local synchronous_commit');

/** How far a varying number moves on each replay: numbers that must be new (a statement line's seq) are. */
let bumped = 0;

/**
 * A fresh value of the same shape: digits for digits, letters for letters, the rest kept; a number
 * that varies, a number not used before (a funding statement line's `seq` is unique per merchant).
 */
function like(value: unknown): unknown {
  if (typeof value === 'number' && Number.isInteger(value)) return value + 1_000_000 + ++bumped;
  if (typeof value !== 'string') return value;
  const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
  const noise = randomBytes(value.length);
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const ch = value[i] as string;
    const b = noise[i] as number;
    if (ch >= '0' && ch <= '9') out += String(b % 10);
    else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) out += letters[b % 52];
    else out += ch;
  }
  return out;
}

/**
 * One card's transaction: recorded twice, compared parameter by parameter. `outside`: a statement
 * sent outside a transaction (an 0100's read of its stored answer and card, on PostgreSQL) is kept too.
 */
export async function recordTemplate(database: Database, send: () => Promise<void>, outside = false): Promise<Statement[]> {
  const record = async () => {
    const sent: Array<{ sql: string; parameters: unknown[] }> = [];
    database.onStatement = (sql, parameters) => sent.push({ sql, parameters: [...parameters] });
    try {
      await send();
    } finally {
      database.onStatement = undefined;
    }
    // Without the lease, and without the frame of a transaction that held only the lease.
    const kept: typeof sent = [];
    let frame: typeof sent = [];
    for (const s of sent.filter((x) => !isLease(x.sql))) {
      if (/^begin/i.test(s.sql)) frame = [s];
      else if (/^commit/i.test(s.sql)) {
        if (frame.some((x) => !isFrame(x.sql))) kept.push(...frame, s);
        frame = [];
      } else if (frame.length > 0) frame.push(s);
      else if (outside) kept.push(s);
    }
    return kept;
  };
  const a = await record();
  const b = await record();
  if (a.length !== b.length || a.some((s, i) => s.sql !== b[i]?.sql)) {
    const show = (x: typeof a) => x.map((s) => s.sql.replace(/\s+/g, ' ').slice(0, 80)).join('\n  ');
    throw new Error(`the two requests sent different statements:\n  ${show(a)}\nand\n  ${show(b)}`);
  }
  return a.map((s, i) => ({ ...s, vary: s.parameters.map((p, j) => p !== b[i]?.parameters[j]) }));
}

const fresh = (s: Statement) => s.parameters.map((p, j) => (s.vary[j] ? like(p) : p));

/**
 * The transactions replayed on PostgreSQL: one at a time (`us1`, a transaction's latency), then from
 * `clients` clients at once for 5 s (`perSecond50`, what the server does; `backendCpuMs`, the CPU
 * time its backends spent per transaction, from /proc). A parameterless BEGIN goes with the
 * statement after it, as the service sends it (src/db/pg-prepared.ts: pg's pipeline mode).
 */
export async function replayPostgres(
  url: string,
  templates: Statement[][],
  rounds: number,
  clients = 50,
): Promise<{ us1: number; perSecond50: number; backendCpuMs: number }> {
  const names = new Map<string, string>();
  const nameOf = (text: string) => {
    let n = names.get(text);
    if (!n) {
      n = `w${randomBytes(6).toString('hex')}`;
      names.set(text, n);
    }
    return n;
  };
  const run = async (c: pg.Client, t: Statement[]) => {
    let begun: Promise<unknown> | null = null;
    for (const s of t) {
      if (/^begin$/i.test(s.sql)) {
        begun = c.query(s.sql);
        continue;
      }
      if (s.parameters.length === 0) await c.query(s.sql);
      else await c.query({ name: nameOf(s.sql), text: s.sql, values: fresh(s) });
      if (begun) await begun;
      begun = null;
    }
  };
  const one = new pg.Client({ connectionString: url, pipeline: true } as pg.ClientConfig);
  await one.connect();
  let us1 = 0;
  try {
    for (let i = 0; i < 50; i++) await run(one, templates[i % templates.length] as Statement[]);
    const t0 = performance.now();
    for (let i = 0; i < rounds; i++) await run(one, templates[i % templates.length] as Statement[]);
    us1 = ((performance.now() - t0) / rounds) * 1000;
  } finally {
    await one.end();
  }
  const applicationName = `bench-replay-${randomBytes(4).toString('hex')}`;
  let transactions = 0;
  let backendMs = 0;
  const perSecond50 = await fromFiftyClients(
    url,
    (c, i) => {
      transactions++;
      return run(c, templates[i % templates.length] as Statement[]);
    },
    clients,
    { pipeline: true, application_name: applicationName },
    async () => {
      // Read while the clients are connected: their backends end with them.
      const spent = await cpuOver(backendsOf(url, applicationName));
      return async () => {
        backendMs = await spent();
      };
    },
  );
  return { us1, perSecond50, backendCpuMs: backendMs / Math.max(1, transactions) };
}

/** How many times a second 50 clients (or `n`) at once do `work` (the i-th time of each client given), over 5 s. */
export async function fromFiftyClients(
  url: string,
  work: (c: pg.Client, i: number) => Promise<unknown>,
  n = 50,
  config: Record<string, unknown> = {},
  /** Started once the clients are connected; what it answers is called before they end. */
  around?: () => Promise<() => Promise<void>>,
): Promise<number> {
  const clients = await Promise.all(
    Array.from({ length: n }, async () => {
      const c = new pg.Client({ connectionString: url, ...config } as pg.ClientConfig);
      await c.connect();
      return c;
    }),
  );
  try {
    let done = 0;
    const stop = await around?.();
    const until = performance.now() + 5000;
    await Promise.all(
      clients.map(async (c, k) => {
        for (let i = k; performance.now() < until; i += clients.length) {
          await work(c, i);
          done++;
        }
      }),
    );
    await stop?.();
    return Math.round(done / 5);
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
}

export function replaySqlite(file: string, templates: Statement[][], rounds: number): { us1: number; perSecond: number } {
  const raw = new SQLite(file);
  raw.pragma('busy_timeout = 5000');
  raw.pragma('synchronous = FULL');
  try {
    const prepared = templates.map((t) => t.filter((s) => !isFrame(s.sql)).map((s) => ({ s, statement: raw.prepare(s.sql) })));
    // Each group's values are drawn before it is timed: only the database's work is measured.
    const group = (from: number): number => {
      const work = [];
      for (let i = from; i < from + GROUP; i++) {
        work.push((prepared[i % prepared.length] ?? []).map(({ s, statement }) => ({ statement, values: fresh(s) })));
      }
      const t0 = performance.now();
      raw.exec('begin immediate');
      for (const t of work) {
        raw.exec('savepoint one');
        for (const { statement, values } of t) {
          if (statement.reader) statement.all(...values);
          else statement.run(...values);
        }
        raw.exec('release one');
      }
      raw.exec('commit');
      return performance.now() - t0;
    };
    group(0);
    const groups = Math.max(1, Math.round(rounds / GROUP));
    let spent = 0;
    for (let g = 0; g < groups; g++) spent += group(g * GROUP);
    const us1 = (spent / (groups * GROUP)) * 1000;
    return { us1, perSecond: Math.round(1e6 / us1) };
  } finally {
    raw.close();
  }
}
