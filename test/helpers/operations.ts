// Every signed operation, in one table: how to call it for a tenant, which of its fields name the
// merchant's own things, and how it answers an unknown one (test/isolation*.test.ts).
import { holderBody, kycBody, randomStr } from './app.js';
import {
  APPLY,
  AUTHORIZE,
  authorization,
  type Body,
  CLEAR,
  CREATE,
  challenge,
  DETAILS,
  DISPUTE_CREATE,
  dispute,
  HOLDER_REVIEW,
  KYC_SHARE,
  kycRequest,
  LINK,
  payment,
  pendingHolder,
  spareCard,
  submittedDispute,
  type Tenant,
  TOPUP,
  walletToken,
} from './tenant.js';

/** A field naming one of the merchant's things, and what the operation answers when it names nothing known. */
interface IdField {
  of: (s: Tenant) => string;
  unknown: [status: number, code: string | undefined];
}
const HOLDER: IdField = { of: (s) => s.holderId, unknown: [404, '2606'] };
const CARD: IdField = { of: (s) => s.cardId, unknown: [404, '2648'] };
const CARD_NO: IdField = { of: (s) => s.pan, unknown: [404, '2648'] };
const AUTHORIZATION: IdField = { of: (s) => s.authId, unknown: [409, '2730'] };
const PAYMENT: IdField = { of: (s) => s.paymentId, unknown: [409, '2730'] };
const DISPUTE: IdField = { of: (s) => s.disputeId, unknown: [404, '2740'] };
const KYC_REQUEST: IdField = { of: (s) => s.requestNo, unknown: [404, '2613'] };
const AUTHENTICATION: IdField = { of: (s) => s.acsTransId, unknown: [404, '2750'] };
const TOKEN: IdField = { of: (s) => s.tokenId, unknown: [404, '2760'] };
// Unique within one merchant only: another merchant's value is as free as a new one (no 2611, 1008 or 2610).
const IDNO: IdField = { of: (s) => s.idno, unknown: [200, undefined] };
const FREE_REQUEST_NO: IdField = { of: (s) => s.requestNo, unknown: [200, '0'] };
const FREE_KYC_EMAIL: IdField = { of: (s) => s.kycEmail, unknown: [200, '0'] };

export type Operation = {
  operation: string;
  path: string;
  /** A valid body for the tenant's merchant (without appId and sign); it may create what it needs. */
  body: (s: Tenant) => Body | Promise<Body>;
  /** Fields that name one of the merchant's own things. */
  ids: Record<string, IdField>;
  /** Reply fields that differ on every success by design. */
  volatile?: string[];
} & (
  | { kind: 'read' }
  /** change: the same key (randomStr, requestNo) with another valid body; null when the operation has no key. */
  | { kind: 'write'; change: ((b: Body) => Body) | null }
);

const day = (offsetDays = 0) => new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);

