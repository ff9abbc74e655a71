import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely';
import type { DB } from './schema.js';

/**
 * The statements PostgreSQL prepares (src/db/index.ts names only these). A prepared statement's plan
 * may turn generic after five runs, PostgreSQL's choice: right for a lookup or a write by key, and
 * for the list's statement on the partitioned `trades` (pruned when it runs, not planned anew each
 * time: measured 1,801 vs 930 lists/s with plans forced custom); wrong for a search whose best plan
 * depends on its values, on a table that grew since (the KYC's requestNo-or-e-mail check ran at
 * half speed prepared: 686 vs 1,451 req/s). So a statement is prepared when its code says so: built
 * with precompiled(), or named by preparedText(); every other one is planned for its values.
 */
export const PREPARED_TEXTS = new Set<string>();

/** Marks a hand-written statement's text as one PostgreSQL prepares (a lookup by key, or planned for it). */
export function preparedText(text: string): string {
  PREPARED_TEXTS.add(text);
  return text;
}

/** What stands for a value at build time: text no value of this service holds. */
const SLOT = '\u0000slot:';

type Slots<V> = <K extends keyof V & string>(name: K) => V[K];

interface Compiled {
  query: CompiledQuery;
  /** Each parameter of the SQL: a named value to fill in, or a constant of the build. */
  parameters: Array<{ name: string } | { value: unknown }>;
}

/**
 * A hot query built and compiled with Kysely once per dialect, then executed with new values: the
 * build and compile (5–10 µs a query on this machine, measured: `bench:profile`, issue 19) are
 * paid once; the statement itself is prepared once too (SQLite's statement cache, PostgreSQL's
 * named statements, src/db/index.ts): for lookups and writes by key, whose generic plan is right. `build` marks each value that varies with `slot(name)`; the
 * query's shape must not depend on the values (no `in` list of varying length), and a value given
 * as a constant at build time stays that constant. Types: the builder's result type, as Kysely's.
 *
 *   const cardById = precompiled((db, slot: Slots<{ id: string }>) => db.selectFrom('cards').selectAll().where('id', '=', slot('id')));
 *   const { rows } = await cardById.execute(tx, { id });
 */
export function precompiled<V extends Record<string, unknown>, R>(build: (db: Kysely<DB>, slot: Slots<V>) => Compilable<R>) {
  // By the adapter's class: the same SQL for every database of one dialect.
  const byDialect = new Map<unknown, Compiled>();
  const compile = (db: Kysely<DB>): Compiled => {
    const dialect = db.getExecutor().adapter.constructor;
    let compiled = byDialect.get(dialect);
    if (!compiled) {
      const query = build(db, ((name: string) => `${SLOT}${name}`) as Slots<V>).compile() as CompiledQuery;
      compiled = {
        query,
        parameters: query.parameters.map((p) =>
          typeof p === 'string' && p.startsWith(SLOT) ? { name: p.slice(SLOT.length) } : { value: p },
        ),
      };
      byDialect.set(dialect, compiled);
      PREPARED_TEXTS.add(query.sql);
    }
    return compiled;
  };
  return {
    execute(db: Kysely<DB>, values: V): Promise<QueryResult<R>> {
      const { query, parameters } = compile(db);
      return db.executeQuery<R>({
        ...query,
        parameters: parameters.map((p) => ('name' in p ? values[p.name] : p.value)),
      } as CompiledQuery<R>);
    },
    /** The compiled SQL (tests, EXPLAIN). */
    sql: (db: Kysely<DB>) => compile(db).query.sql,
  };
}

export type { Slots };
