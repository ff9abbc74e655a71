// The import rules of docs/architecture.md ("Layers"), as .dependency-cruiser.cjs states them: the
// real tree keeps them, and each rule fails on a violation planted in a small tree of its own.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, it } from 'node:test';

const root = resolve(import.meta.dirname, '..');
const config = join(root, '.dependency-cruiser.cjs');
const cli = join(root, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');

function cruise(cwd: string): { status: number | null; out: string } {
  const res = spawnSync(process.execPath, [cli, 'src', 'client/src', '--config', config, '--output-type', 'err'], {
    cwd,
    encoding: 'utf8',
  });
  return { status: res.status, out: `${res.stdout}${res.stderr}` };
}

const planted = mkdtempSync(join(tmpdir(), 'cardprogram-import-rules-'));
after(() => rmSync(planted, { recursive: true, force: true }));

/** A tree of one-line modules: each file imports the ones listed. */
function plant(files: Record<string, string[]>): string {
  const dir = mkdtempSync(join(planted, 'tree-'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  for (const folder of ['src', 'client/src']) mkdirSync(join(dir, folder), { recursive: true });
  for (const [file, imports] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    const lines = imports.map((spec, i) => `import * as m${i} from '${spec}';\nexport const use${i} = m${i};`);
    writeFileSync(join(dir, file), `${lines.join('\n')}\nexport const here = 1;\n`);
  }
  return dir;
}

it('the tree keeps every import rule', () => {
  const { status, out } = cruise(root);
  assert.equal(status, 0, out);
});

it('a planted cycle fails, in src/ and in client/src', () => {
  for (const [a, b] of [
    ['src/trades/a.ts', 'src/trades/b.ts'],
    ['client/src/a.ts', 'client/src/b.ts'],
  ] as const) {
    const { status, out } = cruise(plant({ [a]: ['./b.js'], [b]: ['./a.js'] }));
    assert.notEqual(status, 0, out);
    assert.match(out, /no-cycle/);
  }
  // A longer loop, across folders, fails too.
  const { status, out } = cruise(
    plant({
      'src/ledger/book.ts': ['../trades/store.js'],
      'src/trades/store.ts': ['../ledger/common.js'],
      'src/ledger/common.ts': ['./book.js'],
    }),
  );
  assert.notEqual(status, 0, out);
  assert.match(out, /no-cycle/);
});

it('a verb importing src/http or Fastify fails; routes.ts and schemas.ts may', () => {
  for (const spec of ['../http/operation.js', '../http/schemas.js', 'fastify', '@fastify/type-provider-typebox']) {
    const { status, out } = cruise(plant({ 'src/cards/apply.ts': [spec], 'src/http/operation.ts': [], 'src/http/schemas.ts': [] }));
    assert.notEqual(status, 0, `${spec}: ${out}`);
    assert.match(out, /verb-without-http/);
  }
  const { status, out } = cruise(
    plant({
      'src/cards/routes.ts': ['../http/operation.js', 'fastify', './apply.js'],
      'src/cards/schemas.ts': ['../http/schemas.js'],
      'src/cards/apply.ts': ['./schemas.js'],
      'src/http/operation.ts': [],
      'src/http/schemas.ts': [],
    }),
  );
  assert.equal(status, 0, out);
  // The allow-list of .dependency-cruiser.cjs is empty (issue 18): the demo merchant's start-up, once
  // on it for signing its curl example, may not import src/http any more.
  const demo = cruise(plant({ 'src/merchants/demo.ts': ['../http/signing.js'], 'src/http/signing.ts': [] }));
  assert.notEqual(demo.status, 0, demo.out);
  assert.match(demo.out, /verb-without-http/);
});

it('an import from a layer above fails', () => {
  for (const [from, to] of [
    ['src/db/index.ts', '../cards/model.js'], // foundation → domains
    ['src/errors.ts', './http/schemas.js'], // foundation → wire format
    ['src/cards/schemas.ts', '../cards/model.js'], // wire format → domains
    ['src/ledger/book.ts', '../cards/routes.js'], // domains → transports
    ['src/ledger/book.ts', '../app.js'], // domains → assembly
    ['src/http/operation.ts', '../cli/main.js'], // transports → entry points
  ] as const) {
    const target = join(dirname(from), to).replace(/\.js$/, '.ts');
    const { status, out } = cruise(plant({ [from]: [to], [target]: [] }));
    assert.notEqual(status, 0, `${from} → ${to}: ${out}`);
    assert.match(out, /layer-/, `${from} → ${to}`);
  }
});

it('a module of src/ in no layer fails', () => {
  const { status, out } = cruise(plant({ 'src/newthing/x.ts': ['../errors.js'], 'src/errors.ts': [] }));
  assert.notEqual(status, 0, out);
  assert.match(out, /layer-known/);
});

it("`trades` is queried only in src/trades and the ledger's writer", () => {
  // The table is not in the general DB type: a query elsewhere needs src/db/trades-table.ts.
  for (const from of ['src/page/activity.ts', 'src/console/queries.ts', 'src/ledger/check.ts', 'src/ledger/settle.ts', 'src/db/index.ts']) {
    const spec = from.startsWith('src/db/') ? './trades-table.js' : '../db/trades-table.js';
    const { status, out } = cruise(plant({ [from]: [spec], 'src/db/trades-table.ts': [] }));
    assert.notEqual(status, 0, `${from}: ${out}`);
    assert.match(out, /trades-in-its-home/, from);
  }
  const { status, out } = cruise(
    plant({
      'src/trades/list.ts': ['../db/trades-table.js'],
      'src/ledger/trade-rows.ts': ['../db/trades-table.js'],
      'src/page/activity.ts': ['../trades/list.js'],
      'src/db/trades-table.ts': [],
    }),
  );
  assert.equal(status, 0, out);
});

it('the SDK imports no server code', () => {
  const { status, out } = cruise(plant({ 'client/src/index.ts': ['../../src/errors.js'], 'src/errors.ts': [] }));
  assert.notEqual(status, 0, out);
  assert.match(out, /client-without-server/);
});
