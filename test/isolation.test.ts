import assert from 'node:assert/strict';
import { generateKeyPairSync, randomInt, sign as rsaSign } from 'node:crypto';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { buildApp } from '../src/app.js';
import { hmacSign, signingString } from '../src/http/signing.js';
import { createMerchant } from '../src/merchants/create.js';
import { formToken } from '../src/page/links.js';
import {
  b64,
  build,
  type Harness,
  holderBody,
  kycBody,
  type Reply,
  randomStr,
  sign,
  type TestMerchant,
  testConfig,
} from './helpers/app.js';
import { ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';
import { testLogging } from './helpers/log-audit.js';

/**
 * Tenant isolation and authentication, applied to every signed operation from one table:
 * 1. another merchant's identifier is answered exactly like one that never existed, and changes nothing;
 * 2. bad authentication and replays are refused with the documented envelope, and write nothing;
 * 3. sandbox operations do not exist in production.
 */

type Body = Record<string, unknown>;

const CREATE = '/api/network/holderCreate.html';
const APPLY = '/api/network/cardApply.html';
const TOPUP = '/api/network/cardTopUp.html';
const KYC_SHARE = '/open/api/kyc/share/information';
const LINK = '/open/merchant/api/v2';
const HOLDER_REVIEW = '/sandbox/holder/review';
const AUTHORIZE = '/sandbox/network/authorize';
const CLEAR = '/sandbox/network/clear';
const DETAILS = '/sandbox/network/cardDetails';

/** One merchant's things, each in a state in which the operations would act on it. */
interface Tenant {
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
  /** A KYC request not yet decided. */
  requestNo: string;
  kycEmail: string;
}

const authorization = async (s: Tenant) => (await ok(s.h, AUTHORIZE, { cardId: s.cardId, amount: 1 }, s.m)).tradeId as string;
const payment = async (s: Tenant) => (await ok(s.h, CLEAR, { tradeId: await authorization(s) }, s.m)).tradeId as string;

async function pendingHolder(s: Tenant): Promise<string> {
  const res = await s.h.call(CREATE, holderBody(), { merchant: s.m });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.holderId;
}

async function kycRequest(s: Tenant): Promise<Body> {
  const body = kycBody();
  const res = await s.h.call(KYC_SHARE, body, { merchant: s.m });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return body;
}

async function tenant(h: Harness, m: TestMerchant): Promise<Tenant> {
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
    requestNo: '',
    kycEmail: '',
  };
  s.authId = await authorization(s);
  s.paymentId = await payment(s);
  const kyc = await kycRequest(s);
  s.requestNo = kyc.requestNo as string;
  s.kycEmail = kyc.email as string;
  return s;
}

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
const KYC_REQUEST: IdField = { of: (s) => s.requestNo, unknown: [404, '2613'] };
// Unique within one merchant only: another merchant's value is as free as a new one (no 2611, 1008 or 2610).
const IDNO: IdField = { of: (s) => s.idno, unknown: [200, undefined] };
const FREE_REQUEST_NO: IdField = { of: (s) => s.requestNo, unknown: [200, '0'] };
const FREE_KYC_EMAIL: IdField = { of: (s) => s.kycEmail, unknown: [200, '0'] };

type Operation = {
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

/** Every signed operation (the test below checks the app registers exactly these). */
const OPERATIONS: Operation[] = [
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
    operation: 'tradeList',
    path: '/api/network/networkAuthTradeList.html',
    kind: 'read',
    body: (s) => ({ cardId: s.cardId, cardNo: s.pan, beginDate: day(-29), endDate: day(), start: 0, randomStr: randomStr() }),
    ids: { cardId: CARD, cardNo: CARD_NO },
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
    // No key either: every call is a new one-time link.
    operation: 'loginFreeLink',
    path: LINK,
    kind: 'write',
    body: () => ({ email: `${randomStr().slice(0, 10).toLowerCase()}@example.com` }),
    ids: {},
    volatile: ['model.webUrl'],
    change: null,
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
    operation: 'sandboxCardDetails',
    path: DETAILS,
    kind: 'read',
    body: (s) => ({ cardId: s.cardId, randomStr: randomStr() }),
    ids: { cardId: CARD },
  },
];

