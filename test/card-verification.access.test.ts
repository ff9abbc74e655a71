import assert from 'node:assert/strict';
import { it } from 'node:test';
import { formToken } from '../src/page/links.js';
import { holderBody, randomStr } from './helpers/app.js';
import { ok } from './helpers/cards.js';
import { buildConsole, type ConsoleHarness, consoleGet, consolePost, login, makeOperator } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer } from './helpers/link.js';

/**
 * Who lifts a `security` freeze (decisions §12.13): the merchant or the operator, never the
 * cardholder's page (a thief who has the page would lift it); and what the console and the card
 * page say of it.
 */

/** A cardholder with a page session and a funded card, frozen for security by 5 wrong CVV2s over the link. */
async function securityFrozen(h: ConsoleHarness, t: Parameters<typeof buildConsole>[0]) {
  const email = 'carla@example.com';
  const holder = await h.call('/api/network/holderCreate.html', holderBody({ email }));
  const holderId = holder.body.holderId as string;
  await ok(h, '/sandbox/holder/review', { holderId, auditStatus: 2 });
  const cardId = (await ok(h, '/api/network/cardApply.html', { holderId, currency: 'EUR' })).cardId as string;
  await ok(h, '/api/network/cardTopUp.html', { cardId, amount: 50 });
  const card = await cardSecrets(h, cardId);
  const link = await linkOf(t, h);
  const peer = await Peer.open(t, link.port);
  const wrong = ['000', '001', '002', '003', '004', '005'].filter((c) => c !== card.cvv).slice(0, 5);
  for (const cvv of wrong) assert.equal((await peer.ask(authorizationRequest({ ...card, cvv }))).fields.get(39), '82');
  const pageLink = new URL((await h.call('/open/merchant/api/v2', { email })).body.model.webUrl);
  const opened = await h.app.inject({ method: 'GET', url: `${pageLink.pathname}${pageLink.search}` });
  const cookie = String(opened.headers['set-cookie']).split(';')[0] ?? '';
  const page = (action: string) =>
    h.app.inject({
      method: 'POST',
      url: `/page/cards/${cardId}/${action}`,
      payload: `form=${formToken(cookie.split('=')[1] ?? '')}`,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    });
  return { cardId, card, peer, page, cookie };
}

async function status(h: ConsoleHarness, cardId: string) {
  const row = await h.db.database.db
    .selectFrom('cards')
    .select(['status', 'status_source'])
    .where('id', '=', cardId)
    .executeTakeFirstOrThrow();
  return [row.status, row.status_source];
}

const statusEvents = async (h: ConsoleHarness) =>
  (await h.db.database.db.selectFrom('callback_events').select('payload').where('type', '=', 'card.status').execute()).length;

eachDialect('card verification: who lifts a security freeze', (dialect) => {
  it('the cardholder’s page cannot lift it (nor take it over), and writes nothing; the merchant can', async (t) => {
    const h = await buildConsole(t, dialect);
    await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
    const { cardId, page, cookie } = await securityFrozen(h, t);
    assert.deepEqual(await status(h, cardId), ['frozen', 'security']);
    const shown = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } });
    assert.match(shown.body, /Frozen for your protection after wrong card details were entered several times/);
    assert.doesNotMatch(shown.body, /Unfreeze card/);
    const events = await statusEvents(h);

    const unfreeze = await page('unfreeze');
    assert.equal(unfreeze.statusCode, 409, unfreeze.body);
    assert.match(unfreeze.body, /only they can unfreeze it/);
    assert.equal((await page('freeze')).statusCode, 303, 'a freeze is answered as is');
    assert.deepEqual(await status(h, cardId), ['frozen', 'security']);
    assert.equal(await statusEvents(h), events, 'nothing written');
    // The merchant's own freeze does not take it over either; its unfreeze lifts it.
    assert.equal((await ok(h, '/api/network/cardFreeze.html', { cardId, reason: 'checking' })).statusSource, 'security');
    const lifted = await ok(h, '/api/network/cardUnfreeze.html', { cardId });
    assert.deepEqual([lifted.status, lifted.statusSource], ['active', null]);
    assert.equal(await statusEvents(h), events + 1);
  });

  it('the operator lifts it in the console, which shows the freeze and the declines by reason', async (t) => {
    const h = await buildConsole(t, dialect);
    const { cardId, card, peer } = await securityFrozen(h, t);
    const s = await login(h, await makeOperator(h, 'ada@example.com', 'admin'));
    const cardPage = (await consoleGet(h, s, `/console/cards/${cardId}`)).body;
    assert.match(cardPage, /frozen<\/span> for security: 5 card verification failures/);
    assert.match(cardPage, /5 of 5 failures/);
    assert.equal(cardPage.match(/cvv2_mismatch <span class="muted">cvv2: not the card’s CVV2<\/span>/g)?.length, 5);
    const other = await h.call('/api/network/cardUnfreeze.html', { cardId, randomStr: randomStr() }, { merchant: await h.newMerchant() });
    assert.deepEqual([other.status, other.body.code], [404, '2648'], 'another merchant’s card is unknown to it');
    assert.equal((await consolePost(h, s, `/console/cards/${cardId}/unfreeze`)).statusCode, 303);
    assert.deepEqual(await status(h, cardId), ['active', null]);
    assert.match((await consoleGet(h, s, `/console/cards/${cardId}`)).body, /no recent failures/);
    assert.equal((await peer.ask(authorizationRequest(card))).fields.get(39), '00', 'the right data is approved again');
  });
});
