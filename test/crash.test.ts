import assert from 'node:assert/strict';
import { it } from 'node:test';
import { runCrashTest } from './crash/harness.js';
import { eachDialect } from './helpers/dialects.js';

// The short run of the crash harness; `npm run crashtest` kills the service 25 times per database.
eachDialect('crash safety: SIGKILL under concurrent retried writes', (dialect) => {
  it('every acknowledged write is stored once, nothing else is, the books balance and every callback arrives', async () => {
    const report = await runCrashTest({ dialect, kills: 3, writers: 4, upMs: [300, 1200] });
    assert.deepEqual(report.problems, []);
    assert.equal(report.lost, 0);
    assert.equal(report.extra, 0);
    assert.ok((report.acknowledged.cardTopUp ?? 0) > 0 && (report.acknowledged.authorize ?? 0) > 0, JSON.stringify(report.acknowledged));
    assert.ok(report.callbacks.events > 0 && report.ledger.entries > 0);
  });
});
