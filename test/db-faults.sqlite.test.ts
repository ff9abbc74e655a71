// SQLite on a disk of its own that fills up or turns read-only: 503 with a wait, the service recovers.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { openDatabase } from '../src/db/index.js';
import { holderBody, randomStr } from './helpers/app.js';
import { runCli } from './helpers/cli.js';
import { alive, assertUnavailable, type Demo, post, SQLITE, SQLITE_SKIP } from './helpers/db-faults.js';
import { eventually } from './helpers/receiver.js';
import { startService } from './helpers/service.js';

describe('faults around the database', () => {
  describe('SQLite on a disk of its own (a tmpfs mounted for the test)', { skip: SQLITE_SKIP }, () => {
    /** A small file system of its own, so that it can be filled or made read-only (needs root). */
    function smallDisk(t: TestContext, megabytes: number): string | null {
      const dir = mkdtempSync(join(tmpdir(), 'cardprogram-disk-'));
      try {
        execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m`, 'tmpfs', dir], { stdio: 'pipe' });
      } catch (err) {
        rmSync(dir, { recursive: true, force: true });
        // CI runs as root on its own machine: there the test must run, not skip.
        if (process.env.CI === 'true') throw err;
        t.skip(`cannot mount a tmpfs here (${(err as Error).message.split('\n')[0]}); run as root`);
        return null;
      }
      t.after(() => {
        execFileSync('umount', ['-l', dir]);
        rmSync(dir, { recursive: true, force: true });
      });
      return dir;
    }

    it('a full disk: what does not fit is 503 with Retry-After and a clear log line, never a 500; writes resume when space is freed', async (t) => {
      const disk = smallDisk(t, 16);
      if (!disk) return;
      const dataDir = join(disk, 'data');
      mkdirSync(dataDir);
      const service = await startService({ DATABASE_URL: `file:${join(dataDir, 'db.sqlite')}`, CARDPROGRAM_DATA_DIR: dataDir });
      t.after(() => service.child.kill('SIGKILL'));
      const demo = JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8')) as Demo;
      const first = await post(service, demo, '/api/network/holderCreate.html', holderBody());
      assert.equal(first.status, 200);

      // Leave 256 KiB free, then write until the disk is full.
      const free = () => {
        const s = statfsSync(disk);
        return s.bavail * s.bsize;
      };
      writeFileSync(join(disk, 'filler'), Buffer.alloc(Math.max(0, free() - 256 * 1024)));
      const acknowledged = new Set<string>([first.body.holderId]);
      let refused: { reply: Awaited<ReturnType<typeof post>>; body: Record<string, unknown> } | null = null;
      for (let i = 0; i < 5000 && !refused; i++) {
        const body = holderBody({ address: Buffer.from('x'.repeat(200)).toString('base64') });
        const reply = await post(service, demo, '/api/network/holderCreate.html', body);
        if (reply.status === 200) acknowledged.add(reply.body.holderId);
        else refused = { reply, body };
      }
      assert.ok(refused, 'the disk filled up');
      assertUnavailable(refused.reply, '30');
      assert.equal(refused.reply.body.errMsg, refused.reply.body.msg);
      await eventually(
        () => /database unavailable: the database disk is full: free space on it/.test(service.output()),
        5000,
        'the log line',
      );
      // A signed read writes too (its randomStr, a small row that may still fit): it is answered, or
      // it is the same 503, never a 500. The health check, which only reads, answers; the service is up.
      for (let i = 0; i < 20; i++) {
        const read = await post(service, demo, '/api/network/holderQuery.html', { holderId: first.body.holderId, randomStr: randomStr() });
        if (read.status !== 200) assertUnavailable(read, '30');
      }
      assert.equal((await fetch(`${service.url}/healthz`)).status, 200);
      assert.ok(alive(service));

      rmSync(join(disk, 'filler'));
      const retried = await post(service, demo, '/api/network/holderCreate.html', refused.body);
      assert.equal(retried.status, 200, JSON.stringify(retried.body));
      acknowledged.add(retried.body.holderId);
      for (let i = 0; i < 5; i++) {
        const more = await post(service, demo, '/api/network/holderCreate.html', holderBody());
        assert.equal(more.status, 200);
        acknowledged.add(more.body.holderId);
      }
      // Every acknowledged cardholder is there, and nothing else.
      service.child.kill('SIGKILL');
      await new Promise((resolve) => service.child.once('exit', resolve));
      const check = openDatabase(`file:${join(dataDir, 'db.sqlite')}`);
      t.after(() => check.close());
      const ids = (await check.db.selectFrom('cardholders').select('id').execute()).map((r) => r.id);
      assert.deepEqual(new Set(ids), acknowledged);
    });

    it('a read-only file system: the service refuses to start, saying so in one line', async (t) => {
      const disk = smallDisk(t, 16);
      if (!disk) return;
      const env = { DATABASE_URL: `file:${join(disk, 'db.sqlite')}`, CARDPROGRAM_DATA_DIR: disk };
      assert.equal((await runCli(['migrate'], env)).code, 0);
      execFileSync('mount', ['-o', 'remount,ro', disk]);
      const res = await runCli(['serve'], { ...env, PORT: '0' });
      assert.equal(res.code, 1);
      assert.equal(
        res.stderr,
        `cardprogram: the SQLite database ${join(disk, 'db.sqlite')} is on a read-only file system: the service must write the file and its directory (DATABASE_URL)\n`,
      );
    });
  });
});
