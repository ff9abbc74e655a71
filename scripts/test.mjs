// Runs the whole suite with Node's test runner, and the Python SDK's tests beside it when python3 is
// there (scripts/test-python.mjs). Test files are listed here rather than by a glob, because
// `node --test` reads its arguments differently on Node 20 and on Node 22+. `node scripts/test.mjs
// sdk/python` runs the Python tests alone.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chooseDialects, DEFAULT_TEST_POSTGRES_URL } from './postgres-probe.mjs';
import { findPython, pythonLine, runPythonSuite } from './test-python.mjs';

function find(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? find(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  );
}

const only = process.argv.slice(2);
// The Python SDK's tests (sdk/python/tests) run with the whole suite, or when named (`sdk/python`).
const pythonSelected = only.length === 0 || only.some((a) => a.replace(/\\/g, '/').startsWith('sdk/python'));
const nodeArgs = only.filter((a) => !a.replace(/\\/g, '/').startsWith('sdk/python'));
const files = only.length ? nodeArgs : find('test').sort();
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
// The Python suite runs beside the Node one, once per database, its output kept until the Node
// suite has printed its own (scripts/test-python.mjs).
let python = { selected: false };
if (pythonSelected) {
  const interpreter = findPython(process.env);
  if (interpreter.path === null && process.env.CARDPROGRAM_TEST_REQUIRE_PYTHON === '1') {
    console.log(`The Python SDK's tests are required (CARDPROGRAM_TEST_REQUIRE_PYTHON=1) but ${interpreter.reason}.`);
    process.exit(1);
  }
  if (interpreter.path === null) {
    python = { selected: true, missing: interpreter.reason, runs: [] };
  } else {
    // The Python tests start the built service; built once here, not by each run at once.
    const built = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { stdio: 'inherit' });
    if (built.status !== 0) process.exit(built.status ?? 1);
    const urls = env.DATABASE_URL
      ? [env.DATABASE_URL]
      : choice.dialects === 'sqlite'
        ? ['file:']
        : ['file:', process.env.TEST_POSTGRES_URL || DEFAULT_TEST_POSTGRES_URL];
    // One database after the other: beside the Node suite, one more service at a time is load enough.
    const runs = [];
    let previous = Promise.resolve();
    for (const url of urls) {
      previous = previous.then(() => runPythonSuite(interpreter.path, url, env));
      runs.push(previous);
    }
    python = { selected: true, runs };
  }
}
let status = 0;
if (files.length > 0) {
  const res = await new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit', env });
    child.on('exit', (code) => resolve(code ?? 1));
  });
  status = res;
}
if (python.selected) {
  python.results = await Promise.all(python.runs);
  for (const r of python.results) {
    console.log(r.ok ? r.summary : `${r.summary}\n${r.output}`);
    if (!r.ok) status ||= 1;
  }
}
// Nothing to scan when nothing ran (only the Python tests were asked for, and there is no python3).
if (audit && (files.length > 0 || python.runs?.length > 0)) {
  const scan = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/audit-logs.ts', logDir], { stdio: 'inherit' });
  if (scan.status !== 0) status ||= 1;
  // A failed run keeps the services' logs for whoever looks into it.
  if (status !== 0) {
    console.log(`the logs are kept in ${logDir}`);
  } else {
    rmSync(logDir, { recursive: true, force: true });
  }
} else if (audit) {
  rmSync(logDir, { recursive: true, force: true });
}
// The run's last line says which databases it tested, so a skipped PostgreSQL pass is not missed
// behind a bare "# skipped N" (each skipped test also gives its own reason).
console.log(`${databasesLine(choice, process.env)}${python.selected ? `; ${pythonLine(python)}` : ''}`);
process.exit(status);

function databasesLine({ dialects, line }, env) {
  if (env.DATABASE_URL)
    return `databases tested: ${env.DATABASE_URL.startsWith('postgres') ? 'PostgreSQL' : 'SQLite'} only (DATABASE_URL names one)`;
  if (dialects === 'sqlite') return line;
  return 'databases tested: SQLite and PostgreSQL';
}
