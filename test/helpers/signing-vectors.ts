import { readFileSync } from 'node:fs';

/** The HMAC secret of the test vectors in docs/signing.md. */
export const SIGNING_SECRET = 'sk_test_5f3c0d7e9a1b4c2d8e6f0a1b2c3d4e5f';

// The three vectors of decisions §3, verbatim.
export const DECISION_VECTORS = [
  {
    body: { appId: 'mch_0123456789abcdef', email: 'alice@example.com' },
    string: 'appId=mch_0123456789abcdef&email=alice@example.com',
    sign: '534fe99247af6aa210b5ad738f1f5610867bc53c25d01daa2e0e0a30e95a5665',
  },
  {
    body: {
      appId: 'mch_0123456789abcdef',
      cardId: 'card_7Hq2',
      beginDate: '2026-11-01',
      endDate: '2026-11-21',
      start: 0,
      maxSize: 30,
      currency: 'EUR',
      randomStr: 'Zx9Kq2Lm8Np4Rt6Vb1Cd3Fg5Hj7Kl0Mn',
    },
    string:
      'appId=mch_0123456789abcdef&beginDate=2026-11-01&cardId=card_7Hq2&currency=EUR&endDate=2026-11-21&maxSize=30&randomStr=Zx9Kq2Lm8Np4Rt6Vb1Cd3Fg5Hj7Kl0Mn&start=0',
    sign: '4990b0d9c4105c7a1cdb85046c7c6879f8298f8c95ab799fbe9628437608676d',
  },
  {
    body: {
      appId: 'mch_0123456789abcdef',
      requestNo: 'REQ-1',
      email: 'bob@example.com',
      kycPlatform: 'SUMSUB',
      holderType: '1',
      callbackUrl: 'https://merchant.example/kyc',
      individualInfo: { lastName: 'Müller', firstName: 'Bob', gender: 1, address: { zipCode: '10115', city: 'Berlin' } },
      empty: '',
      nothing: null,
    },
    string:
      'appId=mch_0123456789abcdef&callbackUrl=https://merchant.example/kyc&email=bob@example.com&holderType=1&individualInfo={"address":{"city":"Berlin","zipCode":"10115"},"firstName":"Bob","gender":1,"lastName":"Müller"}&kycPlatform=SUMSUB&requestNo=REQ-1',
    sign: 'b9f8aad995e004ef0841018cec5cbaf5b53414802042cb5c11da9719ea7d8f76',
  },
];

// Values holding '&' and '%' (docs/signing.md, issue 14.6): escaped as %26 and %25 in the signing string.
export const ESCAPE_VECTORS = [
  {
    body: {
      appId: 'mch_0123456789abcdef',
      cardId: 'card_7Hq2',
      amount: 12.5,
      remark: 'rent&timestamp=1763900000000',
      randomStr: 'Zx9Kq2Lm8Np4Rt6Vb1Cd3Fg5Hj7Kl0Mn',
    },
    string:
      'amount=12.5&appId=mch_0123456789abcdef&cardId=card_7Hq2&randomStr=Zx9Kq2Lm8Np4Rt6Vb1Cd3Fg5Hj7Kl0Mn&remark=rent%26timestamp=1763900000000',
    sign: '934058ba3ce684f58c08ea2bffd1bb3b648341a4474f182351442b1fd74c4337',
  },
  {
    body: {
      appId: 'mch_0123456789abcdef',
      cardId: 'card_7Hq2',
      amount: 12.5,
      remark: '100% paid, not %26',
      randomStr: 'Zx9Kq2Lm8Np4Rt6Vb1Cd3Fg5Hj7Kl0Mn',
    },
    string:
      'amount=12.5&appId=mch_0123456789abcdef&cardId=card_7Hq2&randomStr=Zx9Kq2Lm8Np4Rt6Vb1Cd3Fg5Hj7Kl0Mn&remark=100%25 paid, not %2526',
    sign: '4295320d801fb758fe83ba6bc7b765cdda55413d497e878689e524ce31bc1b53',
  },
];

/** The five vectors above, in the order docs/signing.md lists them. */
export const ALL_VECTORS: ReadonlyArray<{ body: Record<string, unknown>; string: string; sign: string }> = [
  ...DECISION_VECTORS,
  ...ESCAPE_VECTORS,
];

/**
 * The vectors as docs/signing.md prints them ("Test vectors": one table row each, body, signing
 * string and sign in backticks), read from the document so a test can hold it to the code.
 */
export function docVectors(): Array<{ body: Record<string, unknown>; string: string; sign: string }> {
  const doc = readFileSync(new URL('../../docs/signing.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## Test vectors'), doc.indexOf('## With openssl'));
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [body, string, sign] = line.split(' | ').map((cell) => cell.replace(/^\|? *`/, '').replace(/` *\|?$/, ''));
      return { body: JSON.parse(body ?? ''), string: string ?? '', sign: sign ?? '' };
    });
}
