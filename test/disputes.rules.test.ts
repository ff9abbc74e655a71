// Disputes (issue 29, decisions §13.2): every refusal with its code and a message naming the field,
// and evidence that is not what it says (HTML as PDF, SVG, a zip or a decompression bomb as PNG,
// oversize, too many) refused without writing anything, on both databases through the real app.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { evidenceFile } from '../src/disputes/query.js';
import { fundMerchant } from '../src/ledger/funding.js';
import { updateMerchant } from '../src/merchants/manage.js';
import { runVerb } from '../src/runner.js';
import { build, type Harness, randomStr, rowCounts } from './helpers/app.js';
import { balances, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';
import { clearedPurchase, DISPUTE, disputeOk, disputeRefused, file, fundingOf, jpeg, pdf, png, zip } from './helpers/disputes.js';

const TABLES = ['disputes', 'dispute_evidence', 'dispute_events', 'ledger_postings', 'callback_events'] as const;
const counts = (h: Harness) => rowCounts(h, TABLES);

eachDialect('disputes: refusals', (dialect) => {
  it('only a cleared purchase can be disputed: unknown, not cleared, reversed, a refund, refunded in full, declined', async (t) => {
    const h = await build(t, dialect);
    const { cardId, tradeId, authId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const before = await rowCounts(h, ['disputes', 'dispute_evidence', 'dispute_events']);
    const refuse = (body: Record<string, unknown>, msg: RegExp) =>
      disputeRefused(h, 'create', { reason: 'fraudulent', ...body }, 409, '2730').then((m) => assert.match(m, msg));
    await refuse({ tradeId: 'trd_unknown' }, /^tradeId: transaction not found$/);
    const open = await ok(h, '/sandbox/network/authorize', { cardId, amount: 5 });
    await refuse({ tradeId: open.tradeId }, /^tradeId: the authorization is not cleared/);
    await ok(h, '/sandbox/network/reverse', { tradeId: open.tradeId });
    await refuse({ tradeId: open.tradeId }, /^tradeId: the authorization was reversed or voided/);
    const refund = await ok(h, '/sandbox/network/refund', { tradeId, amount: 40 });
    await refuse({ tradeId: refund.tradeId }, /^tradeId: a refund or reversal record cannot be disputed/);
    await refuse({ tradeId }, /^tradeId: the purchase was refunded in full$/);
    // The authorization's id names its one payment (issue 43): refunded in full, it is refused as the payment is.
    await refuse({ tradeId: authId }, /^tradeId: the purchase was refunded in full$/);
    const declined = await h.call('/sandbox/network/authorize', { cardId, amount: 1000, randomStr: randomStr() });
    assert.equal(declined.body.code, '2725');
    await refuse({ tradeId: declined.body.detail.tradeId }, /^tradeId: a declined authorization charged nothing/);
    assert.deepEqual(await rowCounts(h, ['disputes', 'dispute_evidence', 'dispute_events']), before);
  });

  it('the amount: at most cleared less refunds and earlier disputes; one open dispute per transaction', async (t) => {
    const h = await build(t, dialect);
    const { tradeId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    await ok(h, '/sandbox/network/refund', { tradeId, amount: 10 });
    let msg = await disputeRefused(h, 'create', { tradeId, reason: 'other', amount: 30.01 }, 400, '2723');
    assert.equal(msg, 'amount: at most 30 EUR can be disputed (cleared, less refunds and earlier disputes)');
    await disputeRefused(h, 'create', { tradeId, reason: 'other', amount: 0 }, 400, '2723');
    await disputeRefused(h, 'create', { tradeId, reason: 'other', amount: 1.001 }, 400, '2723');
    msg = await disputeRefused(h, 'create', { tradeId, reason: 'nope' }, 400, '1002');
    assert.match(msg, /^reason: must be fraudulent, not_received/);
    const d = await disputeOk(h, 'create', { tradeId, reason: 'duplicate', amount: 20, explanation: 'twice' });
    msg = await disputeRefused(h, 'create', { tradeId, reason: 'other', amount: 5 }, 409, '2741');
    assert.equal(msg, `tradeId: dispute ${d.disputeId} is open on this transaction`);
    await disputeOk(h, 'decide', { disputeId: (await disputeOk(h, 'submit', { disputeId: d.disputeId })).disputeId, outcome: 'lost' });
    // Decided, it still counts: 10 are left.
    msg = await disputeRefused(h, 'create', { tradeId, reason: 'other', amount: 11 }, 400, '2723');
    assert.match(msg, /^amount: at most 10 EUR/);
    const rest = await disputeOk(h, 'create', { tradeId, reason: 'other' });
    assert.equal(rest.amount, 10);
    msg = await disputeRefused(h, 'update', { disputeId: rest.disputeId, amount: 10.5 }, 400, '2723');
    assert.match(msg, /^amount: at most 10 EUR/);
  });

  it('the status allows the operation, or 2742; an unknown dispute is 2740; a submission needs an explanation', async (t) => {
    const h = await build(t, dialect);
    const { tradeId } = await clearedPurchase(h);
    await disputeRefused(h, 'query', { disputeId: 'dsp_unknown' }, 404, '2740');
    await disputeRefused(h, 'submit', { disputeId: 'dsp_unknown' }, 404, '2740');
    const d = await disputeOk(h, 'create', { tradeId, reason: 'not_as_described' });
    let msg = await disputeRefused(h, 'submit', { disputeId: d.disputeId }, 400, '1002');
    assert.equal(msg, 'explanation: is required to submit a dispute: set it with disputeUpdate');
    await disputeRefused(h, 'decide', { disputeId: d.disputeId, outcome: 'won' }, 409, '2742');
    await disputeOk(h, 'update', { disputeId: d.disputeId, explanation: 'the item was broken' });
    await disputeOk(h, 'submit', { disputeId: d.disputeId });
    msg = await disputeRefused(h, 'submit', { disputeId: d.disputeId }, 409, '2742');
    assert.equal(msg, 'disputeId: the dispute is submitted; only an unsubmitted dispute can be submitted');
    await disputeRefused(h, 'update', { disputeId: d.disputeId, reason: 'other' }, 409, '2742');
    await disputeOk(h, 'decide', { disputeId: d.disputeId, outcome: 'won', amount: 10 });
    msg = await disputeRefused(h, 'withdraw', { disputeId: d.disputeId }, 409, '2742');
    assert.match(msg, /^disputeId: the dispute is won; only an unsubmitted or submitted dispute can be withdrawn$/);
    // The won amount is what the network paid: the rest of the purchase can be disputed no more (it was disputed).
    assert.equal((await disputeOk(h, 'query', { disputeId: d.disputeId })).outcomeAmount, 10);
  });

  it('provisional credit the merchant’s funding cannot advance refuses the submission (2726) and changes nothing', async (t) => {
    const h = await build(t, dialect);
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, disputeProvisionalCredit: true }, actor: 'test' });
    const { cardId, tradeId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const d = await disputeOk(h, 'create', { tradeId, reason: 'fraudulent', explanation: 'not me' });
    // 10 EUR are left: the 40 cannot be advanced.
    const left = ((await fundingOf(h)) - 1000) / 100;
    await runVerb(h.app.svc, fundMerchant, {
      input: { appId: h.merchant.appId, currency: 'EUR', amount: `-${left}`, reference: 'drain' },
      actor: 'test',
    });
    const before = await counts(h);
    await disputeRefused(h, 'submit', { disputeId: d.disputeId }, 409, '2726');
    assert.deepEqual(await counts(h), before);
    assert.equal((await disputeOk(h, 'query', { disputeId: d.disputeId })).status, 'unsubmitted');
    assert.equal((await balances(h, cardId)).available, 60);
  });
});

eachDialect('disputes: evidence', (dialect) => {
  it('PDF, PNG and JPEG are recognised by their bytes; files are added and removed while unsubmitted', async (t) => {
    const h = await build(t, dialect);
    const { tradeId } = await clearedPurchase(h);
    const d = await disputeOk(h, 'create', {
      tradeId,
      reason: 'not_received',
      evidence: [file('receipt.pdf', 'application/pdf', pdf(10)), file('photo.jpg', 'image/jpeg', jpeg(640, 480))],
    });
    assert.deepEqual(
      d.evidence.map((e: { fileName: string; contentType: string }) => `${e.fileName} ${e.contentType}`),
      ['photo.jpg image/jpeg', 'receipt.pdf application/pdf'],
    );
    const u = await disputeOk(h, 'update', {
      disputeId: d.disputeId,
      removeEvidence: ['photo.jpg'],
      evidence: [file('photo.jpg', 'image/png', png(3, 3))],
    });
    assert.deepEqual(u.evidence.map((e: { fileName: string; contentType: string }) => `${e.fileName} ${e.contentType}`).sort(), [
      'photo.jpg image/png',
      'receipt.pdf application/pdf',
    ]);
    // Opened for a reviewer: the same bytes, the type its bytes are.
    const opened = await evidenceFile(h.db.database.db, h.app.svc.box, d.disputeId, 'receipt.pdf');
    assert.deepEqual([opened?.contentType, opened?.bytes.equals(pdf(10))], ['application/pdf', true]);
    assert.equal(await evidenceFile(h.db.database.db, h.app.svc.box, d.disputeId, 'nothing.pdf'), undefined);
    // Sealed at rest: the stored value is not the file's Base64.
    const rows = await h.db.database.db.selectFrom('dispute_evidence').select(['data_enc', 'size']).execute();
    for (const r of rows) assert.ok(r.data_enc.startsWith('v1.') && !r.data_enc.includes(pdf(10).toString('base64').slice(0, 12)));
  });

  it('what is not a PDF, PNG or JPEG, or too large, or one too many, is refused and writes nothing', async (t) => {
    const h = await build(t, dialect);
    const { tradeId } = await clearedPurchase(h);
    const html = Buffer.from('<!DOCTYPE html><html><body><script>alert(1)</script></body></html>');
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><rect width="1" height="1"/></svg>');
    const bomb = png(100_000, 100_000, Buffer.alloc(64));
    const truncated = png(2, 2).subarray(0, 40);
    const trailing = Buffer.concat([png(2, 2), zip()]);
    const cases: Array<[string, Record<string, unknown>, number, string, RegExp]> = [
      [
        'HTML declared PDF',
        file('a.pdf', 'application/pdf', html),
        400,
        '2744',
        /^evidence\[0\]\.data: is not a PDF, PNG or JPEG by its first bytes$/,
      ],
      ['SVG declared PNG', file('a.png', 'image/png', svg), 400, '2744', /^evidence\[0\]\.data: is not a PDF, PNG or JPEG/],
      ['a zip declared PNG', file('a.png', 'image/png', zip()), 400, '2744', /^evidence\[0\]\.data: is not a PDF, PNG or JPEG/],
      [
        'a decompression bomb PNG',
        file('a.png', 'image/png', bomb),
        400,
        '2744',
        /^evidence\[0\]\.data: is an image of 100000×100000 pixels/,
      ],
      ['a truncated PNG', file('a.png', 'image/png', truncated), 400, '2744', /^evidence\[0\]\.data: is not a complete PNG/],
      ['a zip after a PNG', file('a.png', 'image/png', trailing), 400, '2744', /^evidence\[0\]\.data: is not a PNG: data follows its end/],
      [
        'a PNG declared JPEG',
        file('a.jpg', 'image/jpeg', png()),
        400,
        '2744',
        /^evidence\[0\]\.contentType: is image\/jpeg, but the file is image\/png$/,
      ],
      [
        'a PDF without its end',
        file('a.pdf', 'application/pdf', Buffer.from('%PDF-1.7\n1 0 obj')),
        400,
        '2744',
        /^evidence\[0\]\.data: is not a complete PDF/,
      ],
      [
        'bad Base64',
        { fileName: 'a.pdf', contentType: 'application/pdf', data: 'JVBERi0x%%%' },
        400,
        '2744',
        /^evidence\[0\]\.data: must be Base64/,
      ],
      [
        'a declared type of its own',
        file('a.svg', 'image/svg+xml', svg),
        400,
        '1002',
        /^evidence\/0\/contentType|^evidence\[0\]\.contentType|contentType: must be/,
      ],
      [
        'more than 5 MB',
        file('big.pdf', 'application/pdf', pdf(5 * 1024 * 1024 + 1 - pdf(0).length)),
        400,
        '2744',
        /^evidence\[0\]\.data: is 5242881 bytes decoded; at most 5242880/,
      ],
    ];
    const before = await counts(h);
    const d = await disputeOk(h, 'create', { tradeId, reason: 'other' });
    const withDispute = await counts(h);
    for (const [what, evidence, status, code, msg] of cases) {
      const created = await disputeRefused(h, 'create', { tradeId: 'x', reason: 'other', evidence: [evidence] }, status, code).catch(
        (err) => assert.fail(`${what}: ${err.message}`),
      );
      if (code === '2744') assert.match(created, msg, what);
      const updated = await disputeRefused(h, 'update', { disputeId: d.disputeId, evidence: [evidence] }, status, code);
      assert.match(updated, msg, what);
      assert.deepEqual(await counts(h), withDispute, what);
    }
    assert.notDeepEqual(before, withDispute);
    // Ten files at most: eleven in one body is a schema refusal, an eleventh added later 2744.
    const ten = Array.from({ length: 10 }, (_, i) => file(`f${i}.png`, 'image/png', png()));
    await disputeRefused(h, 'update', { disputeId: d.disputeId, evidence: [...ten, file('f10.png', 'image/png', png())] }, 400, '1002');
    await disputeOk(h, 'update', { disputeId: d.disputeId, evidence: ten });
    const full = await counts(h);
    const msg = await disputeRefused(
      h,
      'update',
      { disputeId: d.disputeId, evidence: [file('more.png', 'image/png', png())] },
      400,
      '2744',
    );
    assert.equal(msg, 'evidence: the dispute would have 11 files; at most 10');
    await disputeRefused(
      h,
      'update',
      { disputeId: d.disputeId, removeEvidence: ['f0.png'], evidence: [file('f1.png', 'image/png', png())] },
      400,
      '2744',
    );
    assert.deepEqual(await counts(h), full);
  });

  it('a body over 8 MiB is 413 before anything is read', async (t) => {
    const h = await build(t, dialect);
    const { tradeId } = await clearedPurchase(h);
    const big = file('big.pdf', 'application/pdf', pdf(5 * 1024 * 1024 - 100));
    const res = await h.call(DISPUTE.create, { tradeId, reason: 'other', evidence: [big, big], randomStr: randomStr() });
    assert.equal(res.status, 413);
    assert.equal(res.body.msg, 'Request body is larger than 8 MiB');
    assert.deepEqual((await rowCounts(h, ['disputes'])).disputes, 0);
  });
});
