import assert from 'node:assert/strict';
import { hostname, userInfo } from 'node:os';
import { it } from 'node:test';
import { sql } from 'kysely';
import { listAudit, redact } from '../src/audit/trail.js';
import { IDENTITY_FIELDS, KYC_SEALED_FIELDS } from '../src/codes/sealed-fields.js';
import { runVerb } from '../src/runner.js';
import { build, randomStr } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { eachDialect } from './helpers/dialects.js';

// Issue 17, the audit trail: every change an operator makes with the CLI is recorded, append-only,
// with who, from where, what, to what, before and after; `cardprogram audit list` reads it.

eachDialect('the operators’ audit trail', (dialect) => {
  it('CLI changes are recorded with who, where, before and after (secrets redacted); audit list filters them', async (t) => {
    const h = await build(t, dialect);
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
    const { cardId } = await fundedCard(h, { topUp: 5 });
    const appId = h.merchant.appId;
    for (const args of [
      ['merchant', 'update', appId, '--notify-url', 'https://acme.example/hooks'],
      ['card', 'freeze', cardId, '--reason', 'fraud check'],
      ['merchant', 'roll', appId, '--webhook-secret'],
    ]) {
      const res = await runCli(args, env);
      assert.equal(res.code, 0, res.stderr);
    }
    const list = await runCli(['audit', 'list', '--json'], env);
    assert.equal(list.code, 0, list.stderr);
    const entries = JSON.parse(list.stdout) as Array<Record<string, any>>;
    assert.deepEqual(
      entries.map((e) => [e.action, e.target]),
      [
        ['merchant.roll', appId],
        ['card.freeze', cardId],
        ['merchant.update', appId],
      ],
      'newest first',
    );
    for (const e of entries) {
      assert.deepEqual([e.actor, e.origin, e.source], [userInfo().username, hostname(), 'cli']);
      assert.match(e.at, /^\d{4}-\d\d-\d\dT/);
    }
    const [roll, freeze, update] = entries;
    assert.equal(update?.before.notifyUrl, null);
    assert.equal(update?.after.notifyUrl, 'https://acme.example/hooks');
    assert.deepEqual(freeze?.before, { status: 'active', statusSource: null, statusReason: null });
    assert.deepEqual([freeze?.after.status, freeze?.after.statusSource, freeze?.after.statusReason], ['frozen', 'operator', 'fraud check']);
    assert.deepEqual(roll?.after, { appId, secret: '[redacted]', webhookSecret: '[redacted]' });
    assert.doesNotMatch(list.stdout, /sk_test_|whsec_/, 'no secret in the trail');

    const filtered = await runCli(['audit', 'list', '--action', 'card.freeze', '--json'], env);
    assert.deepEqual(
      (JSON.parse(filtered.stdout) as Array<{ target: string }>).map((e) => e.target),
      [cardId],
    );
    const text = await runCli(['audit', 'list', '--target', appId, '--limit', '1'], env);
    assert.match(text.stdout, new RegExp(`merchant\\.roll ${appId}\\n`));
    const bad = await runCli(['audit', 'list', '--since', 'yesterday'], env);
    assert.deepEqual([bad.code, bad.stderr], [1, 'cardprogram: --since must be a day (yyyy-MM-dd) or an ISO 8601 moment\n']);
  });

  it('append-only: the database refuses to change or delete a record, and a failed change records nothing', async (t) => {
    const h = await build(t, dialect);
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
    assert.equal((await runCli(['merchant', 'update', h.merchant.appId, '--rate-limit', '50'], env)).code, 0);
    const db = h.db.database.db;
    await assert.rejects(sql`update audit_events set actor = 'someone else'`.execute(db), /append-only/);
    await assert.rejects(sql`delete from audit_events`.execute(db), /append-only/);
    const failed = await runCli(['merchant', 'update', h.merchant.appId, '--rate-limit', '0'], env);
    assert.equal(failed.code, 1);
    const rows = await db.selectFrom('audit_events').select(['action', 'actor']).execute();
    assert.deepEqual(rows, [{ action: 'merchant.update', actor: userInfo().username }]);
  });

  it('a merchant’s audited write (cardClose) is recorded with the merchant as the actor, once; an unaudited one (cardFreeze) is not', async (t) => {
    // Issue 27.2: signedWrite's audit option, through the real route.
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 5 });
    const other = await fundedCard(h, { topUp: 5 });
    const frozen = await h.call('/api/network/cardFreeze.html', { cardId: other.cardId, randomStr: randomStr() });
    assert.equal(frozen.status, 200, JSON.stringify(frozen.body));
    const body = { cardId, reason: 'customer left', randomStr: randomStr() };
    const res = await h.call('/api/network/cardClose.html', body);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const again = await h.call('/api/network/cardClose.html', body);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    const entries = await listAudit(h.db.database.db);
    assert.equal(entries.length, 1, JSON.stringify(entries));
    const [e] = entries;
    assert.deepEqual([e?.source, e?.actor, e?.action, e?.target], ['merchant', h.merchant.appId, 'card.close', cardId]);
    assert.ok(e?.origin, 'the request’s address');
    assert.deepEqual(e?.before, { status: 'active', statusSource: null, statusReason: null });
    const after = (e?.after ?? {}) as Record<string, unknown>;
    assert.deepEqual([after.status, after.statusSource], ['closed', 'merchant']);
  });

  it('an audited run needs a typed actor: a bare label records nothing and runs nothing', async (t) => {
    const h = await build(t, dialect);
    let ran = false;
    const verb = async () => {
      ran = true;
      return null;
    };
    await assert.rejects(runVerb(h.app.svc, verb, { input: {}, actor: 'someone', audit: { action: 'x.y', target: 't' } }), /typed actor/);
    assert.equal(ran, false);
    assert.deepEqual(await listAudit(h.db.database.db), []);
  });
});

it('redaction: e-mail and every sealed identity field of a cardholder and a KYC request, at any depth', () => {
  const fields = [...new Set(['email', ...IDENTITY_FIELDS, ...KYC_SEALED_FIELDS])];
  const record = Object.fromEntries(fields.map((f) => [f, 'x']));
  const out = redact({ ...record, nested: { list: [record] }, kept: 'y' }) as Record<string, unknown>;
  for (const f of fields) assert.equal(out[f], '[redacted]', f);
  const inner = (out.nested as { list: Array<Record<string, unknown>> }).list[0] ?? {};
  for (const f of fields) assert.equal(inner[f], '[redacted]', `nested ${f}`);
  assert.equal(out.kept, 'y');
});
