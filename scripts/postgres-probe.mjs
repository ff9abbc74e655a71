// Whether PostgreSQL answers at the URL the test suite would use, asked once before the suite runs
// so that a machine with only Node.js and npm runs the SQLite pass instead of failing on every
// PostgreSQL test (scripts/test.mjs).
import pg from 'pg';

export const DEFAULT_TEST_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** Resolves to null when PostgreSQL answers a query at `url`, else to the reason it did not. */
export async function probePostgres(url, timeoutMs = 2000) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  // An unreachable server reports through 'error' as well as through the rejected connect.
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('select 1');
    return null;
  } catch (err) {
    return err instanceof Error ? err.message || err.name : String(err);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Which databases to test, and the one line to print about PostgreSQL:
 * DATABASE_URL names one database (as .ci/run does for each pass) and is not probed; otherwise
 * SQLite always, and PostgreSQL when it answers at TEST_POSTGRES_URL. When it does not, the pass is
 * skipped with a line that says so, or, with CARDPROGRAM_TEST_REQUIRE_POSTGRES=1, the run fails.
 */
export async function chooseDialects(env, probe = probePostgres) {
  if (env.DATABASE_URL) return { dialects: null, line: null, fail: false };
  const url = env.TEST_POSTGRES_URL || DEFAULT_TEST_POSTGRES_URL;
  const reason = await probe(url);
  if (reason === null) return { dialects: 'sqlite,postgres', line: null, fail: false };
  if (env.CARDPROGRAM_TEST_REQUIRE_POSTGRES === '1') {
    return {
      dialects: null,
      line: `PostgreSQL is required (CARDPROGRAM_TEST_REQUIRE_POSTGRES=1) but nothing answers at ${url} (${reason}). Start PostgreSQL or set TEST_POSTGRES_URL.`,
      fail: true,
    };
  }
  return {
    dialects: 'sqlite',
    line: `PostgreSQL pass skipped: nothing answers at ${url} (${reason}). Start PostgreSQL or set TEST_POSTGRES_URL to run it; CARDPROGRAM_TEST_REQUIRE_POSTGRES=1 makes this a failure.`,
    fail: false,
  };
}