const sandboxOnly = (op: Operation) => op.path.startsWith('/sandbox/');

const CHARACTER_CLASSES = ['0123456789', 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'];

/** The same shape with other characters: same prefix (`card_`, `REQ-`, BIN, e-mail domain), same length and classes. */
function lookalike(value: string): string {
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

// ---- database snapshots: "wrote nothing" means every row of every table is as it was ----

type Snapshot = Record<string, string[]>;
const tableCache = new WeakMap<Harness, Array<{ name: string; owner: string | null }>>();

/** Every row of every table, except (when named) the rows of one merchant. */
async function snapshot(h: Harness, exceptMerchant?: string): Promise<Snapshot> {
  const db = h.db.database.db as unknown as Kysely<any>;
  let tables = tableCache.get(h);
  if (!tables) {
    tables = (await db.introspection.getTables())
      .filter((t) => (!h.db.pgSchema || t.schema === h.db.pgSchema) && !t.name.startsWith('cardprogram_migrations'))
      .map((t) => ({
        name: t.name,
        owner: t.name === 'merchants' ? 'id' : t.columns.some((c) => c.name === 'merchant_id') ? 'merchant_id' : null,
      }));
    tableCache.set(h, tables);
  }
  const out: Snapshot = {};
  for (const { name, owner } of tables) {
    let q = db.selectFrom(name).selectAll();
    if (exceptMerchant && owner) q = q.where(owner, '<>', exceptMerchant);
    const rows = await q.execute();
    out[name] = rows.map((r) => JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).sort();
  }
  return out;
}

/** A request refused, or acting on another merchant's things, leaves every row as it was: no table is allowed to change. */
function assertUnchanged(before: Snapshot, after: Snapshot, what: string) {
  const changed = Object.keys({ ...before, ...after }).filter((t) => JSON.stringify(before[t]) !== JSON.stringify(after[t]));
  assert.deepEqual(changed, [], `${what} changed these tables`);
}

// ---- replies ----

const json = { 'content-type': 'application/json' };

/** A reply as another merchant may see it: everything but traceId and the date, the sent value masked. */
function comparable(res: { status: number; body: unknown; headers: Reply['headers'] }, sent: string, volatile: readonly string[] = []) {
  const { date: _date, 'x-trace-id': traceId, ...headers } = res.headers;
  let body = res.body;
  if (body !== null && typeof body === 'object') {
    const { traceId: bodyTrace, ...rest } = body as Record<string, any>;
    // 4.2's bare success body has none; every envelope carries the header's.
    if (bodyTrace !== undefined) assert.equal(bodyTrace, traceId, 'the traceId of the body is the x-trace-id header');
    for (const path of volatile) {
      const keys = path.split('.');
      const last = keys.pop() as string;
      const parent = keys.reduce((o: any, k) => o?.[k], rest);
      if (parent) delete parent[last];
    }
    body = rest;
  }
  return JSON.parse(JSON.stringify({ status: res.status, body, headers }).replaceAll(sent, '<sent>'));
}

/** The failure envelope of docs/errors.md, exactly. */
function assertFailure(res: Reply, path: string, status: number, code: string, msg: string | RegExp) {
  const what = `${path} → ${res.status} ${JSON.stringify(res.body)}`;
  assert.equal(res.status, status, what);
  const { traceId, errMsg, msg: text, ...rest } = res.body;
  assert.deepEqual(rest, { code, model: null, success: false, error: true }, what);
  if (typeof msg === 'string') assert.equal(text, msg, what);
  else assert.match(text, msg, what);
  assert.match(String(traceId), /^[0-9a-f]{32}$/);
  assert.equal(res.headers['x-trace-id'], traceId);
  // Cardholder creation also carries errMsg (interface §7); nothing else does.
  assert.equal(errMsg, path === CREATE ? text : undefined, what);
}

function assertSuccess(res: Reply, path: string) {
  assert.equal(res.status, 200, `${path} → ${JSON.stringify(res.body)}`);
  // 4.1 and 4.2 answer bare bodies; every other operation the envelope.
  if ('code' in res.body) assert.equal(res.body.code, '0');
}

function flip(hex: string): string {
  return `${hex.slice(0, -1)}${hex.endsWith('0') ? '1' : '0'}`;
}

eachDialect('tenant isolation and authentication of every signed operation', (dialect) => {
  it('the table below holds every signed operation the app registers and documents, no more', async (t) => {
    const h = await build(t, dialect);
    const registered = h.app.operations.map((o) => `${o.operation} ${o.url}`).sort();
    assert.deepEqual(OPERATIONS.map((o) => `${o.operation} ${o.path}`).sort(), registered);
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, { post?: unknown }> };
    const documented = Object.entries(doc.paths)
      .filter(([, p]) => p.post)
      .map(([path]) => path)
      .sort();
    assert.deepEqual(OPERATIONS.map((o) => o.path).sort(), documented);
  });

  it('another merchant’s identifier is answered exactly as an unknown one, and nothing of the other merchant changes', async (t) => {
    const h = await build(t, dialect);
    const a = await tenant(h, h.merchant);
    for (const op of OPERATIONS) {
      for (const [field, id] of Object.entries(op.ids)) {
        await t.test(`${op.operation}: ${field}`, async () => {
          // A merchant of its own for each case: what one case creates cannot answer another.
          const b = await tenant(h, await h.newMerchant());
          const theirs = id.of(a);
          const unknown = lookalike(theirs);
          const bodies = [await op.body(b), await op.body(b)];
          const before = await snapshot(h, b.m.appId);
          const foreign = await h.call(op.path, { ...bodies[0], [field]: theirs }, { merchant: b.m });
          const fresh = await h.call(op.path, { ...bodies[1], [field]: unknown }, { merchant: b.m });
          // The unknown value reached the lookup (not a validation error): the comparison means something.
          assert.deepEqual([fresh.status, fresh.body.code], id.unknown, JSON.stringify(fresh.body));
          assert.deepEqual(comparable(foreign, theirs, op.volatile), comparable(fresh, unknown, op.volatile));
          assertUnchanged(before, await snapshot(h, b.m.appId), `${op.path} with another merchant’s ${field}`);
        });
      }
    }
  });

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
        for (const action of ['reveal', 'freeze', 'unfreeze']) {
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

  it('every operation refuses a missing, wrong or foreign signature, an old timestamp, an unknown appId, an HMAC signature for an RSA merchant and a replay, and writes nothing', async (t) => {
    const h = await build(t, dialect);
    const a = await tenant(h, h.merchant);
    const other = await h.newMerchant();
    const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const publicKeyPem = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const rsa = await createMerchant({ ctx: h.app.svc, input: { name: 'RSA merchant', signType: 'RSA-SHA256', publicKeyPem } });

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

  it('sandbox operations answer 404 with the envelope in production and write nothing; the same signed request works in the sandbox', async (t) => {
    const h = await build(t, dialect);
    const a = await tenant(h, h.merchant);
    // The production service on the same database: the same merchant, keys and data.
    const prod = await buildApp(testConfig(h.db.dataDir, { env: 'production', masterKey: h.config.masterKey }), {
      database: h.db.database,
      ...testLogging(),
    });
    try {
      assert.deepEqual(
        prod.operations.map((o) => o.url).sort(),
        OPERATIONS.filter((o) => !sandboxOnly(o))
          .map((o) => o.path)
          .sort(),
        'production registers every operation but the sandbox ones',
      );
      const doc = (await prod.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, unknown> };
      assert.deepEqual(
        Object.keys(doc.paths).filter((p) => p.startsWith('/sandbox/')),
        [],
      );
      for (const op of OPERATIONS.filter(sandboxOnly)) {
        await t.test(op.operation, async () => {
          const payload = sign(await op.body(a), a.m);
          const before = await snapshot(h);
          const res = await prod.inject({ method: 'POST', url: op.path, payload, headers: json });
          assertFailure(
            { status: res.statusCode, body: res.json(), headers: res.headers },
            op.path,
            404,
            '1004',
            `No operation at POST ${op.path}`,
          );
          assertUnchanged(before, await snapshot(h), `${op.path} in production`);
          assertSuccess(await h.call(op.path, payload, { raw: true }), op.path);
        });
      }
    } finally {
      await prod.close();
    }
  });
});
