import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { exampleCurl } from '../src/docs/example-curl.js';
import { childDatabaseUrl, ROOT, run, runCli } from './helpers/cli.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { killAll, startService } from './helpers/service.js';

/** The request as a reader pastes it: the printed curl line, run by the shell. */
async function paste(curl: string): Promise<Record<string, unknown>> {
  const res = await run('bash', ['-c', curl], ROOT, {});
  assert.equal(res.code, 0, res.stderr);
  return JSON.parse(res.stdout) as Record<string, unknown>;
}

/** Issue 43.14: the start banner's sample request signed no `timestamp`, which production requires. */
eachDialect('the start banner’s signed request', (dialect) => {
  it('signs a timestamp: pasted as printed, it is accepted where a timestamp is required, in the sandbox and in production', async (t) => {
    const db = await isolatedDatabase(dialect);
    const dataDir = mkdtempSync(join(tmpdir(), 'cp-banner-'));
    const children: Parameters<typeof killAll>[0] = [];
    t.after(async () => {
      await killAll(children);
      await db.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const base = { DATABASE_URL: childDatabaseUrl(db), CARDPROGRAM_DATA_DIR: dataDir, CARDPROGRAM_WORKER: 'off' };

    // The sandbox, requiring a timestamp as production does: the banner's line as printed.
    const sandbox = await startService({ ...base, CARDPROGRAM_REQUIRE_TIMESTAMP: 'on' });
    children.push(sandbox.child);
    const printed = /^ {2}(curl -s -X POST .*)$/m.exec(sandbox.output())?.[1];
    assert.ok(printed, sandbox.output());
    assert.match(printed, /"timestamp":\d{13},/);
    assert.match(sandbox.output(), /paste it within 5 minutes/);
    const created = await paste(printed);
    assert.equal(created.firstName, 'Alice', JSON.stringify(created));
    await killAll(children);

    // Production (no demo merchant there): the same request for a merchant the operator created.
    const key = randomBytes(32).toString('hex');
    const production = {
      ...base,
      CARDPROGRAM_ENV: 'production',
      CARDPROGRAM_MASTER_KEY: key,
      CARDPROGRAM_PUBLIC_URL: 'https://cards.example.com',
      CARDPROGRAM_BINS: '{"EUR":"41000001","USDT":"51000001"}',
      CARDPROGRAM_DATA_DIR: mkdtempSync(join(dataDir, 'production-')),
    };
    // The sandbox start above sealed the database under its own generated key: production gets its own database.
    const prodDb = await isolatedDatabase(dialect);
    t.after(() => prodDb.cleanup());
    const env = { ...production, DATABASE_URL: childDatabaseUrl(prodDb) };
    const made = await runCli(['merchant', 'create', '--name', 'Banner Test', '--json'], env);
    assert.equal(made.code, 0, made.stderr);
    const merchant = JSON.parse(made.stdout) as { appId: string; secret: string };
    const service = await startService(env);
    children.push(service.child);
    const answer = await paste(exampleCurl({ appId: merchant.appId, secret: merchant.secret, baseUrl: service.url }));
    assert.equal(answer.firstName, 'Alice', JSON.stringify(answer));
  });
});
