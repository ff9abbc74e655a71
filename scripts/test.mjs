// Runs the whole suite with Node's test runner. Test files are listed here rather than by a glob,
// because `node --test` reads its arguments differently on Node 20 and on Node 22+.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

function find(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? find(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  );
}

const only = process.argv.slice(2);
const files = only.length ? only : find('test').sort();
// A per-test timeout: a test that hangs fails instead of holding CI until its own limit.
const args = ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=420000', ...files];
const res = spawnSync(process.execPath, args, { stdio: 'inherit', env: process.env });
process.exit(res.status ?? 1);
