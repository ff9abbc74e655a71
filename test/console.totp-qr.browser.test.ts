import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import jsQRModule from 'jsqr';
import { createOperator } from '../src/console/accounts.js';
import { codeAt, otpauthUrl, stepOf } from '../src/console/totp.js';
import { runVerb } from '../src/runner.js';
import { ARTIFACTS, browserPage, listenOnLoopback, skip } from './helpers/browser.js';
import { buildConsole } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';

/**
 * Issue 43.11: the TOTP set-up showed the key and the otpauth:// address as text only. The page now
 * draws the address as a QR code (an inline SVG made on the server); here Chromium renders it, the
 * screenshot is kept, and a QR decoder that knows nothing of this code reads the address back.
 */
eachDialect('the console’s TOTP set-up in Chromium: a QR code of the otpauth:// address', (dialect) => {
  it('the set-up page shows a QR code that decodes to the account’s otpauth:// address, within the CSP; the code it gives logs the set-up in', {
    skip,
  }, async (t) => {
    const h = await buildConsole(t, dialect);
    const base = await listenOnLoopback(h.app);
    const made = await runVerb(h.app.svc, createOperator, { input: { email: 'grace@example.com', role: 'admin' }, actor: 'test' });
    const { context, page, cspErrors } = await browserPage(t, { viewport: { width: 900, height: 1100 } });
    await page.goto(`${base}/console/setup?token=${made.setupToken}`);
    const secret = ((await page.getByLabel('Key').textContent()) ?? '').replace(/\s/g, '');
    assert.match(secret, /^[A-Z2-7]{32}$/);

    const qr = page.getByRole('img', { name: 'QR code for the authenticator app' });
    await qr.waitFor();
    const box = await qr.boundingBox();
    assert.ok(box && box.width >= 150 && box.height === box.width, `a square code big enough to scan: ${JSON.stringify(box)}`);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'console-totp-qr.png'), fullPage: true });
    const png = await qr.screenshot({ path: join(ARTIFACTS, 'console-totp-qr-code.png') });

    // The screenshot's pixels (decoded by Chromium on a blank page of its own: the console's CSP is not the test's business), read by jsQR.
    const blank = await context.newPage();
    // (A string, not a function: the test is compiled without the DOM's types.)
    const pixels = (await blank.evaluate(`(async () => {
      const img = new Image();
      img.src = 'data:image/png;base64,${png.toString('base64')}';
      await img.decode();
      const canvas = document.createElement('canvas');
      canvas.width = img.width;
      canvas.height = img.height;
      const g = canvas.getContext('2d');
      g.drawImage(img, 0, 0);
      const { data, width, height } = g.getImageData(0, 0, img.width, img.height);
      return { rgba: Array.from(data), width, height };
    })()`)) as { rgba: number[]; width: number; height: number };
    // jsqr is CommonJS: its function is module.exports and, as its types say, its default.
    const decoded = jsQRModule.default(Uint8ClampedArray.from(pixels.rgba), pixels.width, pixels.height);
    assert.ok(decoded, 'jsQR finds a QR code in the screenshot');
    assert.equal(decoded.data, otpauthUrl(secret, 'grace@example.com'));
    assert.match(decoded.data, new RegExp(`^otpauth://totp/cardprogram%3Agrace%40example\\.com\\?secret=${secret}&issuer=cardprogram&`));
    assert.deepEqual(cspErrors, [], 'the inline SVG needs nothing the CSP forbids');

    // The key the code carries is the account's: a code made from what was scanned completes the set-up.
    const scanned = new URL(decoded.data).searchParams.get('secret') as string;
    await page.getByLabel('New password').fill('correct horse battery staple');
    await page.getByLabel('The same again').fill('correct horse battery staple');
    await page.getByLabel('The code the app shows now').fill(codeAt(scanned, stepOf(h.now.ms)));
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: 'Your account is ready' }).waitFor();
  });
});