/** Every signed operation (test/isolation.test.ts checks the app registers exactly these). */
export const OPERATIONS: Operation[] = [
  {
    operation: 'holderCreate',
    path: CREATE,
    kind: 'write',
    body: () => holderBody(),
    ids: { idno: IDNO },
    volatile: ['holderId'],
    change: (b) => ({ ...b, mobile: '+4915100000001' }),
  },
  {
    operation: 'holderQuery',
    path: '/api/network/holderQuery.html',
    kind: 'read',
    body: (s) => ({ holderId: s.holderId, randomStr: randomStr() }),
    ids: { holderId: HOLDER },
  },
  {
    operation: 'cardApply',
    path: APPLY,
    kind: 'write',
    body: (s) => ({ holderId: s.holderId, currency: 'EUR', randomStr: randomStr() }),
    ids: { holderId: HOLDER },
    change: (b) => ({ ...b, currency: 'USDT' }),
  },
  {
    operation: 'cardQuery',
    path: '/api/network/cardQuery.html',
    kind: 'read',
    body: (s) => ({ cardId: s.cardId, randomStr: randomStr() }),
    ids: { cardId: CARD },
  },
  {
    operation: 'cardTopUp',
    path: TOPUP,
    kind: 'write',
    body: (s) => ({ cardId: s.cardId, amount: 5, randomStr: randomStr() }),
    ids: { cardId: CARD },
    change: (b) => ({ ...b, amount: 6 }),
  },
  {
    operation: 'merchantBalance',
    path: '/api/network/merchantBalance.html',
    kind: 'read',
    body: () => ({ currency: 'EUR', randomStr: randomStr() }),
    ids: {},
  },
  {
    operation: 'merchantFundingList',
    path: '/api/network/merchantFundingList.html',
    kind: 'read',
    body: () => ({ currency: 'EUR', randomStr: randomStr() }),
    ids: {},
  },
  {
    // A card of its own: the tenant's card stays active for the operations after it.
    operation: 'cardFreeze',
    path: '/api/network/cardFreeze.html',
    kind: 'write',
    body: async (s) => ({ cardId: await spareCard(s), reason: 'lost phone', randomStr: randomStr() }),
    ids: { cardId: CARD },
    change: (b) => ({ ...b, reason: 'stolen phone' }),
  },
  {
    operation: 'cardUnfreeze',
    path: '/api/network/cardUnfreeze.html',
    kind: 'write',
    body: async (s) => ({ cardId: await spareCard(s, true), randomStr: randomStr() }),
    ids: { cardId: CARD },
    change: (b) => ({ ...b, reason: 'found it' }),
  },
  {
    operation: 'cardClose',
    path: '/api/network/cardClose.html',
    kind: 'write',
    body: async (s) => ({ cardId: await spareCard(s), reason: 'customer left', randomStr: randomStr() }),
    ids: { cardId: CARD },
    change: (b) => ({ ...b, reason: 'other reason' }),
  },
  {
    operation: 'cardControlsUpdate',
    path: '/api/network/cardControlsUpdate.html',
    kind: 'write',
    body: (s) => ({ cardId: s.cardId, controls: { blockedMccs: ['7995'] }, randomStr: randomStr() }),
    ids: { cardId: CARD },
    change: (b) => ({ ...b, controls: { blockedMccs: ['7994'] } }),
  },
  {
    // The same operation for a cardholder's controls.
    operation: 'cardControlsUpdate',
    path: '/api/network/cardControlsUpdate.html',
    kind: 'write',
    body: (s) => ({ holderId: s.holderId, controls: { blockedCountries: ['KP'] }, randomStr: randomStr() }),
    ids: { holderId: HOLDER },
    change: (b) => ({ ...b, controls: { blockedCountries: ['IR'] } }),
  },
  {
    // Removing the endpoint (null): the tenant's later authorizations stay the program's alone.
    operation: 'authorizationEndpointUpdate',
    path: '/api/network/authorizationEndpointUpdate.html',
    kind: 'write',
    body: () => ({ authorizationUrl: null, timeoutMs: 1500, randomStr: randomStr() }),
    ids: {},
    change: (b) => ({ ...b, timeoutMs: 1600 }),
  },
  {
    operation: 'authorizationEndpointQuery',
    path: '/api/network/authorizationEndpointQuery.html',
    kind: 'read',
    body: () => ({ randomStr: randomStr() }),
    ids: {},
  },
  {
    operation: 'tradeList',
    path: '/api/network/networkAuthTradeList.html',
    kind: 'read',
    body: (s) => ({ cardId: s.cardId, cardNo: s.pan, beginDate: day(-29), endDate: day(), start: 0, randomStr: randomStr() }),
    ids: { cardId: CARD, cardNo: CARD_NO },
  },
  {
    operation: 'tradeQuery',
    path: '/api/network/tradeQuery.html',
    kind: 'read',
    body: async (s) => ({ tradeId: await authorization(s), randomStr: randomStr() }),
    ids: { tradeId: AUTHORIZATION },
  },
  {
    operation: 'kycShare',
    path: KYC_SHARE,
    kind: 'write',
    body: () => kycBody(),
    ids: { requestNo: FREE_REQUEST_NO, email: FREE_KYC_EMAIL },
    change: (b) => ({ ...b, email: `${randomStr().slice(0, 10).toLowerCase()}@example.com` }),
  },
  {
    operation: 'kycQuery',
    path: '/open/api/kyc/share/query',
    kind: 'read',
    body: (s) => ({ requestNo: s.requestNo, randomStr: randomStr() }),
    ids: { requestNo: KYC_REQUEST },
  },
  {
    // No holder id: the link names an e-mail (the page test below covers another merchant's cardholder).
    // Its randomStr is single-use, like a read's (decisions §11): a replayed body mints no second link.
    operation: 'loginFreeLink',
    path: LINK,
    kind: 'read',
    body: () => ({ email: `${randomStr().slice(0, 10).toLowerCase()}@example.com`, randomStr: randomStr() }),
    ids: {},
    volatile: ['model.webUrl'],
  },
  {
    operation: 'sandboxHolderReview',
    path: HOLDER_REVIEW,
    kind: 'write',
    body: async (s) => ({ holderId: await pendingHolder(s), auditStatus: 2, randomStr: randomStr() }),
    ids: { holderId: HOLDER },
    change: (b) => ({ ...b, auditStatus: 1 }),
  },
  {
    operation: 'sandboxKycReview',
    path: '/sandbox/kyc/review',
    kind: 'write',
    body: async (s) => ({
      requestNo: (await kycRequest(s)).requestNo,
      kycStatus: 'rejected',
      reason: 'blurred document',
      randomStr: randomStr(),
    }),
    ids: { requestNo: KYC_REQUEST },
    change: (b) => ({ ...b, kycStatus: 'approved' }),
  },
  {
    operation: 'sandboxAuthorize',
    path: AUTHORIZE,
    kind: 'write',
    body: (s) => ({ cardId: s.cardId, amount: 1, randomStr: randomStr() }),
    ids: { cardId: CARD },
    change: (b) => ({ ...b, amount: 2 }),
  },
  {
    operation: 'sandboxClear',
    path: CLEAR,
    kind: 'write',
    body: async (s) => ({ tradeId: await authorization(s), randomStr: randomStr() }),
    ids: { tradeId: AUTHORIZATION },
    change: (b) => ({ ...b, amount: 0.5 }),
  },
  {
    operation: 'sandboxReverse',
    path: '/sandbox/network/reverse',
    kind: 'write',
    body: async (s) => ({ tradeId: await authorization(s), randomStr: randomStr() }),
    ids: { tradeId: AUTHORIZATION },
    change: (b) => ({ ...b, amount: 0.5 }),
  },
  {
    operation: 'sandboxVoid',
    path: '/sandbox/network/void',
    kind: 'write',
    body: async (s) => ({ tradeId: await authorization(s), randomStr: randomStr() }),
    ids: { tradeId: AUTHORIZATION },
    change: (b) => ({ ...b, businessDate: day() }),
  },
  {
    operation: 'sandboxRefund',
    path: '/sandbox/network/refund',
    kind: 'write',
    body: async (s) => ({ tradeId: await payment(s), amount: 0.5, randomStr: randomStr() }),
    ids: { tradeId: PAYMENT },
    change: (b) => ({ ...b, amount: 0.25 }),
  },
  {
    operation: 'sandboxWithdraw',
    path: '/sandbox/network/withdraw',
    kind: 'write',
    body: (s) => ({ cardId: s.cardId, amount: 1, randomStr: randomStr() }),
    ids: { cardId: CARD },
    change: (b) => ({ ...b, amount: 2 }),
  },
  {
    operation: 'sandboxTransfer',
    path: '/sandbox/network/transfer',
    kind: 'write',
    body: (s) => ({ cardId: s.cardId, toCardId: s.card2Id, amount: 1, randomStr: randomStr() }),
    ids: { cardId: CARD, toCardId: CARD },
    change: (b) => ({ ...b, amount: 2 }),
  },
  {
    operation: 'sandboxAdjust',
    path: '/sandbox/network/adjust',
    kind: 'write',
    body: (s) => ({ cardId: s.cardId, amount: 1, direction: 'credit', randomStr: randomStr() }),
    ids: { cardId: CARD },
    change: (b) => ({ ...b, direction: 'debit' }),
  },
  {
    operation: 'sandboxBalanceInquiry',
    path: '/sandbox/network/balanceInquiry',
    kind: 'write',
    body: (s) => ({ cardId: s.cardId, randomStr: randomStr() }),
    ids: { cardId: CARD },
    change: (b) => ({ ...b, businessDate: day() }),
  },
  {
    operation: 'sandboxFee',
    path: '/sandbox/network/fee',
    kind: 'write',
    body: (s) => ({ cardId: s.cardId, amount: 0.5, randomStr: randomStr() }),
    ids: { cardId: CARD },
    change: (b) => ({ ...b, amount: 0.75 }),
  },
  {
    operation: 'disputeCreate',
    path: DISPUTE_CREATE,
    kind: 'write',
    body: async (s) => ({ tradeId: await payment(s), reason: 'fraudulent', randomStr: randomStr() }),
    ids: { tradeId: PAYMENT },
    volatile: ['model.disputeId', 'model.createdAt', 'model.deadline', 'model.clearingDate'],
    change: (b) => ({ ...b, reason: 'other' }),
  },
  {
    operation: 'disputeUpdate',
    path: '/api/network/disputeUpdate.html',
    kind: 'write',
    body: async (s) => ({ disputeId: await dispute(s), reason: 'duplicate', randomStr: randomStr() }),
    ids: { disputeId: DISPUTE },
    change: (b) => ({ ...b, reason: 'other' }),
  },
  {
    operation: 'disputeSubmit',
    path: '/api/network/disputeSubmit.html',
    kind: 'write',
    body: async (s) => ({ disputeId: await dispute(s), randomStr: randomStr() }),
    ids: { disputeId: DISPUTE },
    change: (b) => ({ ...b, disputeId: `${b.disputeId}x` }),
  },
  {
    operation: 'disputeWithdraw',
    path: '/api/network/disputeWithdraw.html',
    kind: 'write',
    body: async (s) => ({ disputeId: await dispute(s), randomStr: randomStr() }),
    ids: { disputeId: DISPUTE },
    change: (b) => ({ ...b, disputeId: `${b.disputeId}x` }),
  },
  {
    operation: 'disputeQuery',
    path: '/api/network/disputeQuery.html',
    kind: 'read',
    body: (s) => ({ disputeId: s.disputeId, randomStr: randomStr() }),
    ids: { disputeId: DISPUTE },
  },
  {
    operation: 'disputeList',
    path: '/api/network/disputeList.html',
    kind: 'read',
    body: (s) => ({ cardId: s.cardId, start: 0, randomStr: randomStr() }),
    // Another merchant's card lists nothing, as an unknown one.
    ids: { cardId: { of: (s) => s.cardId, unknown: [200, '0'] } },
  },
  {
    operation: 'sandboxDisputeDecide',
    path: '/sandbox/dispute/decide',
    kind: 'write',
    body: async (s) => ({ disputeId: await submittedDispute(s), outcome: 'won', randomStr: randomStr() }),
    ids: { disputeId: DISPUTE },
    change: (b) => ({ ...b, outcome: 'lost' }),
  },
  {
    operation: 'threeDsQuery',
    path: '/api/network/threeDsQuery.html',
    kind: 'read',
    body: (s) => ({ acsTransID: s.acsTransId, randomStr: randomStr() }),
    ids: { acsTransID: AUTHENTICATION },
  },
  {
    operation: 'threeDsList',
    path: '/api/network/threeDsList.html',
    kind: 'read',
    body: (s) => ({ cardId: s.cardId, start: 0, randomStr: randomStr() }),
    // Another merchant's card lists nothing, as an unknown one.
    ids: { cardId: { of: (s) => s.cardId, unknown: [200, '0'] } },
  },
  {
    operation: 'threeDsSettingsUpdate',
    path: '/api/network/threeDsSettingsUpdate.html',
    kind: 'write',
    body: () => ({ challengeMethod: 'oob', randomStr: randomStr() }),
    ids: {},
    change: (b) => ({ ...b, challengeMethod: 'otp' }),
  },
  {
    operation: 'threeDsSettingsQuery',
    path: '/api/network/threeDsSettingsQuery.html',
    kind: 'read',
    body: () => ({ randomStr: randomStr() }),
    ids: {},
  },
  {
    operation: 'sandboxThreeDsAuthenticate',
    path: '/sandbox/3ds/authenticate',
    kind: 'write',
    body: (s) => ({ cardId: s.cardId, amount: 12.5, randomStr: randomStr() }),
    ids: { cardId: CARD },
    change: (b) => ({ ...b, amount: 13 }),
  },
  {
    operation: 'threeDsChallengeRespond',
    path: '/api/network/threeDsChallengeRespond.html',
    kind: 'write',
    body: async (s) => ({ acsTransID: await challenge(s, 'oob'), result: 'approved', randomStr: randomStr() }),
    ids: { acsTransID: AUTHENTICATION },
    change: (b) => ({ ...b, result: 'declined' }),
  },
  {
    operation: 'sandboxThreeDsComplete',
    path: '/sandbox/3ds/complete',
    kind: 'write',
    body: async (s) => ({ acsTransID: await challenge(s, 'oob'), result: 'approved', randomStr: randomStr() }),
    ids: { acsTransID: AUTHENTICATION },
    change: (b) => ({ ...b, result: 'declined' }),
  },
  {
    operation: 'sandboxTokenProvision',
    path: '/sandbox/tokens/provision',
    kind: 'write',
    body: (s) => ({ cardId: s.cardId, walletProvider: 'apple_pay', randomStr: randomStr() }),
    ids: { cardId: CARD },
    change: (b) => ({ ...b, walletProvider: 'google_pay' }),
  },
  {
    operation: 'sandboxTokenVerify',
    path: '/sandbox/tokens/verify',
    kind: 'write',
    body: async (s) => ({ tokenId: await walletToken(s, 'pending'), code: '000000', randomStr: randomStr() }),
    ids: { tokenId: TOKEN },
    change: (b) => ({ ...b, code: '111111' }),
  },
  {
    operation: 'tokenList',
    path: '/api/network/tokenList.html',
    kind: 'read',
    body: (s) => ({ cardId: s.cardId, start: 0, randomStr: randomStr() }),
    // Another merchant's card lists nothing, as an unknown one.
    ids: { cardId: { of: (s) => s.cardId, unknown: [200, '0'] } },
  },
  {
    operation: 'tokenQuery',
    path: '/api/network/tokenQuery.html',
    kind: 'read',
    body: (s) => ({ tokenId: s.tokenId, randomStr: randomStr() }),
    ids: { tokenId: TOKEN },
  },
  {
    operation: 'tokenSuspend',
    path: '/api/network/tokenSuspend.html',
    kind: 'write',
    body: async (s) => ({ tokenId: await walletToken(s), reason: 'phone lost', randomStr: randomStr() }),
    ids: { tokenId: TOKEN },
    change: (b) => ({ ...b, reason: 'phone stolen' }),
  },
  {
    operation: 'tokenResume',
    path: '/api/network/tokenResume.html',
    kind: 'write',
    body: async (s) => ({ tokenId: await walletToken(s, 'suspended'), randomStr: randomStr() }),
    ids: { tokenId: TOKEN },
    change: (b) => ({ ...b, reason: 'found' }),
  },
  {
    operation: 'tokenDelete',
    path: '/api/network/tokenDelete.html',
    kind: 'write',
    body: async (s) => ({ tokenId: await walletToken(s), randomStr: randomStr() }),
    ids: { tokenId: TOKEN },
    change: (b) => ({ ...b, reason: 'removed' }),
  },
  {
    operation: 'tokenActivate',
    path: '/api/network/tokenActivate.html',
    kind: 'write',
    body: async (s) => ({ tokenId: await walletToken(s, 'pending'), randomStr: randomStr() }),
    ids: { tokenId: TOKEN },
    change: (b) => ({ ...b, tokenId: `${b.tokenId}x` }),
  },
  {
    operation: 'tokenSettingsUpdate',
    path: '/api/network/tokenSettingsUpdate.html',
    kind: 'write',
    body: () => ({ methods: ['app', 'otp_sms'], randomStr: randomStr() }),
    ids: {},
    change: (b) => ({ ...b, methods: ['otp_email'] }),
  },
  {
    operation: 'tokenSettingsQuery',
    path: '/api/network/tokenSettingsQuery.html',
    kind: 'read',
    body: () => ({ randomStr: randomStr() }),
    ids: {},
  },
  {
    operation: 'sandboxCardDetails',
    path: DETAILS,
    kind: 'read',
    body: (s) => ({ cardId: s.cardId, randomStr: randomStr() }),
    ids: { cardId: CARD },
  },
];

export const sandboxOnly = (op: Operation) => op.path.startsWith('/sandbox/');
