// The service's OpenAPI document, exactly as the app serves it at /openapi.json: built by the same
// factory on a throwaway in-memory database. Read by the OpenAPI lint and the SDK's type generator.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';

export async function openapiDocument(): Promise<Record<string, any>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cardprogram-openapi-'));
  try {
    const app = await buildApp(
      { ...loadConfig({ CARDPROGRAM_DATA_DIR: dataDir, DATABASE_URL: 'file::memory:', CARDPROGRAM_WORKER: 'off' }), logLevel: 'silent' },
      { logger: false },
    );
    await app.ready();
    const doc = app.swagger() as Record<string, any>;
    await app.close();
    return doc;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
