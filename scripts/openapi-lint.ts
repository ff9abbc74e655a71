// Lints the service's OpenAPI document with a third-party linter (Redocly CLI, rules in redocly.yaml).
// The document is the one the app serves at /openapi.json, built from the same factory.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openapiDocument } from './openapi-doc.js';

const doc = await openapiDocument();
mkdirSync('test-artifacts', { recursive: true });
const file = join('test-artifacts', 'openapi.json');
writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);

const res = spawnSync(join('node_modules', '.bin', 'redocly'), ['lint', file, '--format', 'stylish'], {
  stdio: 'inherit',
  // No network here: no telemetry, no update check.
  env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
});
process.exit(res.status ?? 1);
