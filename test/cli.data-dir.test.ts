// The CLI run where there is no data (another directory than the service's): commands that read
// or call name the directory they looked in and create nothing there (issue 20).
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { ROOT, run } from './helpers/cli.js';

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

it('run from a directory without data, commands that read or call name the directory they looked in and create nothing', async () => {
  const elsewhere = mkdtempSync(join(tmpdir(), 'cardprogram-elsewhere-'));
  try {
    // As a newcomer's shell has it: none of the service's variables (empty counts as unset).
    const env = { DATABASE_URL: '', CARDPROGRAM_DATA_DIR: '', CARDPROGRAM_MASTER_KEY: '', CARDPROGRAM_ENV: '', LOG_LEVEL: 'warn' };
    const commands = [
      ['call', 'cardQuery', '--data', '{"cardId":"card_x"}'],
      ['merchant', 'list'],
      ['ledger', 'check'],
      ['keys', 'list'],
      ['callbacks', 'list'],
      ['holder', 'review', 'hld_x', '--status', '2'],
      ['demo', '--holders', '1'],
    ];
    for (const args of commands) {
      const r = await run(process.execPath, [join(ROOT, 'bin/cardprogram.js'), ...args], elsewhere, env);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(
          `^cardprogram: no cardprogram database at ${escapeRegExp(join(elsewhere, 'data', 'cardprogram.sqlite'))} \\(data directory ${escapeRegExp(join(elsewhere, 'data'))}\\): run it in the directory the service runs in`,
        ),
        args.join(' '),
      );
      assert.deepEqual(readdirSync(elsewhere), [], `${args.join(' ')} created nothing`);
    }
  } finally {
    rmSync(elsewhere, { recursive: true, force: true });
  }
});
