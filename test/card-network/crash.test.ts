import assert from 'node:assert/strict';
import { it } from 'node:test';
import { runLinkCrashTest } from '../crash/link.js';
import { eachDialect } from '../helpers/dialects.js';

// The card network link under SIGKILL (issue 28): 10 connections, 100 messages in flight, 10 kills
// during the stream. CRASH_LINK_MESSAGES sizes the stream (200 here; `npm run crashtest` runs 3 000).
const messages = Number(process.env.CRASH_LINK_MESSAGES ?? 200);

eachDialect('crash safety: the network link under SIGKILL, the peer retransmitting', (dialect) => {
  it('every authorization acted exactly once, every retransmission got the first answer, the books balance', async (t) => {
    const report = await runLinkCrashTest({ dialect, kills: 10, messages, connections: 10, inFlight: 100, cards: 40, deadlineMs: 5000 });
    t.diagnostic(JSON.stringify({ ...report, problems: report.problems.length }));
    assert.deepEqual(report.problems, []);
    assert.equal(report.kills, 10);
    // The stream met the kills: messages were left unanswered and sent again; both outcomes occurred.
    assert.ok(report.retransmissions > 0, JSON.stringify(report));
    assert.ok((report.codes['00'] ?? 0) > 0 && (report.codes['51'] ?? 0) > 0, JSON.stringify(report.codes));
    assert.ok(report.answers >= 2 * messages, 'each message answered in the stream and again in the sweep');
  });
});
