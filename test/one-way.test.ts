// The one-way rules of docs/architecture.md ("One way per concern"), as scripts/one-way.ts checks
// them: the real tree keeps them, and each fails on a violation planted in a small tree of its own.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, it } from 'node:test';

const root = resolve(import.meta.dirname, '..');
const script = join(root, 'scripts/one-way.ts');

function check(dir: string): { status: number | null; out: string } {
  const res = spawnSync(process.execPath, ['--import', 'tsx', script, '--root', dir], { cwd: root, encoding: 'utf8' });
  return { status: res.status, out: `${res.stdout}${res.stderr}` };
}

const planted = mkdtempSync(join(tmpdir(), 'cardprogram-one-way-'));
after(() => rmSync(planted, { recursive: true, force: true }));

/** A tree of the files given, by their text. */
function plant(files: Record<string, string>): string {
  const dir = mkdtempSync(join(planted, 'tree-'));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

it('the tree keeps every one-way rule', () => {
  const { status, out } = check(root);
  assert.equal(status, 0, out);
});

it('an event written inline, outside src/callbacks/, fails', () => {
  for (const text of [
    "await tx.insertInto('callback_events').values(row).execute();",
    'await sql`insert into callback_events (id) values (${id})`.execute(tx);',
    "import { emitEvent } from '../callbacks/outbox.js';",
    'const url = await notifyUrlOf(ctx.tx, merchantId);',
  ]) {
    const { status, out } = check(plant({ 'src/disputes/store.ts': `${text}\n` }));
    assert.notEqual(status, 0, text);
    assert.match(out, /src\/disputes\/store\.ts:1: events-through-notifyMerchant/);
  }
  // notifyMerchant, eventParts, and the outbox itself pass.
  const { status, out } = check(
    plant({
      'src/cards/status.ts':
        "import { notifyMerchant } from '../callbacks/merchant-event.js';\nimport { eventParts } from '../callbacks/outbox.js';\n",
      'src/callbacks/outbox.ts': "await tx.insertInto('callback_events').values(row).execute();\n",
    }),
  );
  assert.equal(status, 0, out);
});

it('an audit record outside the runner fails, but for the files listed with their reason', () => {
  for (const text of ["import { recordAudit } from '../audit/trail.js';", "await tx.insertInto('audit_events').values(row).execute();"]) {
    const { status, out } = check(plant({ 'src/cli/commands/keys.ts': `${text}\n` }));
    assert.notEqual(status, 0, text);
    assert.match(out, /src\/cli\/commands\/keys\.ts:1: audit-through-the-runner/);
  }
  const { status, out } = check(
    plant({
      'src/runner.ts': "import { recordAudit } from './audit/trail.js';\n",
      'src/cards/verification.ts': "import { recordAudit } from '../audit/trail.js';\n",
    }),
  );
  assert.equal(status, 0, out);
});

it('the reaper, the worker and the foundation import no domain: their jobs are handed to them', () => {
  for (const [file, text] of [
    ['src/http/reaper.ts', "import { reapPage } from '../page/links.js';"],
    ['src/http/reaper.ts', "import type { PeriodicJob } from '../jobs/periodic.js';"],
    ['src/callbacks/manage.ts', "import { kycAutomation } from '../kyc/automation.js';"],
    ['src/crypto/reseal.ts', "import type { Services } from '../console/sessions.js';"],
  ] as const) {
    const { status, out } = check(plant({ [file]: `${text}\n` }));
    assert.notEqual(status, 0, text);
    assert.match(out, /jobs-handed-over/);
  }
  // A comment may name what the file must not do.
  const { status, out } = check(plant({ 'src/http/reaper.ts': "// not: import { reapPage } from '../page/links.js';\n" }));
  assert.equal(status, 0, out);
});

it('a read outside a transaction on database.db fails, but for src/db/ and the files listed with their reason', () => {
  for (const text of [
    "const row = await svc.database.db.selectFrom('cards').selectAll().executeTakeFirst();",
    'const db = svc.database.db;',
    'return listAudit(database.db, filter);',
  ]) {
    const { status, out } = check(plant({ 'src/console/queries.ts': `${text}\n` }));
    assert.notEqual(status, 0, text);
    assert.match(out, /src\/console\/queries\.ts:1: reads-through-database-read/);
  }
  const { status, out } = check(
    plant({
      'src/console/queries.ts': "const row = await svc.database.read((db) => db.selectFrom('cards').selectAll().executeTakeFirst());\n",
      'src/db/sweep.ts': "await database.db.deleteFrom('idempotency_keys').execute();\n",
      'src/services.ts': 'reads: () => replica?.db() ?? database.db,\n',
    }),
  );
  assert.equal(status, 0, out);
});

it('a transaction outside the runner fails, but for src/db/ and the infrastructure listed with its reason', () => {
  for (const text of [
    "await svc.database.withTx(async (tx) => tx.deleteFrom('cards').execute());",
    "await database.write((db) => db.updateTable('disputes').set(row).execute());",
    'await db.transaction().execute(async (tx) => run(tx));',
  ]) {
    const { status, out } = check(plant({ 'src/disputes/sandbox.ts': `${text}\n` }));
    assert.notEqual(status, 0, text);
    assert.match(out, /src\/disputes\/sandbox\.ts:1: transactions-through-the-runner/);
  }
  const { status, out } = check(
    plant({
      'src/runner.ts': 'result = await svc.database.withTx(effect);\n',
      'src/http/rate-limit.ts': 'const got = await this.database.withTx(take);\n',
    }),
  );
  assert.equal(status, 0, out);
});

it("a verb's context made by hand fails: the runner makes it (runVerb, runPrecheck)", () => {
  const text = 'return { svc, tx: db, now, actor: actorLabel(by), wake: { worker: false }, afterCommit: () => {} };';
  const { status, out } = check(plant({ 'src/three-ds/areq.ts': `${text}\n` }));
  assert.notEqual(status, 0);
  assert.match(out, /src\/three-ds\/areq\.ts:1: contexts-from-the-runner/);
  assert.equal(check(plant({ 'src/runner.ts': `${text}\n` })).status, 0);
});

it("a run's actor given as a label fails, but for the stored labels listed with their reason", () => {
  for (const text of ["await runVerb(svc, expireDispute, { input, actor: 'dispute-expiry', now });", 'actor: `operator:${email}`,']) {
    const { status, out } = check(plant({ 'src/disputes/expire.ts': `${text}\n` }));
    assert.notEqual(status, 0, text);
    assert.match(out, /src\/disputes\/expire\.ts:1: typed-actor/);
  }
  const { status, out } = check(
    plant({
      'src/disputes/expire.ts': "await runVerb(svc, expireDispute, { input, actor: system('dispute-expiry'), now });\n",
      // A card's status event keeps its own actor in the verb's input.
      'src/holders/review.ts': "input: { cardId, frozen: true, source: 'operator', actor: 'review' },\n",
      'src/cli/commands/review.ts': 'actor: `cli:${operatorName()}`,\n',
    }),
  );
  assert.equal(status, 0, out);
});

it('a message class that catches a lost claim itself, or an endpoint asked outside src/authorization-endpoint/, fails', () => {
  for (const [file, text, rule] of [
    ['src/card-network/reverse.ts', 'if (err instanceof LinkReplay) return first;', 'network-messages-once'],
    [
      'src/sandbox/authorize-with-endpoint.ts',
      "import { askEndpoint } from '../authorization-endpoint/ask.js';",
      'endpoint-asked-in-one-place',
    ],
  ] as const) {
    const { status, out } = check(plant({ [file]: `${text}\n` }));
    assert.notEqual(status, 0, text);
    assert.match(out, new RegExp(`${file.replaceAll('/', '\\/').replaceAll('.', '\\.')}:1: ${rule}`));
  }
  // The wrapper and the ask themselves pass.
  const { status, out } = check(
    plant({
      'src/card-network/once.ts': 'if (err instanceof LinkReplay) return first;\n',
      'src/authorization-endpoint/verdict.ts': "import { askEndpoint } from './ask.js';\n",
    }),
  );
  assert.equal(status, 0, out);
});
