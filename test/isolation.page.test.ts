import assert from 'node:assert/strict';
import { it } from 'node:test';
import { formToken } from '../src/page/links.js';
import { b64, build, holderBody, type TestMerchant } from './helpers/app.js';
import { ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';
import { assertUnchanged, comparable, snapshot } from './helpers/snapshots.js';
import { APPLY, CREATE, HOLDER_REVIEW, LINK, lookalike, tenant } from './helpers/tenant.js';

/**
 * Tenant isolation on the login-free page: another merchant's link for the same e-mail shows
 * nothing of this merchant's cardholder, and its session reaches none of its cards.
 */

eachDialect('tenant isolation of the login-free page', (dialect) => {
  it('the login-free page: another merchant’s link for this cardholder’s e-mail shows nothing of it, and its session reaches none of its cards', async (t) => {
    const h = await build(t, dialect);
    const a = await tenant(h, h.merchant);
    const page = async (m: TestMerchant, email: string) => {
      const link = await h.call(LINK, { email }, { merchant: m });
      assert.equal(link.status, 200, JSON.stringify(link.body));
      const webUrl = new URL(link.body.model.webUrl);
      const opened = await h.app.inject({ method: 'GET', url: `${webUrl.pathname}${webUrl.search}` });
      assert.equal(opened.statusCode, 303);
      const cookie = String(opened.headers['set-cookie']).split(';')[0] ?? '';
      const view = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } });
      return { link, cookie, view, form: formToken(cookie.split('=')[1] ?? '') };
    };
    const masked = (s: string, form: string) => s.replaceAll(form, '<form>');

    // The merchant's own link shows its cardholder and card: the e-mail is what finds them.
    const own = await page(h.merchant, a.email);
    assert.match(own.view.body, /Alice Schmidt/);
    assert.ok(own.view.body.includes(a.cardId));

    await t.test('a merchant without such a cardholder: the link and the page are those of an unknown e-mail', async () => {
      const b = await h.newMerchant({ loginFree: true });
      const unknown = lookalike(a.email);
      const before = await snapshot(h, b.appId);
      const foreign = await page(b, a.email);
      const fresh = await page(b, unknown);
      assert.deepEqual(comparable(foreign.link, a.email, ['model.webUrl']), comparable(fresh.link, unknown, ['model.webUrl']));
      assert.equal(foreign.view.statusCode, 200);
      assert.match(foreign.view.body, /No card yet/);
      assert.deepEqual(
        comparable(
          { status: foreign.view.statusCode, body: masked(foreign.view.body, foreign.form), headers: foreign.view.headers },
          a.email,
        ),
        comparable({ status: fresh.view.statusCode, body: masked(fresh.view.body, fresh.form), headers: fresh.view.headers }, unknown),
      );
      assertUnchanged(before, await snapshot(h, b.appId), 'another merchant’s page link');
    });

    await t.test(
      'a merchant with its own cardholder of the same e-mail: its page shows only its own; A’s card is "not found" there',
      async () => {
        const b = await h.newMerchant({ loginFree: true });
        const created = await h.call(CREATE, holderBody({ email: a.email, firstName: b64('Bruno'), lastName: b64('Keller') }), {
          merchant: b,
        });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        await ok(h, HOLDER_REVIEW, { holderId: created.body.holderId, auditStatus: 2 }, b);
        const own = await ok(h, APPLY, { holderId: created.body.holderId, currency: 'EUR' }, b);
        const session = await page(b, a.email);
        assert.match(session.view.body, /Bruno Keller/);
        assert.ok(session.view.body.includes(own.cardId));
        assert.doesNotMatch(session.view.body, /Alice|Schmidt/);
        assert.ok(!session.view.body.includes(a.cardId) && !session.view.body.includes(a.card2Id));
        // "I don't recognise this" on one of A's purchases (issue 29.7) too: as unknown, nothing written.
        for (const action of ['reveal', 'freeze', 'unfreeze', `purchases/${a.authId}/dispute`]) {
          const before = await snapshot(h, b.appId);
          const post = (cardId: string) =>
            h.app.inject({
              method: 'POST',
              url: `/page/cards/${cardId}/${action}`,
              payload: `form=${session.form}`,
              headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
            });
          const unknown = lookalike(a.cardId);
          const foreign = await post(a.cardId);
          const fresh = await post(unknown);
          assert.equal(fresh.statusCode, 404, action);
          assert.deepEqual(
            comparable({ status: foreign.statusCode, body: foreign.body, headers: foreign.headers }, a.cardId),
            comparable({ status: fresh.statusCode, body: fresh.body, headers: fresh.headers }, unknown),
            action,
          );
          assertUnchanged(before, await snapshot(h, b.appId), `${action} of another merchant’s card on the page`);
        }
        // The session still works for its own card: the refusals above were not a broken form.
        const mine = await h.app.inject({
          method: 'POST',
          url: `/page/cards/${own.cardId}/reveal`,
          payload: `form=${session.form}`,
          headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        });
        assert.equal(mine.statusCode, 200);
      },
    );
  });
});
