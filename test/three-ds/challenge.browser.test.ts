// The challenge in a real browser (Debian's Chromium through playwright-core): a shop's checkout page
// on another origin (http://localhost:…, the ACS at http://127.0.0.1:…) opens it in an iframe by
// posting the creq, as a 3DS Server does; the cardholder types codes, cancels, waits for the app;
// the CRes comes back to the 3DS Server's notificationURL, the RReq goes to the DS. Every window
// size and language is shown once; screenshots are kept in test-artifacts/.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import type { FrameLocator, Page } from 'playwright-core';
import { openPayload } from '../../src/callbacks/outbox.js';
import { sendResults } from '../../src/three-ds/results.js';
import { randomStr } from '../helpers/app.js';
import { ARTIFACTS, browserPage, listenOnLoopback, skip } from '../helpers/browser.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card, notifyTo, stored } from './helpers/acs.js';
import { creq, cresProblems, directoryServer, rreqProblems, threeDsServer } from './helpers/challenge-sim.js';
import { areq, send } from './helpers/ds.js';

eachDialect('3-D Secure: the challenge in a real browser (Chromium), framed by a shop of another origin', (dialect) => {
  it('every window size and language; OTP wrong then right, cancel, expiry, a spent creq; out of band approved in the app', {
    skip,
  }, async (t) => {
    const now = { ms: Date.now() };
    const ds = await directoryServer(t);
    const { h, url } = await acs(t, dialect, { threeDs: { ds: { url: ds.url, cert: null, key: null } } as never }, { clock: () => now.ms });
    const base = await listenOnLoopback(h.app);
    h.app.svc.config.publicUrl = base;
    await notifyTo(t, h);
    const c = await card(h);
    const server = await threeDsServer(t);
    const db = h.db.database.db;

    const start = async (lang = 'fr-FR') => {
      const request = {
        ...areq({
          pan: c.pan,
          expiry: c.expiry,
          amount: '4990',
          challengeInd: '04',
          merchantName: 'Fahrrad Haus',
          notificationURL: server.notificationURL,
        }),
        browserLanguage: lang,
      };
      const ares = (await send(url, request)).json ?? {};
      assert.equal(ares.transStatus, 'C', JSON.stringify(ares));
      assert.equal(ares.acsURL, `${base}/3ds/challenge`);
      return ares;
    };
    const codeOf = async (acsTransID: unknown) => {
      const events = await db.selectFrom('callback_events').selectAll().where('type', '=', 'threeDs.otp').execute();
      const mine = events.map((e) => JSON.parse(openPayload(h.app.svc.box, e))).filter((p) => p.acsTransID === acsTransID);
      return String(mine.at(-1)?.code);
    };

    const { browser, page, cspErrors } = await browserPage(t, { viewport: { width: 900, height: 760 }, locale: 'fr-FR' });
    mkdirSync(ARTIFACTS, { recursive: true });
    const shot = (p: Page, name: string) => p.screenshot({ path: join(ARTIFACTS, `3ds-${name}.png`) });
    const open = async (ares: Record<string, unknown>, size = '05'): Promise<FrameLocator> => {
      await page.goto(server.checkoutUrl(String(ares.acsURL), creq(ares, size), 'c2Vzc2lvbg'));
      return page.frameLocator('iframe[name="challenge"]');
    };
    const result = (frame: FrameLocator) => frame.locator('#result').textContent();

    // Every window size, each in another language: the page fits its box (no horizontal scroll).
    const sizes = [
      ['01', 'en-GB', 'Confirm your payment', 'Confirm'],
      ['02', 'de-DE', 'Zahlung bestätigen', 'Bestätigen'],
      ['03', 'fr-FR', 'Confirmez votre paiement', 'Confirmer'],
      ['04', 'es-ES', 'Confirme su pago', 'Confirmar'],
      ['05', 'it-IT', 'Conferma il pagamento', 'Conferma'],
    ] as const;
    for (const [size, lang, heading, button] of sizes) {
      const ares = await start(lang);
      const frame = await open(ares, size);
      await frame.getByRole('heading', { name: heading }).waitFor();
      await frame.getByRole('button', { name: button, exact: true }).waitFor();
      assert.ok(await frame.getByLabel(/Code|Codice|Código/).isVisible());
      const overflow = await frame.locator('body').evaluate((b) => b.scrollWidth > b.ownerDocument.documentElement.clientWidth);
      assert.equal(overflow, false, `window ${size} fits its width`);
      await shot(page, `window-${size}-${lang}`);
      // Each ended by its cardholder, so the card's next challenges are not held back.
      await frame.getByRole('button', { name: /Cancel|Abbrechen|Annuler|Cancelar|Annulla/ }).click();
      await page.frameLocator('iframe[name="challenge"]').locator('#result').waitFor();
    }
    assert.equal(server.cres.length, 5);
    assert.ok(server.cres.every((r) => r.cres.transStatus === 'N' && r.threeDSSessionData === 'c2Vzc2lvbg'));

    // OTP: a wrong code (announced), then the right one: the CRes reaches the 3DS Server, Y.
    const a = await start();
    let frame = await open(a, '03');
    const right = await codeOf(a.acsTransID);
    const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0');
    await frame.getByLabel('Code').fill(wrong);
    await frame.getByRole('button', { name: 'Confirmer' }).click();
    const alert = page.frameLocator('iframe[name="challenge"]').getByRole('alert');
    assert.match(String(await alert.textContent()), /Essais restants : 2/);
    await shot(page, 'otp-wrong-code');
    frame = page.frameLocator('iframe[name="challenge"]');
    await frame.getByLabel('Code').fill(right);
    await frame.getByRole('button', { name: 'Confirmer' }).click();
    assert.equal(await result(page.frameLocator('iframe[name="challenge"]')), 'CRes received: Y');
    await shot(page, 'otp-done');
    const last = server.cres.at(-1)?.cres ?? {};
    assert.deepEqual(cresProblems(last), []);
    assert.deepEqual([last.acsTransID, last.transStatus], [a.acsTransID, 'Y']);
    assert.equal((await stored(h, String(a.acsTransID))).trans_status, 'Y');

    // The same creq again: an error in the frame, and nothing changes.
    frame = await open(a, '03');
    await frame.getByText(/déjà été utilisée/).waitFor();
    await shot(page, 'spent-creq');
    assert.equal(server.cres.length, 6);

    // Expiry: the code typed after the 5 minutes ends it N/14.
    const e = await start();
    frame = await open(e);
    await frame.getByLabel('Code').waitFor(); // opened before the clock moves
    now.ms += 5 * 60_000;
    await frame.getByLabel('Code').fill(await codeOf(e.acsTransID));
    await frame.getByRole('button', { name: 'Confirmer' }).click();
    assert.equal(await result(page.frameLocator('iframe[name="challenge"]')), 'CRes received: N');
    assert.equal((await stored(h, String(e.acsTransID))).trans_status_reason, '14');

    // Out of band: the page waits (its meta refresh), the merchant's app approves, the page returns to the shop.
    await h.call('/api/network/threeDsSettingsUpdate.html', { challengeMethod: 'oob', randomStr: randomStr() });
    const o = await start('de-DE');
    frame = await open(o, '02');
    await frame.getByText('Warten auf Ihre Bestätigung…').waitFor();
    await shot(page, 'oob-waiting');
    const answered = await h.call('/api/network/threeDsChallengeRespond.html', {
      acsTransID: o.acsTransID,
      result: 'approved',
      randomStr: randomStr(),
    });
    assert.equal(answered.status, 200);
    await page.frameLocator('iframe[name="challenge"]').locator('#result').waitFor({ timeout: 10_000 });
    assert.equal(await result(page.frameLocator('iframe[name="challenge"]')), 'CRes received: Y');

    // Out of band, cancelled from the page.
    const x = await start('de-DE');
    frame = await open(x, '02');
    await frame.getByRole('button', { name: 'Abbrechen' }).click();
    assert.equal(await result(page.frameLocator('iframe[name="challenge"]')), 'CRes received: N');
    assert.equal((await stored(h, String(x.acsTransID))).challenge_cancel, '01');

    assert.deepEqual(cspErrors, [], 'the page needs nothing its CSP forbids');
    // Closed now: the app's own close (registered before) would wait for the browser's idle connections.
    await browser.close();
    // Every result reached the DS, each RReq in EMVCo's format.
    assert.equal(await sendResults(h.app.svc), 9);
    assert.equal(ds.rreqs.length, 9);
    for (const r of ds.rreqs) assert.deepEqual(rreqProblems(r), []);
  });
});
