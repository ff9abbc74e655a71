// One merchant's things, each in a state in which every signed operation would act on it: what the
// isolation and authentication tests (test/isolation*.test.ts) run every operation against.
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { updateMerchant } from '../../src/merchants/manage.js';
import { runVerb } from '../../src/runner.js';
import { type Harness, holderBody, kycBody, randomStr, type TestMerchant } from './app.js';
import { ok } from './cards.js';
import { seedToken } from './tokens.js';

export type Body = Record<string, unknown>;

export const CREATE = '/api/network/holderCreate.html';
export const APPLY = '/api/network/cardApply.html';
export const TOPUP = '/api/network/cardTopUp.html';
export const KYC_SHARE = '/open/api/kyc/share/information';
export const LINK = '/open/merchant/api/v2';
export const HOLDER_REVIEW = '/sandbox/holder/review';
export const AUTHORIZE = '/sandbox/network/authorize';
export const CLEAR = '/sandbox/network/clear';
export const DETAILS = '/sandbox/network/cardDetails';
export const DISPUTE_CREATE = '/api/network/disputeCreate.html';

/** One merchant's things, each in a state in which the operations would act on it. */
export interface Tenant {
  h: Harness;
  m: TestMerchant;
  /** The cardholder's e-mail (what its page link names). */
  email: string;
  /** Approved: it could get a card. */
  holderId: string;
  idno: string;
  /** Active and funded (EUR), and a second EUR card for transfers. */
  cardId: string;
  card2Id: string;
  /** cardId's full card number. */
  pan: string;
  /** An authorization that still holds funds: it could be cleared, reversed or voided. */
  authId: string;
  /** A payment (151) not refunded. */
  paymentId: string;
  /** An unsubmitted dispute (with an explanation: it could be submitted) on a payment of its own. */
  disputeId: string;
  /** A KYC request not yet decided. */
  requestNo: string;
  kycEmail: string;
  /** A 3-D Secure authentication of cardId (frictionless: the sandbox's directory server). */
  acsTransId: string;
  /** An active wallet token of cardId. */
  tokenId: string;
}

/** A new wallet token of the tenant's card: active, suspended by the merchant, or pending (its step-up by the merchant's app). */
export async function walletToken(s: Tenant, status: 'active' | 'suspended' | 'pending' = 'active'): Promise<string> {
  const { tokenId } = await seedToken(s.h.app.svc, { cardId: s.cardId, status: status === 'pending' ? 'pending' : 'active' });
  if (status === 'suspended') await ok(s.h, '/api/network/tokenSuspend.html', { tokenId }, s.m);
  return tokenId;
}

export const authorization = async (s: Tenant) => (await ok(s.h, AUTHORIZE, { cardId: s.cardId, amount: 1 }, s.m)).tradeId as string;
export const payment = async (s: Tenant) => (await ok(s.h, CLEAR, { tradeId: await authorization(s) }, s.m)).tradeId as string;
/** A new unsubmitted dispute (with an explanation) on a new payment. */
export const dispute = async (s: Tenant) =>
  (await ok(s.h, DISPUTE_CREATE, { tradeId: await payment(s), reason: 'fraudulent', explanation: 'not me' }, s.m)).disputeId as string;
/** A new submitted dispute. */
export const submittedDispute = async (s: Tenant) => {
  const disputeId = await dispute(s);
  await ok(s.h, '/api/network/disputeSubmit.html', { disputeId }, s.m);
  return disputeId;
};

/** A new funded card of the tenant's cardholder, frozen by the merchant when asked. */
export async function spareCard(s: Tenant, frozen = false): Promise<string> {
  const card = await ok(s.h, APPLY, { holderId: s.holderId, currency: 'EUR' }, s.m);
  await ok(s.h, TOPUP, { cardId: card.cardId, amount: 5 }, s.m);
  if (frozen) await ok(s.h, '/api/network/cardFreeze.html', { cardId: card.cardId }, s.m);
  return card.cardId;
}

