// The Python SDK's tests (sdk/python/tests, `python3 -m unittest`) for scripts/test.mjs: each run
// starts the built service on its own database (a SQLite file, or a fresh PostgreSQL schema) and
// tests the SDK against it. They need python3 3.10 or later and nothing else; without it the run's
// closing line says they were skipped (CARDPROGRAM_TEST_REQUIRE_PYTHON=1 makes that a failure, as
// .ci/run sets it).
import { spawn, spawnSync } from 'node:child_process';

/** The interpreter: PYTHON, else python3; null with the reason when there is none of 3.10 or later. */
export function findPython(env) {
  const path = env.PYTHON || 'python3';
  const probe = spawnSync(
    path,
    ['-c', 'import sys; print("%d.%d" % sys.version_info[:2]); sys.exit(0 if sys.version_info >= (3, 10) else 3)'],
    {
      encoding: 'utf8',
    },
  );
  if (probe.error) return { path: null, reason: `${path} not found (PYTHON names another interpreter)` };
  if (probe.status !== 0) return { path: null, reason: `${path} is Python ${probe.stdout.trim() || '?'}, 3.10 or later is needed` };
  return { path, reason: null };
}

const dialectOf = (url) => (url.startsWith('postgres') ? 'PostgreSQL' : 'SQLite');

/** Runs the suite on one database; resolves to { ok, summary, output } (the output kept for a failure). */
export function runPythonSuite(python, url, env) {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(python, ['-m', 'unittest', 'discover', '-s', 'tests', '-t', '.'], {
      cwd: 'sdk/python',
      env: { ...env, DATABASE_URL: url, CARDPROGRAM_TEST_BUILT: '1', CARDPROGRAM_NODE: process.execPath, PYTHONDONTWRITEBYTECODE: '1' },
    });
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    const done = (code) => {
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      const ran = /^Ran (\d+) tests?/m.exec(output)?.[1] ?? '?';
      const ok = code === 0;
      resolve({
        ok,
        dialect: dialectOf(url),
        summary: `# Python SDK tests on ${dialectOf(url)}: ${ok ? 'passed' : 'FAILED'} (${ran} tests, ${seconds} s)`,
        output,
      });
    };
    child.on('error', (err) => {
      output += String(err);
      done(1);
    });
    child.on('close', done);
  });
}

/** The closing line's part about the Python tests. */
export function pythonLine({ missing, results = [] }) {
  if (missing) return `Python SDK tests skipped: ${missing}`;
  const failed = results.filter((r) => !r.ok).map((r) => r.dialect);
  const all = results.map((r) => r.dialect).join(' and ');
  return failed.length ? `Python SDK tests FAILED on ${failed.join(' and ')}` : `Python SDK tests passed on ${all}`;
}
