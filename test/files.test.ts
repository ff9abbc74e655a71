import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/index.js';
import { ensureDemoMerchant } from '../src/merchants/demo.js';

const mode = (path: string) => statSync(path).mode & 0o777;

// SQLite's files and the data directory: what is private on disk (issue 14.6). The database server's
// own files are PostgreSQL's to protect; the data directory's are checked on both (master.key, demo file).
describe('private files: data directory 0700, database, WAL, SHM, master.key and demo-merchant.json 0600', () => {
  it('a fresh sandbox start creates them private', async (t) => {
    const root = mkdtempSync(join(tmpdir(), 'cardprogram-files-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const dataDir = join(root, 'data');
    const config = { ...loadConfig({ CARDPROGRAM_DATA_DIR: dataDir }), logLevel: 'silent', demoMerchant: true };
    assert.equal(mode(dataDir), 0o700);
    assert.equal(mode(join(dataDir, 'master.key')), 0o600);
    const lines: string[] = [];
    const app = await buildApp(config, { logStream: { write: (l: string) => lines.push(l) } });
    t.after(() => app.close());
    await ensureDemoMerchant(app.svc);
    const sqlite = join(dataDir, 'cardprogram.sqlite');
    for (const path of [sqlite, `${sqlite}-wal`, `${sqlite}-shm`, join(dataDir, 'demo-merchant.json'), join(dataDir, 'master.key')]) {
      assert.ok(existsSync(path), path);
      assert.equal(mode(path).toString(8), '600', path);
    }
    assert.deepEqual(
      lines.filter((l) => l.includes('wider than')),
      [],
      'no warning for private files',
    );
  });

  it('a demo-merchant.json left wider by hand is narrowed when a new demo merchant is written to it', async (t) => {
    const root = mkdtempSync(join(tmpdir(), 'cardprogram-files-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const dataDir = join(root, 'data');
    const config = { ...loadConfig({ CARDPROGRAM_DATA_DIR: dataDir }), logLevel: 'silent', demoMerchant: true };
    const file = join(dataDir, 'demo-merchant.json');
    writeFileSync(file, '{}\n', { mode: 0o644 });
    chmodSync(file, 0o644);
    const app = await buildApp(config, { logger: false });
    t.after(() => app.close());
    assert.ok(await ensureDemoMerchant(app.svc), 'a new demo merchant was written');
    assert.equal(mode(file).toString(8), '600');
  });

  it('start-up warns, one line naming the path and mode, for each one that is wider', async (t) => {
    const root = mkdtempSync(join(tmpdir(), 'cardprogram-files-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const dataDir = join(root, 'data');
    const config = { ...loadConfig({ CARDPROGRAM_DATA_DIR: dataDir }), logLevel: 'warn' };
    const sqlite = join(dataDir, 'cardprogram.sqlite');
    const db = openDatabase(`file:${sqlite}`);
    await db.close();
    chmodSync(dataDir, 0o755);
    chmodSync(join(dataDir, 'master.key'), 0o644);
    chmodSync(sqlite, 0o640);
    const lines: string[] = [];
    const app = await buildApp(config, { logStream: { write: (l: string) => lines.push(l) } });
    t.after(() => app.close());
    const warnings = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.msg.includes('wider than'));
    assert.deepEqual(
      warnings.map((w) => w.msg).sort(),
      [
        `${dataDir} has mode 0755, wider than 0700: other users may read it (chmod 700 ${dataDir})`,
        `${join(dataDir, 'master.key')} has mode 0644, wider than 0600: other users may read it (chmod 600 ${join(dataDir, 'master.key')})`,
        // SQLite gives the WAL and SHM the database file's mode: they are named too.
        ...['', '-wal', '-shm'].map(
          (x) => `${sqlite}${x} has mode 0640, wider than 0600: other users may read it (chmod 600 ${sqlite}${x})`,
        ),
      ].sort(),
    );
    assert.ok(
      warnings.every((w) => w.level === 40),
      'logged as warnings',
    );
  });
});