/**
 * A new 3-D Secure challenge of a new card of the tenant, under way: out of band (the merchant's
 * method set to oob) or a one-time code. A challenge needs the merchant's notify URL: one is set
 * (nothing delivers to it here).
 */
export async function challenge(s: Tenant, method: 'otp' | 'oob' = 'oob'): Promise<string> {
  await runVerb(s.h.app.svc, updateMerchant, { input: { appId: s.m.appId, notifyUrl: 'http://127.0.0.1:9/hooks' }, actor: 'test' });
  await ok(s.h, '/api/network/threeDsSettingsUpdate.html', { challengeMethod: method }, s.m);
  const cardId = await spareCard(s);
  const ares = (await ok(s.h, '/sandbox/3ds/authenticate', { cardId, amount: 1, challengeInd: '04' }, s.m)).ares;
  assert.equal(ares.transStatus, 'C', JSON.stringify(ares));
  return ares.acsTransID as string;
}

export async function pendingHolder(s: Tenant): Promise<string> {
  const res = await s.h.call(CREATE, holderBody(), { merchant: s.m });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.holderId;
}

export async function kycRequest(s: Tenant): Promise<Body> {
  const body = kycBody();
  const res = await s.h.call(KYC_SHARE, body, { merchant: s.m });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return body;
}

export async function tenant(h: Harness, m: TestMerchant): Promise<Tenant> {
  const email = `${randomStr().slice(0, 12).toLowerCase()}@example.com`;
  const sent = holderBody({ email });
  const holder = await h.call(CREATE, sent, { merchant: m });
  assert.equal(holder.status, 200, JSON.stringify(holder.body));
  const holderId = holder.body.holderId as string;
  await ok(h, HOLDER_REVIEW, { holderId, auditStatus: 2 }, m);
  const card = await ok(h, APPLY, { holderId, currency: 'EUR' }, m);
  const card2 = await ok(h, APPLY, { holderId, currency: 'EUR' }, m);
  await ok(h, TOPUP, { cardId: card.cardId, amount: 500 }, m);
  await ok(h, TOPUP, { cardId: card2.cardId, amount: 50 }, m);
  const s: Tenant = {
    h,
    m,
    email,
    holderId,
    idno: sent.idno as string,
    cardId: card.cardId,
    card2Id: card2.cardId,
    pan: (await ok(h, DETAILS, { cardId: card.cardId }, m)).cardNo,
    authId: '',
    paymentId: '',
    disputeId: '',
    requestNo: '',
    kycEmail: '',
    acsTransId: '',
    tokenId: '',
  };
  s.authId = await authorization(s);
  s.paymentId = await payment(s);
  s.disputeId = await dispute(s);
  const kyc = await kycRequest(s);
  s.requestNo = kyc.requestNo as string;
  s.kycEmail = kyc.email as string;
  s.acsTransId = (await ok(h, '/sandbox/3ds/authenticate', { cardId: card.cardId, amount: 10 }, m)).ares.acsTransID as string;
  s.tokenId = await walletToken(s);
  return s;
}

const CHARACTER_CLASSES = ['0123456789', 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'];

/** The same shape with other characters: same prefix (`card_`, `REQ-`, BIN, e-mail domain), same length and classes. */
export function lookalike(value: string): string {
  const at = value.indexOf('@');
  const [head, tail] = at >= 0 ? [value.slice(0, at), value.slice(at)] : [value, ''];
  const cut = /^\d+$/.test(head) ? 6 : Math.max(head.lastIndexOf('_'), head.lastIndexOf('-')) + 1;
  const swap = (c: string) => {
    const set = CHARACTER_CLASSES.find((k) => k.includes(c));
    return set ? set[randomInt(set.length)] : c;
  };
  for (;;) {
    const out = `${head.slice(0, cut)}${[...head.slice(cut)].map(swap).join('')}${tail}`;
    if (out !== value) return out;
  }
}
