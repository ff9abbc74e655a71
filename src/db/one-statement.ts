import { type Compilable, CompiledQuery, type Kysely, type RawBuilder, sql } from 'kysely';
import { hasRowLocks } from './locks.js';
import { preparedText } from './prepared.js';
import type { DB } from './schema.js';

/**
 * Issue 31, decision 2: a write on PostgreSQL in three round trips, one statement that locks and
 * reads what the decision needs, the decision in TypeScript, one statement that writes every effect
 * (then the commit). A Part is one of those statements' queries, built with Kysely for both
 * databases. On PostgreSQL the parts are sent as one statement, each a `with` query of its own
 * (a data-modifying `with` for a write), their rows returned as JSON; on SQLite, where a statement
 * is a call in the process and `with` cannot write, they run one after the other, in their order.
 */
export interface Part {
  /** Its name: the key of its rows in the answer, and its `with` query's name on PostgreSQL. */
  name: string;
  /**
   * The query, or (for a part that reads what an earlier part of the same statement wrote) a function
   * of that earlier part's rows as a source: on PostgreSQL its `with` query's name (the table is not
   * seen changed by a statement's own `with` queries), on SQLite `fallback`, read from the table.
   */
  query: Compilable<unknown> | ((source: RawBuilder<unknown>) => Compilable<unknown>);
  /** The earlier part read, and (SQLite) what stands for it: a subquery of the table it wrote. */
  after?: { part: string; fallback: RawBuilder<unknown> };
  /** Whether its rows are wanted (a write's `returning`); a part without rows is still run. */
  rows?: boolean;
}

export type PartRows = Record<string, Array<Record<string, unknown>>>;

/** Every text sent merged: prepared once per connection (a few shapes: with or without an event, a debt). */
function renumbered(query: CompiledQuery, offset: number): string {
  if (offset === 0) return query.sql;
  // The same few texts at the same few offsets, request after request: renumbered once (issue 42:
  // the replace was 2.6 % of the service's time under the link's load on PostgreSQL).
  const key = `${offset}:${query.sql}`;
  let text = RENUMBERED.get(key);
  if (text === undefined) {
    text = query.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
    if (RENUMBERED.size >= 2000) RENUMBERED.clear();
    RENUMBERED.set(key, text);
  }
  return text;
}

const RENUMBERED = new Map<string, string>();

/** Runs the parts as one statement (PostgreSQL) or one after the other (SQLite); answers each part's rows. */
export async function runParts(tx: Kysely<DB>, parts: readonly Part[]): Promise<PartRows> {
  const out: PartRows = {};
  if (!hasRowLocks(tx as Kysely<unknown>)) {
    for (const p of parts) {
      const q = typeof p.query === 'function' ? p.query(p.after?.fallback ?? sql``) : p.query;
      const res = await tx.executeQuery(q.compile());
      out[p.name] = res.rows as Array<Record<string, unknown>>;
    }
    return out;
  }
  const withs: string[] = [];
  const parameters: unknown[] = [];
  for (const p of parts) {
    const q = typeof p.query === 'function' ? p.query(sql.table(p.after?.part ?? '')) : p.query;
    const compiled = q.compile();
    withs.push(`"${p.name}" as (${renumbered(compiled, parameters.length)})`);
    parameters.push(...compiled.parameters);
  }
  const wanted = parts.filter((p) => p.rows);
  const select = wanted.length
    ? wanted.map((p) => `(select coalesce(json_agg("${p.name}"), '[]') from "${p.name}") as "${p.name}"`).join(', ')
    : '1 as done';
  const text = preparedText(`with ${withs.join(', ')} select ${select}`);
  const res = await tx.executeQuery<Record<string, Array<Record<string, unknown>>>>(CompiledQuery.raw(text, parameters));
  const row = res.rows[0] ?? {};
  for (const p of wanted) out[p.name] = row[p.name] ?? [];
  return out;
}
