// npm test (scripts/test.mjs) on a machine without PostgreSQL: the SQLite pass runs and one line
// says the PostgreSQL pass was skipped; CARDPROGRAM_TEST_REQUIRE_POSTGRES=1 turns that into a failure.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { dialectSkip, testDialects } from './helpers/db.js';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

const dir = mkdtempSync(join(tmpdir(), 'cardprogram-runner-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function runSuite(extra: Record<string, string>) {
  const out = join(dir, `out-${Math.random().toString(36).slice(2)}.json`);
  const env: NodeJS.ProcessEnv = { ...process.env, CARDPROGRAM_TEST_LOG_AUDIT: 'off', CARDPROGRAM_FIXTURE_OUT: out };
  // The runner under test decides for itself; this suite's own choice must not leak into it.
  delete env.DATABASE_URL;
  delete env.CARDPROGRAM_TEST_DIALECTS;
  delete env.CARDPROGRAM_TEST_REQUIRE_POSTGRES;
  // Set for files node --test runs; the nested runner would report to this one instead of running.
  delete env.NODE_TEST_CONTEXT;
  Object.assign(env, extra);
  const res = spawnSync(process.execPath, ['scripts/test.mjs', 'test/fixtures/dialects.fixture.ts'], {
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
  let dialects: unknown = null;
  try {
    dialects = JSON.parse(readFileSync(out, 'utf8'));
  } catch {
    // the fixture did not run
  }
  return { status: res.status, stdout: res.stdout, dialects };
}

describe('npm test chooses its databases', () => {
  test('PostgreSQL not answering: the SQLite pass runs, one line says why PostgreSQL was skipped', async () => {
    const url = `postgres://postgres@127.0.0.1:${await closedPort()}/test`;
    const res = runSuite({ TEST_POSTGRES_URL: url });
    assert.equal(res.status, 0, res.stdout);
    assert.deepEqual(res.dialects, ['sqlite']);
    const lines = res.stdout.split('\n').filter((l) => l.includes('PostgreSQL pass skipped'));
    // Once at the top, and again as the run's last line (issue 30.12).
    assert.equal(lines.length, 2, res.stdout);
    assert.equal(res.stdout.trimEnd().split('\n').at(-1), lines[0]);
    assert.match(lines[0] ?? '', new RegExp(`nothing answers at ${url.replace(/[/.]/g, '\\$&')}`));
    assert.match(lines[0] ?? '', /CARDPROGRAM_TEST_REQUIRE_POSTGRES=1/);
    // TAP (Node 20) writes "… # SKIP reason", the spec reporter (Node 23 and later) "… (0.1ms) # reason".
    assert.match(res.stdout, /a PostgreSQL-only test[^\n]*# (SKIP )?PostgreSQL did not answer when the run started/);
  });

  test('CARDPROGRAM_TEST_REQUIRE_POSTGRES=1: a missing PostgreSQL fails the run before any test', async () => {
    const url = `postgres://postgres@127.0.0.1:${await closedPort()}/test`;
    const res = runSuite({ TEST_POSTGRES_URL: url, CARDPROGRAM_TEST_REQUIRE_POSTGRES: '1' });
    assert.notEqual(res.status, 0);
    assert.equal(res.dialects, null, 'no test ran');
    assert.match(res.stdout, /PostgreSQL is required \(CARDPROGRAM_TEST_REQUIRE_POSTGRES=1\) but nothing answers at/);
  });

  test('DATABASE_URL names the one database and nothing is probed', async () => {
    const url = `postgres://postgres@127.0.0.1:${await closedPort()}/test`;
    const res = runSuite({ TEST_POSTGRES_URL: url, CARDPROGRAM_TEST_REQUIRE_POSTGRES: '1', DATABASE_URL: 'file:' });
    assert.equal(res.status, 0, res.stdout);
    assert.deepEqual(res.dialects, ['sqlite']);
    assert.doesNotMatch(res.stdout, /PostgreSQL pass skipped|PostgreSQL is required|nothing answers/);
    assert.equal(res.stdout.trimEnd().split('\n').at(-1), 'databases tested: SQLite only (DATABASE_URL names one)');
    assert.match(res.stdout, /a PostgreSQL-only test[^\n]*# (SKIP )?this pass tests SQLite only \(DATABASE_URL\)/);
  });

  const pg = testDialects().find((d) => d.name === 'postgres');
  test('PostgreSQL answering: both passes run', { skip: dialectSkip('postgres') }, () => {
    const res = runSuite({ TEST_POSTGRES_URL: pg?.url ?? '', CARDPROGRAM_TEST_REQUIRE_POSTGRES: '1' });
    assert.equal(res.status, 0, res.stdout);
    assert.deepEqual(res.dialects, ['sqlite', 'postgres']);
    assert.doesNotMatch(res.stdout, /PostgreSQL pass skipped/);
    assert.equal(res.stdout.trimEnd().split('\n').at(-1), 'databases tested: SQLite and PostgreSQL');
  });
});

describe('npm test and the Python SDK’s tests', () => {
  function runPython(extra: Record<string, string>) {
    const env: NodeJS.ProcessEnv = { ...process.env, CARDPROGRAM_TEST_LOG_AUDIT: 'off', DATABASE_URL: 'file:', ...extra };
    delete env.NODE_TEST_CONTEXT;
    delete env.CARDPROGRAM_TEST_REQUIRE_PYTHON;
    Object.assign(env, extra);
    return spawnSync(process.execPath, ['scripts/test.mjs', 'sdk/python'], { env, encoding: 'utf8', timeout: 60_000 });
  }

  test('without python3 the run’s closing line says they were skipped, and why', () => {
    const res = runPython({ PYTHON: '/nonexistent/python3' });
    assert.equal(res.status, 0, res.stdout);
    assert.equal(
      res.stdout.trimEnd().split('\n').at(-1),
      'databases tested: SQLite only (DATABASE_URL names one); Python SDK tests skipped: /nonexistent/python3 not found (PYTHON names another interpreter)',
    );
  });

  test('CARDPROGRAM_TEST_REQUIRE_PYTHON=1: a missing python3 fails the run before any test', () => {
    const res = runPython({ PYTHON: '/nonexistent/python3', CARDPROGRAM_TEST_REQUIRE_PYTHON: '1' });
    assert.notEqual(res.status, 0);
    assert.match(
      res.stdout,
      /The Python SDK's tests are required \(CARDPROGRAM_TEST_REQUIRE_PYTHON=1\) but \/nonexistent\/python3 not found/,
    );
  });
});
