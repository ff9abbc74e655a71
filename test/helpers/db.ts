import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { type Database, type Dialect, openDatabase } from '../../src/db/index.js';

export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

export interface TestDialect {
  name: Dialect;
  url: string;
}

/**
 * Which databases the suite runs on. By default both (every storage test runs on SQLite and on
 * PostgreSQL); DATABASE_URL narrows it to that one database, as .ci/run does for its two passes.
 * CARDPROGRAM_TEST_DIALECTS=sqlite is scripts/test.mjs saying PostgreSQL did not answer.
 */
export function testDialects(): TestDialect[] {
  const url = process.env.DATABASE_URL;
  if (url?.startsWith('postgres')) return [{ name: 'postgres', url }];
  if (url?.startsWith('file:')) return [{ name: 'sqlite', url }];
  if (process.env.CARDPROGRAM_TEST_DIALECTS === 'sqlite') return [{ name: 'sqlite', url: 'file:' }];
  return [
    { name: 'sqlite', url: 'file:' },
    { name: 'postgres', url: process.env.TEST_POSTGRES_URL ?? DEFAULT_PG_URL },
  ];
}

/**
 * Why a test of one database is skipped in this run, or false when that database is tested: the
 * `skip` option of a test that needs it. The reason is the true one: which of DATABASE_URL,
 * CARDPROGRAM_TEST_DIALECTS (PostgreSQL did not answer, scripts/test.mjs) left it out.
 */
export function dialectSkip(name: Dialect): string | false {
  if (testDialects().some((d) => d.name === name)) return false;
  const url = process.env.DATABASE_URL;
  if (url) return `this pass tests ${url.startsWith('postgres') ? 'PostgreSQL' : 'SQLite'} only (DATABASE_URL)`;
  return 'PostgreSQL did not answer when the run started (the line at the top and the bottom of the run says where)';
}

export interface IsolatedDatabase {
  database: Database;
  /** A DATABASE_URL (plus schema) another process can use to reach the same data. */
  url: string;
  pgSchema?: string;
  dataDir: string;
  cleanup(): Promise<void>;
}

/** A fresh, empty database: a new SQLite file in a temp dir, or a new PostgreSQL schema. */
export async function isolatedDatabase(dialect: TestDialect): Promise<IsolatedDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cardprogram-test-'));
  if (dialect.name === 'sqlite') {
    const url = `file:${join(dataDir, 'test.sqlite')}`;
    const database = openDatabase(url);
    return {
      database,
      url,
      dataDir,
      cleanup: async () => {
        await database.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: dialect.url });
  try {
    await admin.connect();
  } catch (err) {
    throw new Error(
      `PostgreSQL is not reachable at ${dialect.url} (${(err as Error).message}). Start it, or run the SQLite pass only with DATABASE_URL=file:`,
    );
  }
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const database = openDatabase(dialect.url, { pgSchema: schema });
  return {
    database,
    url: dialect.url,
    pgSchema: schema,
    dataDir,
    cleanup: async () => {
      await database.close();
      const c = new pg.Client({ connectionString: dialect.url });
      await c.connect();
      await c.query(`drop schema ${schema} cascade`);
      await c.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface TableInfo {
  name: string;
  columns: string[];
}

/**
 * The tables of this test's own database (its PostgreSQL schema), with their columns, the migration
 * bookkeeping left out, and the partitions of a partitioned table (its rows are read through it:
 * `trades` on PostgreSQL). Not Kysely's introspector: on PostgreSQL it reads every schema, and fails
 * when another test drops its schema at that moment (tests run side by side).
 */
export async function ownTables(db: IsolatedDatabase): Promise<TableInfo[]> {
  const k = db.database.db as unknown as Kysely<any>;
  const rows =
    db.database.dialect === 'postgres'
      ? (
          await sql<{ table_name: string; column_name: string }>`
            select table_name, column_name from information_schema.columns
            where table_schema = current_schema()
              and table_name not in (select relname from pg_class where relispartition and relnamespace = current_schema()::regnamespace)
            order by table_name, ordinal_position`.execute(k)
        ).rows
      : (
          await sql<{ table_name: string; column_name: string }>`
            select m.name as table_name, p.name as column_name from sqlite_master m join pragma_table_info(m.name) p
            where m.type = 'table' and m.name not like 'sqlite_%' order by m.name, p.cid`.execute(k)
        ).rows;
  const tables = new Map<string, string[]>();
  for (const r of rows) {
    if (r.table_name.startsWith('cardprogram_migrations')) continue;
    tables.set(r.table_name, [...(tables.get(r.table_name) ?? []), r.column_name]);
  }
  return [...tables].map(([name, columns]) => ({ name, columns }));
}
