// Runs the whole suite with Node's test runner. Test files are listed here rather than by a glob,
// because `node --test` reads its arguments differently on Node 20 and on Node 22+.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chooseDialects } from './postgres-probe.mjs';

function find(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? find(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  );
}

const only = process.argv.slice(2);
const files = only.length ? only : find('test').sort();
// A per-test timeout: a test that hangs fails instead of holding CI until its own limit.
const args = ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=420000', ...files];
// Secrets hygiene over the whole suite: every service the tests run logs at trace level into one
// folder, which is scanned afterwards for card numbers, CVVs, secrets and page tokens
// (test/helpers/log-audit.ts). CARDPROGRAM_TEST_LOG_AUDIT=off skips it.
const audit = process.env.CARDPROGRAM_TEST_LOG_AUDIT !== 'off';
// SQLite always; PostgreSQL when it answers (scripts/postgres-probe.mjs). The choice reaches
// testDialects() in test/helpers/db.ts through CARDPROGRAM_TEST_DIALECTS.
const choice = await chooseDialects(process.env);
if (choice.line) console.log(choice.line);
if (choice.fail) process.exit(1);
const logDir = audit ? mkdtempSync(join(tmpdir(), 'cardprogram-test-logs-')) : '';
const env = { ...process.env };
if (audit) env.CARDPROGRAM_TEST_LOG_DIR = logDir;
if (choice.dialects) env.CARDPROGRAM_TEST_DIALECTS = choice.dialects;
const res = spawnSync(process.execPath, args, { stdio: 'inherit', env });
let status = res.status ?? 1;
if (audit) {
  const scan = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/audit-logs.ts', logDir], { stdio: 'inherit' });
  if (scan.status !== 0) status ||= 1;
  // A failed run keeps the services' logs for whoever looks into it.
  if (status !== 0) {
    console.log(`the logs are kept in ${logDir}`);
  } else {
    rmSync(logDir, { recursive: true, force: true });
  }
}
// The run's last line says which databases it tested, so a skipped PostgreSQL pass is not missed
// behind a bare "# skipped N" (each skipped test also gives its own reason).
console.log(databasesLine(choice, process.env));
process.exit(status);

function databasesLine({ dialects, line }, env) {
  if (env.DATABASE_URL)
    return `databases tested: ${env.DATABASE_URL.startsWith('postgres') ? 'PostgreSQL' : 'SQLite'} only (DATABASE_URL names one)`;
  if (dialects === 'sqlite') return line;
  return 'databases tested: SQLite and PostgreSQL';
}
