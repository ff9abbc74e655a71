import { createHash } from 'node:crypto';
import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import { connectionLost } from './faults.js';
import { PREPARED_TEXTS } from './prepared.js';

/**
 * Prepared statements on PostgreSQL: the statements the code marks (src/db/prepared.ts: lookups and
 * writes by key, and the list's one statement) are sent under a name, a hash of their text, so that
 * each connection parses them once and then only binds and executes them (measured: the list 781 →
 * 1,043 req/s, a top-up 330 → 410). Every other statement is sent unnamed: planned for its values.
 * Each connection keeps at most PREPARED_PER_CONNECTION, the least recently used deallocated to
 * make room, so the hot ones stay. CARDPROGRAM_PG_PREPARED=off sends every statement unnamed (a
 * pooler in transaction mode that does not keep prepared statements: PgBouncer before 1.21, or
 * without max_prepared_statements).
 */
const PREPARED_PER_CONNECTION = 200;
/** Texts found to be stale under a changed table (0A000): sent unnamed from then on. */
const unprepared = new Set<string>();
const names = new Map<string, string>();

function statementName(text: string): string | undefined {
  if (!PREPARED_TEXTS.has(text) || unprepared.has(text)) return undefined;
  let name = names.get(text);
  if (name === undefined) {
    if (names.size >= 10_000) names.clear();
    name = `cp_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
    names.set(text, name);
  }
  return name;
}

/** BEGINs sent with the first statement of their transaction that failed (read by failedBegin). */
const failedBegins = new WeakSet<Error>();

/**
 * The error is a BEGIN's, sent with the first statement of its transaction (below): nothing of the
 * transaction ran, though its function had begun (src/db/index.ts's withTx begins it again, as it
 * does a BEGIN found dead on its own).
 */
export function failedBegin(err: unknown): boolean {
  return err instanceof Error && failedBegins.has(err);
}

/** What a BEGIN sent with the next statement answers at once (Kysely reads none of it). */
const BEGUN = { command: 'BEGIN', rowCount: null, rows: [] };

/** Each connection's prepared statements, least recently used first. */
const preparedOn = new WeakMap<pg.PoolClient, Map<string, true>>();

/** A prepared statement whose result's columns changed since it was prepared (0A000, "cached plan must not change result type"). */
export function replanned(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === '0A000' && typeof e.message === 'string' && e.message.includes('cached plan');
}

/**
 * The pool as Kysely sees it. A client whose statement met a dead connection is released with that
 * error, so that the pool discards it: Kysely releases without one, and node-postgres keeps a client
 * whose session the server ended with an error reply (57P01) until its socket closes, handing it
 * out again meanwhile.
 */
export function discardingDeadClients(pool: pg.Pool, prepared: boolean): PostgresPool {
  return {
    connect: async () => {
      const client = await pool.connect();
      let kept = preparedOn.get(client);
      if (!kept) {
        kept = new Map();
        preparedOn.set(client, kept);
      }
      const held = kept;
      let dead: Error | undefined;
      const send = (config: pg.QueryConfig) =>
        client.query(config).catch((err: unknown) => {
          if (connectionLost(err)) dead = err as Error;
          throw err;
        });
      /** A new statement's name on this connection, room made for it; undefined: send it unnamed. */
      const makeRoom = async (name: string): Promise<string | undefined> => {
        if (held.size >= PREPARED_PER_CONNECTION) {
          // Not in a failed transaction: nothing but its ROLLBACK may be sent there.
          if (client.getTransactionStatus() === 'E') return undefined;
          const [oldest] = held.keys();
          if (oldest === undefined) return undefined;
          await send({ text: `deallocate ${oldest}` });
          held.delete(oldest);
          delete (client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection.parsedStatements[oldest];
        }
        held.set(name, true);
        return name;
      };
      const statement = async (text: string, values: unknown[]) => {
        let name = prepared && values.length > 0 ? statementName(text) : undefined;
        if (name !== undefined) {
          // Used again: the most recently used now. New: room is made for it.
          if (held.delete(name)) held.set(name, true);
          else name = await makeRoom(name);
        }
        if (name === undefined) return send({ text, values });
        try {
          return await send({ name, text, values });
        } catch (err) {
          if (!replanned(err)) throw err;
          // A table whose columns changed under a prepared `select *` (a migration run beside a
          // serving process): the text is sent unprepared from now on. Outside a transaction it is
          // sent again at once; inside one, the transaction is run again (withTx).
          unprepared.add(text);
          held.delete(name);
          await send({ text: `deallocate ${name}` }).catch(() => undefined);
          delete (client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection.parsedStatements[name];
          if (client.getTransactionStatus() !== 'I') throw err;
          return send({ text, values });
        }
      };
      // A transaction's BEGIN goes with its first statement, in one write and one round trip, not
      // two (issue 42: each round trip is a write on the socket and a wake-up of the backend, 0.07 ms
      // of the service's CPU under load). The client is in pg's pipeline mode, which sends a query
      // without waiting for the answer to the one before; the socket is corked from the BEGIN until
      // the next query is written. BEGIN's own answer is awaited after that query's, and its error,
      // if any, thrown then (the caller rolls back). Each query has its own Sync, so a BEGIN that
      // failed on a connection still alive would leave that statement to run on its own; what fails
      // a BEGIN in practice (the connection dead, the server gone) fails the statement too. BEGIN's
      // read timeout (statement_timeout + 1 s) runs from when it is queued: a transaction that spent
      // longer before its first statement would lose its connection (none does: each is a few short
      // statements, nothing awaited outside the database inside one).
      let begun: Promise<unknown> | null = null;
      const socket = (client as unknown as { connection: { stream: { cork(): void; uncork(): void } } }).connection.stream;
      const query = async (text: string, values: unknown[]) => {
        if (text === 'begin' && values.length === 0 && begun === null) {
          socket.cork();
          begun = send({ text });
          begun.catch(() => undefined);
          return BEGUN;
        }
        const before = begun;
        if (before === null) return statement(text, values);
        begun = null;
        // The statement is written (or its room made) synchronously up to its first await: then uncorked.
        const result = statement(text, values).then(
          (value) => ({ value }),
          (err: unknown) => ({ err }),
        );
        socket.uncork();
        const outcome = await result;
        try {
          await before;
        } catch (err) {
          // The BEGIN failed (its connection found dead): what withTx begins again, as a BEGIN of its own.
          if (err instanceof Error) failedBegins.add(err);
          throw err;
        }
        if ('err' in outcome) throw outcome.err;
        return outcome.value;
      };
      const release = () => {
        // A BEGIN not followed by anything (never done by Kysely, which ends with COMMIT or ROLLBACK):
        // the client is discarded, not handed out again inside a transaction it did not begin.
        if (begun !== null) {
          begun = null;
          socket.uncork();
          client.release(dead ?? new Error('a BEGIN not followed by its transaction'));
          return;
        }
        client.release(dead);
      };
      // Kysely's client type also allows a cursor query, which this project does not use.
      return { query, release } as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}
