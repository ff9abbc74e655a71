import assert from 'node:assert/strict';
import { generateKeyPairSync, sign as rsaSign } from 'node:crypto';
import { it } from 'node:test';
import { hmacSign, signingString } from '../src/http/signing.js';
import { createMerchant } from '../src/merchants/create.js';
import { runVerb } from '../src/runner.js';
import { build, type Reply, sign } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';
import { OPERATIONS } from './helpers/operations.js';
import { assertFailure, assertSuccess, assertUnchanged, snapshot } from './helpers/snapshots.js';
import { type Body, lookalike, tenant } from './helpers/tenant.js';

/**
 * Authentication, applied to every signed operation from one table (test/helpers/operations.ts):
 * bad authentication and replays are refused with the documented envelope, and write nothing.
 */
function flip(hex: string): string {
  return `${hex.slice(0, -1)}${hex.endsWith('0') ? '1' : '0'}`;
}

eachDialect('authentication of every signed operation', (dialect) => {
  it('every operation refuses a missing, wrong or foreign signature, an old timestamp, an unknown appId, an HMAC signature for an RSA merchant and a replay, and writes nothing', async (t) => {
    const h = await build(t, dialect);
    const a = await tenant(h, h.merchant);
    const other = await h.newMerchant();
    const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const publicKeyPem = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const rsa = await runVerb(h.app.svc, createMerchant, {
      input: { name: 'RSA merchant', signType: 'RSA-SHA256', publicKeyPem },
      actor: 'test',
    });

    const refused = async (path: string, payload: Body, status: number, code: string, msg: string | RegExp) => {
      const before = await snapshot(h);
      const res = await h.call(path, payload, { raw: true });
      assertFailure(res, path, status, code, msg);
      assertUnchanged(before, await snapshot(h), `${path} refused with ${code}`);
    };

    for (const op of OPERATIONS) {
      await t.test(op.operation, async (t) => {
        const body = { ...(await op.body(a)), appId: a.m.appId };
        const signed = sign(body, a.m);
        const forRsa = { ...body, appId: rsa.appId };
        const cases: Array<[string, Body, number, string, string]> = [
          ['sign missing', body, 401, '1006', 'Signature error'],
          ['sign wrong', { ...signed, sign: flip(String(signed.sign)) }, 401, '1006', 'Signature error'],
          [
            'signed with another merchant’s secret',
            { ...body, sign: hmacSign(other.secret, signingString(body)) },
            401,
            '1006',
            'Signature error',
          ],
          [
            'timestamp 6 minutes old',
            sign({ ...body, timestamp: Date.now() - 6 * 60_000 }, a.m),
            401,
            '1007',
            'timestamp is outside the allowed window of 5 minutes',
          ],
          ['unknown appId', sign({ ...body, appId: lookalike(a.m.appId) }, a.m), 401, '2601', 'Merchant not found or disabled'],
          // HMAC keyed with the public key: the classic algorithm confusion.
          [
            'HMAC signature for an RSA merchant',
            { ...forRsa, sign: hmacSign(publicKeyPem, signingString(forRsa)) },
            401,
            '1006',
            'Signature error',
          ],
        ];
        for (const [name, payload, status, code, msg] of cases) {
          await t.test(`${name} → ${status} ${code}`, () => refused(op.path, payload, status, code, msg));
        }
        await t.test('the same body RSA-signed passes authentication (the refusal above was the algorithm)', async () => {
          const rsaSigned = rsaSign('sha256', Buffer.from(signingString(forRsa)), keys.privateKey).toString('base64');
          const res = await h.call(op.path, { ...forRsa, sign: rsaSigned }, { raw: true });
          assert.ok(![401, 400].includes(res.status), `${op.path} → ${res.status} ${JSON.stringify(res.body)}`);
        });
        let first: Reply | undefined;
        await t.test('the request itself, rightly signed, succeeds', async () => {
          first = await h.call(op.path, signed, { raw: true });
          assertSuccess(first, op.path);
        });
        if (first?.status !== 200) return;
        if (op.kind === 'read') {
          await t.test('a read replayed (its randomStr reused) → 409 1008', () =>
            refused(op.path, signed, 409, '1008', 'randomStr: already used'),
          );
        } else if (op.change) {
          const change = op.change;
          await t.test('a write replayed as it was → its first answer again, nothing written', async () => {
            const before = await snapshot(h);
            const again = await h.call(op.path, signed, { raw: true });
            assert.equal(again.status, 200, JSON.stringify(again.body));
            assert.equal(again.headers['x-idempotent-replay'], 'true');
            const { traceId: _t1, ...was } = first?.body ?? {};
            const { traceId: _t2, ...is } = again.body;
            assert.deepEqual(is, was);
            assertUnchanged(before, await snapshot(h), `${op.path} replayed`);
          });
          await t.test('a write replayed with a changed body → 409 1008', () =>
            refused(op.path, sign(change(body), a.m), 409, '1008', /^(randomStr|requestNo): already used for a different request$/),
          );
        }
      });
    }
  });
});
