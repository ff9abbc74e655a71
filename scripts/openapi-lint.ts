// Lints the service's OpenAPI document with a third-party linter (Redocly CLI, rules in redocly.yaml).
// The document is the one the app serves at /openapi.json, built from the same factory.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';

const dataDir = mkdtempSync(join(tmpdir(), 'cardprogram-openapi-'));
const app = await buildApp(
  { ...loadConfig({ CARDPROGRAM_DATA_DIR: dataDir, DATABASE_URL: 'file::memory:', CARDPROGRAM_WORKER: 'off' }), logLevel: 'silent' },
  { logger: false },
);
await app.ready();
const doc = app.swagger();
await app.close();
mkdirSync('test-artifacts', { recursive: true });
const file = join('test-artifacts', 'openapi.json');
writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
rmSync(dataDir, { recursive: true, force: true });

const res = spawnSync(join('node_modules', '.bin', 'redocly'), ['lint', file, '--format', 'stylish'], {
  stdio: 'inherit',
  // No network here: no telemetry, no update check.
  env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
});
process.exit(res.status ?? 1);
