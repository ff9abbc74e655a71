import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { ROOT } from './helpers/cli.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// `npm start` runs scripts/start.mjs under `sh -c`; on SIGTERM npm signals the shell, which dies
// without passing the signal on. The service must not stay behind without its parent.
it('npm start: the service shuts down when the shell that started it goes away', async (t) => {
  const data = mkdtempSync(join(tmpdir(), 'cardprogram-start-'));
  // `; true` keeps the shell from exec-ing node: the shell stays its parent, as under npm.
  const shell = spawn('/bin/sh', ['-c', `"${process.execPath}" scripts/start.mjs; true`], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', DATABASE_URL: `file:${join(data, 'db.sqlite')}`, CARDPROGRAM_DATA_DIR: data },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let servicePid = 0;
  t.after(() => {
    if (servicePid && alive(servicePid)) process.kill(servicePid, 'SIGKILL');
    shell.kill('SIGKILL');
    rmSync(data, { recursive: true, force: true });
  });
  let out = '';
  servicePid = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready:\n${out}`)), 30_000);
    const onData = (d: Buffer) => {
      out += d;
      const m = /"pid":(\d+)[^\n]*"msg":"cardprogram ready"/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    shell.stdout.on('data', onData);
    shell.stderr.on('data', onData);
  });
  assert.notEqual(servicePid, shell.pid, 'the service runs under the shell, not in its place');
  shell.kill('SIGKILL');
  const deadline = Date.now() + 15_000;
  while (alive(servicePid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  assert.equal(alive(servicePid), false, 'the service exited after its parent went away');
  assert.match(out, /"signal":"SIGTERM"[^\n]*"msg":"shutting down"/, 'by the graceful path');
});
