// The console and wallet tokens (decisions §15.6): a card's page lists its tokens with their device
// and history; support and admin operators suspend, resume and delete them (each in the audit trail,
// told to the TSP and to the merchant, as changeTokenStatus does for everyone); a viewer sees them
// and is refused every action (403, nothing written). Both databases.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { OPERATOR_ROLES } from '../../src/db/schema.js';
import { updateMerchant } from '../../src/merchants/manage.js';
import { runVerb } from '../../src/runner.js';
import { randomStr } from '../helpers/app.js';
import { fundedCard } from '../helpers/cards.js';
import {
  buildConsole,
  type ConsoleHarness,
  type ConsoleSessionCookies,
  consoleGet,
  consolePost,
  login,
  makeOperator,
} from '../helpers/console.js';
import { eachDialect } from '../helpers/dialects.js';

async function tokenOf(h: ConsoleHarness, cardId: string, extra: Record<string, unknown> = {}) {
  const res = await h.call('/sandbox/tokens/provision', {
    cardId,
    walletProvider: 'apple_pay',
    device: { type: 'phone', name: 'Ana’s <iPhone>' },
    ...extra,
    randomStr: randomStr(),
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.model as { tokenId: string; tokenReferenceId: string };
}

const statusOf = async (h: ConsoleHarness, tokenId: string) =>
  await h.db.database.db.selectFrom('tokens').select(['status', 'suspended_by']).where('id', '=', tokenId).executeTakeFirstOrThrow();

eachDialect('wallet tokens in the console (decisions §15.6)', (dialect) => {
  it('a card’s page shows its tokens, devices and history; support suspends, resumes and deletes (audited, TSP and merchant told); a viewer cannot act', async (t) => {
    const h = await buildConsole(t, dialect);
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, notifyUrl: 'http://127.0.0.1:9/hooks' }, actor: 'test' });
    const { cardId } = await fundedCard(h, { topUp: 20 });
    const token = await tokenOf(h, cardId);
    const pending = await tokenOf(h, cardId, { walletProvider: 'google_pay', walletRiskScore: 5 });
    const sessions = new Map<string, ConsoleSessionCookies>();
    for (const role of OPERATOR_ROLES) sessions.set(role, await login(h, await makeOperator(h, `${role}@example.com`, role)));
    const viewer = sessions.get('viewer') as ConsoleSessionCookies;
    const support = sessions.get('support') as ConsoleSessionCookies;

    const page = await consoleGet(h, viewer, `/console/cards/${cardId}`);
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /<h2>Wallet tokens<\/h2>/);
    assert.ok(page.body.includes(token.tokenId) && page.body.includes(pending.tokenId));
    assert.match(page.body, /Apple Pay/);
    assert.match(page.body, /Google Pay/);
    assert.ok(page.body.includes('Ana’s &#60;iPhone&#62; · phone'), 'the device, escaped');
    assert.ok(!page.body.includes('<iPhone>'));
    assert.match(page.body, /class="pill[^"]*"[^>]*>pending</);
    assert.ok(!page.body.includes(`/console/tokens/${token.tokenId}/suspend`), 'a viewer is shown no action');
    // The search finds a token by its id or by the TSP's reference, and opens its card's page.
    for (const q of [token.tokenId, token.tokenReferenceId]) {
      const found = await consoleGet(h, viewer, `/console/search?q=${encodeURIComponent(q)}`);
      assert.equal(found.statusCode, 303, q);
      assert.equal(found.headers.location, `/console/cards/${cardId}`);
    }
    const supportPage = await consoleGet(h, support, `/console/cards/${cardId}`);
    assert.ok(supportPage.body.includes(`/console/tokens/${token.tokenId}/suspend`));
    assert.ok(!supportPage.body.includes(`/console/tokens/${token.tokenId}/resume`), 'active: no resume');

    // A viewer is refused each action: 403, nothing written.
    const audits = async () => (await h.db.database.db.selectFrom('audit_events').select('action').execute()).map((a) => a.action);
    const calls = async () => await h.db.database.db.selectFrom('tsp_calls').select(['token_id', 'action']).orderBy('created_at').execute();
    const before = { audit: await audits(), calls: await calls(), status: await statusOf(h, token.tokenId) };
    for (const action of ['suspend', 'resume', 'delete']) {
      const res = await consolePost(h, viewer, `/console/tokens/${token.tokenId}/${action}`, { reason: 'x', confirm: token.tokenId });
      assert.equal(res.statusCode, 403, action);
      assert.match(res.body, /may not suspend, resume or delete wallet tokens/);
    }
    assert.deepEqual({ audit: await audits(), calls: await calls(), status: await statusOf(h, token.tokenId) }, before);

    // Support: suspend with a reason → suspended by the operator, told to the TSP, recorded.
    const suspended = await consolePost(h, support, `/console/tokens/${token.tokenId}/suspend`, { reason: 'phone reported stolen' });
    assert.equal(suspended.statusCode, 303, suspended.body);
    assert.equal(suspended.headers.location, `/console/cards/${cardId}?done=token-suspend`);
    assert.deepEqual(await statusOf(h, token.tokenId), { status: 'suspended', suspended_by: 'operator' });
    const audit = await h.db.database.db
      .selectFrom('audit_events')
      .selectAll()
      .where('action', '=', 'token.suspend')
      .executeTakeFirstOrThrow();
    assert.equal(audit.target, token.tokenId);
    assert.deepEqual(JSON.parse(audit.before_json ?? ''), { status: 'active', suspendedBy: null, merchantId: h.merchant.appId });
    assert.equal(JSON.parse(audit.after_json ?? '').status, 'suspended');
    const shown = await consoleGet(h, support, `/console/cards/${cardId}?done=token-suspend`);
    assert.match(shown.body, /The token is suspended/);
    assert.match(shown.body, /by the operator<\/span>: phone reported stolen/, 'the history names who and why');
    // The merchant is told (token.updated) and the TSP is to be (a tsp_calls row).
    const events = await h.db.database.db
      .selectFrom('callback_events')
      .select(['type', 'subject'])
      .where('type', '=', 'token.updated')
      .execute();
    assert.ok(events.some((e) => e.subject === `token:${token.tokenId}`));
    assert.deepEqual(
      (await calls()).filter((c) => c.token_id === token.tokenId).map((c) => c.action),
      ['suspend'],
    );
    // Suspending it again: answered as it is (no second call to the TSP).
    const twice = await consolePost(h, support, `/console/tokens/${token.tokenId}/suspend`, {});
    assert.equal(twice.statusCode, 303);
    assert.deepEqual(
      (await calls()).filter((c) => c.token_id === token.tokenId).map((c) => c.action),
      ['suspend'],
    );
    // A transition not allowed (a pending token cannot be suspended) is shown, and nothing written.
    const notAllowed = await consolePost(h, support, `/console/tokens/${pending.tokenId}/suspend`, {});
    assert.equal(notAllowed.statusCode, 409);
    assert.match(notAllowed.body, /Nothing was changed/);

    // A suspended token's payments decline (05 on the link, 2734 in the sandbox).
    const declined = await h.call('/sandbox/network/authorize', { cardId, amount: 1, tokenId: token.tokenId, randomStr: randomStr() });
    assert.equal(declined.body.detail?.declineReason, 'token_inactive');

    // Resume while the card is frozen: refused (the card's unfreeze decides); once active again: resumed.
    assert.equal((await h.call('/api/network/cardFreeze.html', { cardId, randomStr: randomStr() })).status, 200);
    const whileFrozen = await consolePost(h, support, `/console/tokens/${token.tokenId}/resume`, {});
    assert.equal(whileFrozen.statusCode, 409);
    assert.match(whileFrozen.body, /card is frozen/);
    assert.equal((await h.call('/api/network/cardUnfreeze.html', { cardId, randomStr: randomStr() })).status, 200);
    const resumed = await consolePost(h, support, `/console/tokens/${token.tokenId}/resume`, { reason: 'found' });
    assert.equal(resumed.statusCode, 303, resumed.body);
    assert.equal((await statusOf(h, token.tokenId)).status, 'active');
    assert.equal(
      (await h.call('/sandbox/network/authorize', { cardId, amount: 1, tokenId: token.tokenId, randomStr: randomStr() })).status,
      200,
    );

    // Delete: the token's id typed to confirm; an admin may too.
    const unconfirmed = await consolePost(h, support, `/console/tokens/${pending.tokenId}/delete`, { confirm: 'no' });
    assert.equal(unconfirmed.statusCode, 400);
    assert.equal((await statusOf(h, pending.tokenId)).status, 'pending');
    const admin = sessions.get('admin') as ConsoleSessionCookies;
    const deleted = await consolePost(h, admin, `/console/tokens/${pending.tokenId}/delete`, {
      confirm: pending.tokenId,
      reason: 'not the cardholder',
    });
    assert.equal(deleted.statusCode, 303, deleted.body);
    assert.equal((await statusOf(h, pending.tokenId)).status, 'deleted');
    const after = await consoleGet(h, admin, `/console/cards/${cardId}`);
    assert.ok(!after.body.includes(`/console/tokens/${pending.tokenId}/`), 'a deleted token has no action');
    assert.deepEqual((await audits()).filter((a) => a.startsWith('token.')).sort(), [
      'token.delete',
      'token.resume',
      'token.suspend',
      'token.suspend',
    ]);
    const unknown = await consolePost(h, admin, '/console/tokens/tok_nope/suspend', {});
    assert.equal(unknown.statusCode, 404);
  });
});
