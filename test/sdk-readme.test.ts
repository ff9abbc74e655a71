import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { CALLBACK_EVENTS } from '../client/src/types.js';
import { withEventList } from '../scripts/sdk-readme.js';
import { type EventType, NOTIFY_EVENTS } from '../src/callbacks/outbox.js';
import { ROOT, run } from './helpers/cli.js';

// The service's events and the SDK's are the same set: the assignments compile only then.
type ClientEventType = keyof typeof CALLBACK_EVENTS;
const serverSide: readonly ClientEventType[] = [] as EventType[];
const clientSide: readonly EventType[] = [] as ClientEventType[];

/** Issue 43.16: client/README.md listed the callback events by hand, and had lost dispute.updated. */
it('the SDK README lists every callback event, generated from the SDK’s types, and lint fails on a stale list', async (t) => {
  assert.deepEqual([serverSide, clientSide], [[], []]);
  assert.deepEqual(Object.keys(CALLBACK_EVENTS).sort(), [...NOTIFY_EVENTS, 'kyc.result'].sort(), 'each event the service sends');

  const readme = readFileSync(join(ROOT, 'client', 'README.md'), 'utf8');
  assert.equal(readme, withEventList(readme), 'the committed README is what the types give');
  for (const type of Object.keys(CALLBACK_EVENTS)) assert.match(readme, new RegExp(`^\\| \`${type.replace('.', '\\.')}\` \\| `, 'm'), type);
  assert.match(readme, /^\| `dispute\.updated` \| /m);

  // A README whose list lacks an event (as it lacked dispute.updated): --check refuses it, the build's run writes it.
  const dir = mkdtempSync(join(tmpdir(), 'cp-sdk-readme-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const stale = join(dir, 'README.md');
  writeFileSync(stale, readme.replace(/^\| `dispute\.updated` \|.*\n/m, ''));
  const script = ['--import', 'tsx', 'scripts/sdk-readme.ts', '--readme', stale];
  const checked = await run(process.execPath, [...script, '--check'], ROOT, {});
  assert.equal(checked.code, 1);
  assert.match(checked.stderr, /its list of callback events is not CALLBACK_EVENTS/);
  const written = await run(process.execPath, script, ROOT, {});
  assert.equal(written.code, 0, written.stderr);
  assert.equal(readFileSync(stale, 'utf8'), readme);
  assert.equal((await run(process.execPath, [...script, '--check'], ROOT, {})).code, 0);
});
