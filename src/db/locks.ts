import { type Kysely, PostgresAdapter, type SelectQueryBuilder } from 'kysely';

/**
 * Row locks for read-then-act rules (docs/architecture.md, Concurrency). On PostgreSQL a rule that
 * depends on a row's state reads that row `FOR UPDATE`, so a concurrent transaction that would
 * change it waits (and is seen once it commits). SQLite has no row locks and needs none: a write
 * transaction begins IMMEDIATE, holding the database's one write lock, and the group committer runs
 * transactions one after the other. The same verb code runs on both.
 */
export function hasRowLocks(db: Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** The query with `FOR UPDATE` on PostgreSQL; unchanged on SQLite. */
export function forUpdate<DB, TB extends keyof DB, O>(db: Kysely<DB>, query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O> {
  return hasRowLocks(db as Kysely<unknown>) ? query.forUpdate() : query;
}
