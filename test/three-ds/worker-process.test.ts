// With CARDPROGRAM_WORKER=off the service runs no background work: `cardprogram worker` (a separate
// process) must run the ACS's passes as it delivers callbacks: results to the DS (RReq) and the
// challenges past their time (N/14). The service here is the harness's, worker off; the worker is the
// built command, on the same database.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { it } from 'node:test';
import { randomStr } from '../helpers/app.js';
import { childDatabaseUrl, ROOT } from '../helpers/cli.js';
import { eachDialect } from '../helpers/dialects.js';
import { eventually } from '../helpers/receiver.js';
import { acs, card, notifyTo } from './helpers/acs.js';
import { directoryServer, rreqProblems } from './helpers/challenge-sim.js';

eachDialect('3-D Secure: the passes run by `cardprogram worker` (CARDPROGRAM_WORKER=off)', (dialect) => {
  it('a worker process sends the RReq of a challenge the service ended, and ends a challenge past its time N/14 with its RReq', async (t) => {
    const ds = await directoryServer(t);
    const { h } = await acs(t, dialect);
    assert.equal(h.config.callbacks.worker, false, 'the service runs with its worker off');
    await notifyTo(t, h);
    await h.call('/api/network/threeDsSettingsUpdate.html', { challengeMethod: 'oob', randomStr: randomStr() });
    const c = await card(h);
    const challenge = async () => {
      const res = await h.call('/sandbox/3ds/authenticate', { cardId: c.cardId, amount: 40, challengeInd: '04', randomStr: randomStr() });
      assert.equal(res.body.model?.ares?.transStatus, 'C', JSON.stringify(res.body));
      return String(res.body.model.ares.acsTransID);
    };
    // One challenge ended by the merchant's app (its result waits for the DS), one left to run out.
    const approved = await challenge();
    const answered = await h.call('/api/network/threeDsChallengeRespond.html', {
      acsTransID: approved,
      result: 'approved',
      randomStr: randomStr(),
    });
    assert.equal(answered.body.model?.transStatus, 'Y', JSON.stringify(answered.body));
    const stale = await challenge();
    await h.db.database.db
      .updateTable('three_ds_authentications')
      .set({ challenge_expires_at: Date.now() - 1000 })
      .where('acs_trans_id', '=', stale)
      .execute();
    // The service itself sends nothing: its worker is off.
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(ds.rreqs.length, 0);

    const child = spawn(process.execPath, ['bin/cardprogram.js', 'worker'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: childDatabaseUrl(h.db),
        CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
        CARDPROGRAM_3DS_DS_URL: ds.url,
        LOG_LEVEL: 'warn',
      },
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    t.after(() => {
      child.kill('SIGKILL');
    });
    await eventually(() => ds.rreqs.length >= 2, 20_000, 'both RReqs sent by the worker process');
    const byId = new Map(ds.rreqs.map((m) => [String(m.acsTransID), m]));
    for (const m of ds.rreqs) assert.deepEqual(rreqProblems(m), []);
    assert.equal(byId.get(approved)?.transStatus, 'Y');
    assert.deepEqual([byId.get(stale)?.transStatus, byId.get(stale)?.transStatusReason], ['N', '14']);
    const statuses = async () =>
      (await h.db.database.db.selectFrom('three_ds_results').select('status').execute()).map((r) => r.status).join(',');
    await eventually(async () => (await statuses()) === 'sent,sent', 10_000, 'both results marked sent');
    const ended = await h.db.database.db
      .selectFrom('three_ds_authentications')
      .select(['trans_status', 'trans_status_reason'])
      .where('acs_trans_id', '=', stale)
      .executeTakeFirstOrThrow();
    assert.deepEqual([ended.trans_status, ended.trans_status_reason], ['N', '14']);
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});
