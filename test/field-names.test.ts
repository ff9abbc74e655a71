// One rule for a field the operation does not know, whichever operation and whichever check Ajv met
// first: "X: is not a known field", with "did you mean Y?" when X looks like a known field.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import { closestField } from '../src/http/errors.js';
import { build, holderBody, rowCounts } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

const rnd = () => randomBytes(16).toString('hex');

it('closestField: case, underscores and small typos; nothing for a stranger', () => {
  const known = ['cardId', 'amount', 'randomStr', 'holderId'];
  assert.equal(closestField('cardID', known), 'cardId');
  assert.equal(closestField('card_id', known), 'cardId');
  assert.equal(closestField('cardid', known), 'cardId');
  assert.equal(closestField('CARD-ID', known), 'cardId');
  assert.equal(closestField('amout', known), 'amount');
  assert.equal(closestField('randomstring', known), undefined);
  assert.equal(closestField('nickname', known), undefined);
  assert.equal(closestField('id', known), undefined);
});

eachDialect('unknown and misspelt fields', (dialect) => {
  it('cardID, card_id and cardid get the same answer on every operation that takes a cardId', async (t) => {
    const h = await build(t, dialect);
    const before = await rowCounts(h);
    const operations: Array<[string, Record<string, unknown>]> = [
      ['/api/network/cardQuery.html', {}],
      ['/api/network/cardTopUp.html', { amount: 1000 }],
      ['/sandbox/network/authorize', { amount: 1000 }],
      ['/sandbox/network/cardDetails', {}],
    ];
    for (const [path, rest] of operations) {
      for (const spelling of ['cardID', 'card_id', 'cardid']) {
        const res = await h.call(path, { ...rest, [spelling]: 'card_x', randomStr: rnd() });
        assert.equal(res.status, 400, `${path} ${spelling}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.code, '1002');
        assert.equal(res.body.msg, `${spelling}: is not a known field; did you mean cardId?`, path);
      }
    }
    assert.deepEqual(await rowCounts(h), before);
  });

  it('other operations and fields: holderID, amout, begin_date, a nested KYC field', async (t) => {
    const h = await build(t, dialect);
    const before = await rowCounts(h);
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['/api/network/holderQuery.html', { holderID: 'hld_x' }, 'holderID: is not a known field; did you mean holderId?'],
      ['/api/network/cardTopUp.html', { cardId: 'card_x', amout: 5 }, 'amout: is not a known field; did you mean amount?'],
      [
        '/api/network/networkAuthTradeList.html',
        { cardId: 'card_x', begin_date: '2026-01-01', endDate: '2026-01-31', start: 0 },
        'begin_date: is not a known field; did you mean beginDate?',
      ],
      // Nothing missing: the unknown field is reported as before, with its suggestion.
      ['/api/network/cardApply.html', { holderId: 'hld_x', currency: 'EUR', Currency: 'USD' }, 'Currency: is not a known field'],
      ['/api/network/cardQuery.html', { cardId: 'card_x', nickname: 'x' }, 'nickname: is not a known field'],
    ];
    for (const [path, body, msg] of cases) {
      const res = await h.call(path, { ...body, randomStr: rnd() });
      assert.equal(res.status, 400, `${path}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, '1002');
      assert.equal(res.body.msg, msg, path);
    }
    const holder = await h.call('/api/network/holderCreate.html', holderBody({ firstname: holderBody().firstName, firstName: undefined }));
    assert.equal(holder.status, 400);
    assert.equal(holder.body.msg, 'firstname: is not a known field; did you mean firstName?');
    assert.equal(holder.body.errMsg, holder.body.msg);
    assert.deepEqual(await rowCounts(h), before);
  });

  it('a field that is simply missing is still "is required"', async (t) => {
    const h = await build(t, dialect);
    const res = await h.call('/api/network/cardQuery.html', { randomStr: rnd() });
    assert.equal(res.status, 400);
    assert.equal(res.body.msg, 'cardId: is required');
  });
});
