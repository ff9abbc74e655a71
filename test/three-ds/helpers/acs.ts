// The ACS under test: the app built as in production, its 3-D Secure listener started on a free
// loopback port (plain HTTP, as the sandbox allows), and cards with their numbers.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { Config } from '../../../src/config.js';
import { updateMerchant } from '../../../src/merchants/manage.js';
import { runVerb } from '../../../src/runner.js';
import { startAcs } from '../../../src/three-ds/listener.js';
import { build, type Harness, randomStr, type TestMerchant, testConfig } from '../../helpers/app.js';
import { fundedCard, ok } from '../../helpers/cards.js';
import type { TestDialect } from '../../helpers/db.js';
import { receiver } from '../../helpers/receiver.js';

export interface Acs {
  h: Harness;
  /** http://127.0.0.1:PORT/3ds/areq */
  url: string;
}

/** The app with its ACS listening (CARDPROGRAM_3DS_PORT=0 on 127.0.0.1). */
export async function acs(
  t: TestContext,
  dialect: TestDialect,
  overrides: Partial<Config> = {},
  opts: { clock?: () => number } = {},
): Promise<Acs> {
  const threeDs = { ...testConfig('').threeDs, port: 0, ...(overrides.threeDs ?? {}) };
  const h = await build(t, dialect, { ...overrides, threeDs }, opts);
  const server = await startAcs(h.app.svc);
  assert.ok(server, 'the ACS listens');
  // Stopped before the app (t.after runs last-registered first).
  t.after(() => server.stop());
  return { h, url: `http://127.0.0.1:${server.port}/3ds/areq` };
}

export interface TestCard {
  cardId: string;
  holderId: string;
  pan: string;
  /** YYMM, as an AReq carries it. */
  expiry: string;
}

/** An approved cardholder's funded EUR card (BIN 424242: Visa) or USDT card (535353: Mastercard), with its number. */
export async function card(h: Harness, opts: { currency?: string; merchant?: TestMerchant } = {}): Promise<TestCard> {
  const made = await fundedCard(h, { topUp: 500, currency: opts.currency ?? 'EUR', ...(opts.merchant ? { merchant: opts.merchant } : {}) });
  const details = await ok(h, '/sandbox/network/cardDetails', { cardId: made.cardId }, opts.merchant);
  const [mm, yy] = String(details.expiry).split('/');
  return { cardId: made.cardId, holderId: made.holderId, pan: details.cardNo as string, expiry: `${yy}${mm}` };
}

/** Points the merchant's notify URL at a test receiver (its callbacks, and the challenges it needs). */
export async function notifyTo(t: TestContext, h: Harness, merchant: TestMerchant = h.merchant) {
  const rx = await receiver(t, merchant.webhookSecret);
  await runVerb(h.app.svc, updateMerchant, { input: { appId: merchant.appId, notifyUrl: rx.url }, actor: 'test' });
  return rx;
}

/** The authentication's stored row. */
export function stored(h: Harness, acsTransId: string) {
  return h.db.database.db
    .selectFrom('three_ds_authentications')
    .selectAll()
    .where('acs_trans_id', '=', acsTransId)
    .executeTakeFirstOrThrow();
}

/** A challenge ended by the merchant's approval (an oob challenge's), its result then waiting for the DS: its acsTransID. */
export async function challengeEnded(h: Harness, cardId: string): Promise<string> {
  const res = await h.call('/sandbox/3ds/authenticate', { cardId, amount: 40, challengeInd: '04', randomStr: randomStr() });
  const acsTransID = String(res.body.model?.ares?.acsTransID);
  const answered = await h.call('/api/network/threeDsChallengeRespond.html', { acsTransID, result: 'approved', randomStr: randomStr() });
  assert.equal(answered.body.model?.transStatus, 'Y', JSON.stringify(answered.body));
  return acsTransID;
}
