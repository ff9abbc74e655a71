import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { loadConfig } from '../src/config.js';
import { OPTIONAL_PARTS } from '../src/config-parts.js';
import { KNOWN_VARIABLES, nearestVariable, unknownVariables } from '../src/config-vars.js';
import { childDatabaseUrl, ROOT, runCli } from './helpers/cli.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { freePort, startService, stopped } from './helpers/service.js';

/** Issue 43.7: a misspelled variable was silently ignored (`CARDPROGRAM_CONSOL=on` left the console off). */
it('an unknown CARDPROGRAM_* variable is warned about with the nearest known name; known ones and other variables are not', () => {
  assert.deepEqual(
    unknownVariables({
      CARDPROGRAM_CONSOL: 'on',
      CARDPROGRAM_METRICS_TOKN: 'x',
      CARDPROGRAM_NETWORK_TLS_KYE: '/k.pem',
      CARDPROGRAM_CONSOLE: 'on',
      PATH: '/usr/bin',
      CARDPROGRAMME: 'x',
    }),
    [
      'CARDPROGRAM_CONSOL is not a variable cardprogram reads (ignored): did you mean CARDPROGRAM_CONSOLE?',
      'CARDPROGRAM_METRICS_TOKN is not a variable cardprogram reads (ignored): did you mean CARDPROGRAM_METRICS_TOKEN?',
      'CARDPROGRAM_NETWORK_TLS_KYE is not a variable cardprogram reads (ignored): did you mean CARDPROGRAM_NETWORK_TLS_KEY?',
    ],
  );
  assert.deepEqual(
    nearestVariable('CARDPROGRAM_REQUIRE_TIMESTMAP'),
    { name: 'CARDPROGRAM_REQUIRE_TIMESTAMP', edits: 1 },
    'two letters swapped: one edit',
  );
  assert.deepEqual(nearestVariable('CARDPROGRAM_PG_POOLSIZE'), { name: 'CARDPROGRAM_PG_POOL_SIZE', edits: 1 });
  // Far from every name: the nearest one is named, not offered as the one meant (which it is depends on the list).
  assert.match(
    unknownVariables({ CARDPROGRAM_FOO_BAR: '1' }).join('\n'),
    /^CARDPROGRAM_FOO_BAR is not a variable cardprogram reads \(ignored\): the nearest known is CARDPROGRAM_\w+ \(README, Configuration, has them all\)$/,
  );
  const dir = mkdtempSync(join(tmpdir(), 'cp-vars-'));
  try {
    const env: Record<string, string> = { CARDPROGRAM_DATA_DIR: dir, CARDPROGRAM_CONSOL: 'on' };
    const config = loadConfig(env);
    assert.equal(config.console, false);
    assert.deepEqual(config.warnings, [
      'CARDPROGRAM_CONSOL is not a variable cardprogram reads (ignored): did you mean CARDPROGRAM_CONSOLE?',
    ]);
    assert.deepEqual(loadConfig({ CARDPROGRAM_DATA_DIR: dir }).warnings, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * The list cannot drift from the code: the configuration's `Env` type has only the listed names
 * (reading another does not compile), and every CARDPROGRAM_* name written anywhere in the code,
 * the scripts and the tests (a `process.env.X` outside the configuration, a message naming one)
 * must be listed too.
 */
it('every CARDPROGRAM_* name in src, scripts, bench, test and .ci is in the one list of known variables', () => {
  const known = new Set<string>(KNOWN_VARIABLES);
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? files(path) : /\.(ts|mjs|cjs|js|sh)$|^run$/.test(name) ? [path] : [];
    });
  const unlisted = new Map<string, string>();
  for (const file of ['src', 'scripts', 'bench', 'test', '.ci'].flatMap((d) => files(join(ROOT, d)))) {
    if (file.endsWith('config-vars.test.ts')) continue; // the misspellings above
    // A name ending in _ is a prefix in a message (CARDPROGRAM_NETWORK_TLS_…), not a variable.
    for (const [name] of readFileSync(file, 'utf8').matchAll(/\bCARDPROGRAM_[A-Z0-9_]*[A-Z0-9]\b/g)) {
      if (!known.has(name)) unlisted.set(name, file.slice(ROOT.length));
    }
  }
  assert.deepEqual(Object.fromEntries(unlisted), {}, 'add these to KNOWN_VARIABLES in src/config-vars.ts');
  assert.equal(known.size, KNOWN_VARIABLES.length, 'each listed once');
});

eachDialect('unknown variables and the optional parts at start', (dialect) => {
  it('the service logs the warning before it is ready, and its ready line says which optional parts are on', async (t) => {
    const db = await isolatedDatabase(dialect);
    const dataDir = mkdtempSync(join(tmpdir(), 'cp-vars-serve-'));
    t.after(async () => {
      await db.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const env = { DATABASE_URL: childDatabaseUrl(db), CARDPROGRAM_DATA_DIR: dataDir, CARDPROGRAM_DEMO_MERCHANT: 'off', LOG_LEVEL: 'info' };
    const first = await startService({ ...env, CARDPROGRAM_CONSOL: 'on' });
    const lines = first
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string; parts?: Record<string, string> });
    const warned = lines.findIndex((l) => l.level === 40 && l.msg.startsWith('CARDPROGRAM_CONSOL '));
    const ready = lines.findIndex((l) => l.msg === 'cardprogram ready');
    assert.ok(warned >= 0 && warned < ready, first.output());
    assert.equal(lines[warned]?.msg, 'CARDPROGRAM_CONSOL is not a variable cardprogram reads (ignored): did you mean CARDPROGRAM_CONSOLE?');
    assert.deepEqual(lines[ready]?.parts, {
      console: 'off',
      link: 'off',
      '3ds': 'off',
      tsp: 'off',
      metrics: 'off',
      https: 'off',
      worker: 'on',
    });
    first.child.kill('SIGTERM');
    await stopped(first.child);

    const second = await startService({
      ...env,
      CARDPROGRAM_CONSOLE: 'on',
      CARDPROGRAM_NETWORK_PORT: String(await freePort()),
      CARDPROGRAM_3DS_PORT: String(await freePort()),
      CARDPROGRAM_TSP_PORT: String(await freePort()),
      CARDPROGRAM_METRICS_TOKEN: 'a-metrics-token-of-24-chars',
      CARDPROGRAM_WORKER: 'off',
    });
    t.after(() => second.child.kill('SIGKILL'));
    assert.doesNotMatch(second.output(), /"level":40/, 'nothing to warn about');
    const secondReady = JSON.parse(
      second
        .output()
        .split('\n')
        .find((l) => l.includes('"msg":"cardprogram ready"')) ?? '{}',
    );
    assert.deepEqual(secondReady.parts, {
      console: 'on',
      link: 'plain TCP',
      '3ds': 'plain HTTP',
      tsp: 'plain HTTP',
      metrics: 'token',
      https: 'off',
      worker: 'off',
    });
    assert.deepEqual(
      Object.keys(secondReady.parts),
      OPTIONAL_PARTS.map((p) => p.name),
    );
  });

  it('a command other than the service says it on stderr, and still runs', async (t) => {
    const db = await isolatedDatabase(dialect);
    const dataDir = mkdtempSync(join(tmpdir(), 'cp-vars-cli-'));
    t.after(async () => {
      await db.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const res = await runCli(['migrate', '--json'], {
      DATABASE_URL: childDatabaseUrl(db),
      CARDPROGRAM_DATA_DIR: dataDir,
      CARDPROGRAM_METRICS_TOKN: 'a-metrics-token-of-24-chars',
    });
    assert.equal(res.code, 0, res.stderr);
    assert.ok(Array.isArray(JSON.parse(res.stdout).applied));
    assert.equal(
      res.stderr.trim(),
      'cardprogram: warning: CARDPROGRAM_METRICS_TOKN is not a variable cardprogram reads (ignored): did you mean CARDPROGRAM_METRICS_TOKEN?',
    );
  });
});
