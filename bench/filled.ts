/**
 * The database the single-operation benchmarks run against (bench:profile, bench:statements): an
 * isolated SQLite file or PostgreSQL schema, migrated and filled by the built CLI with the demo's
 * 10,000 trades over 30 days (BENCH_TRADES: another count), and the demo merchant's credentials.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childDatabaseUrl, ROOT } from '../test/helpers/cli.js';
import { type IsolatedDatabase, isolatedDatabase } from '../test/helpers/db.js';

/** A command-line option's value: `--name value`. */
export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

export interface Filled {
  db: IsolatedDatabase;
  dataDir: string;
  /** The service's environment for this database (worker off, rate limit out of the way). */
  env: NodeJS.ProcessEnv;
  cards: string[];
  demo: { appId: string; secret: string };
  cleanup: () => Promise<void>;
}

export async function filledDatabase(
  dbName: string,
  label: string,
  logLevel = 'warn',
  /** The checkout whose built service fills it (another commit's, built: bench:profile --root). */
  root = ROOT,
): Promise<Filled> {
  const db = await isolatedDatabase(
    dbName === 'postgres'
      ? { name: 'postgres', url: process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test' }
      : { name: 'sqlite', url: 'file:' },
  );
  const dataDir = join(tmpdir(), `cardprogram-${label}-${randomBytes(4).toString('hex')}`);
  mkdirSync(dataDir, { recursive: true });
  const cleanup = async () => {
    await db.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  };
  const env = {
    ...process.env,
    DATABASE_URL: childDatabaseUrl(db),
    CARDPROGRAM_DATA_DIR: dataDir,
    CARDPROGRAM_WORKER: 'off',
    CARDPROGRAM_RATE_LIMIT: '1000000',
    CARDPROGRAM_KYC_AUTO_DECISION_MS: '0',
    LOG_LEVEL: logLevel,
  };
  try {
    if (root === ROOT) execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    const bin = join(root, 'bin', 'cardprogram.js');
    execFileSync(process.execPath, [bin, 'migrate'], { cwd: root, env, stdio: 'ignore' });
    const filled = JSON.parse(
      execFileSync(
        process.execPath,
        [bin, 'demo', '--trades', process.env.BENCH_TRADES ?? '10000', '--days', '30', '--seed', '1', '--json'],
        {
          cwd: root,
          env,
          maxBuffer: 1 << 28,
        },
      ).toString(),
    );
    const cards: string[] = filled.holders.flatMap((h: { cards: Array<{ cardId: string }> }) => h.cards.map((c) => c.cardId));
    const demo = JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8'));
    return { db, dataDir, env, cards, demo, cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
