import type { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { childDatabaseUrl } from './cli.js';
import { isolatedDatabase } from './db.js';
import { killAll } from './service.js';

/** The demo merchant a started service writes to its data directory. */
export interface Demo {
  appId: string;
  secret: string;
}

/**
 * What a test of the service as its own process (test/helpers/service.ts: startService) needs where
 * a signed timestamp is required (issue 31: reads keep their randomStr in the read-nonce store): an
 * isolated database, a data directory, the environment, the children to kill afterwards, and the
 * demo merchant once a service has started. Everything is removed after the test.
 */
export async function timestampedSetUp(t: TestContext, dialect: Parameters<typeof isolatedDatabase>[0], label: string) {
  const db = await isolatedDatabase(dialect);
  const dataDir = mkdtempSync(join(tmpdir(), `cardprogram-${label}-`));
  const children: Array<ReturnType<typeof spawn>> = [];
  t.after(async () => {
    await killAll(children);
    await db.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const env = {
    DATABASE_URL: childDatabaseUrl(db),
    CARDPROGRAM_DATA_DIR: dataDir,
    CARDPROGRAM_REQUIRE_TIMESTAMP: 'on',
    CARDPROGRAM_WORKER: 'off',
  };
  const demo = () => JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8')) as Demo;
  return { db, dataDir, env, children, demo };
}

/** POSTs a JSON body on a connection of its own (no keep-alive: with several processes, each may take it). */
export function postAlone(base: string, path: string, body: string): Promise<{ status: number; body: Record<string, any> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d) => {
        text += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
