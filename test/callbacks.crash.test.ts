import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { hmacSign, signingString } from '../src/http/signing.js';
import { kycBody, randomStr } from './helpers/app.js';
import { childDatabaseUrl } from './helpers/cli.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { eventually, receiver } from './helpers/receiver.js';
import { startService as start } from './helpers/service.js';

eachDialect('callbacks survive a crash', (dialect) => {
  it('SIGKILL between commit and delivery: the event is delivered after restart', async (t) => {
    const db = await isolatedDatabase(dialect);
    const dataDir = mkdtempSync(join(tmpdir(), 'cardprogram-crash-'));
    let second: Awaited<ReturnType<typeof start>> | null = null;
    t.after(async () => {
      // The service first: its worker's statements must not meet the schema's drop.
      if (second && second.child.exitCode === null) {
        second.child.kill('SIGKILL');
        await new Promise((r) => second?.child.once('exit', r));
      }
      await db.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const env = { DATABASE_URL: childDatabaseUrl(db), CARDPROGRAM_DATA_DIR: dataDir, CARDPROGRAM_WORKER_POLL_MS: '50' };
    // First life: no worker, so the committed event cannot have been delivered when it dies.
    const first = await start({ ...env, CARDPROGRAM_WORKER: 'off' });
    const demo = JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8'));
    const rx = await receiver(t, demo.webhookSecret);
    const post = async (base: string, path: string, body: Record<string, unknown>) => {
      const signed = { ...body, appId: demo.appId };
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...signed, sign: hmacSign(demo.secret, signingString(signed)) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    const requestNo = `REQ-${randomStr().slice(0, 8)}`;
    const share = await post(
      first.url,
      '/open/api/kyc/share/information',
      kycBody({ requestNo, email: 'crash@example.com', callbackUrl: rx.url }),
    );
    assert.equal(share.status, 200, JSON.stringify(share.body));
    const decided = await post(first.url, '/sandbox/kyc/review', { requestNo, kycStatus: 'approved', randomStr: randomStr() });
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    assert.equal(rx.received.length, 0);

    second = await start(env);
    await eventually(() => rx.received.length >= 1, 15_000, 'the callback after restart');
    const [got] = rx.received;
    assert.equal(got?.verified, true);
    assert.deepEqual([got?.body.type, got?.body.requestNo, got?.body.kycStatus], ['kyc.result', requestNo, 'approved']);
  });
});
