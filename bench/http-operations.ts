// The operations the HTTP benchmark and the profile drive: the interface's four, and a top-up.
import { randomBytes } from 'node:crypto';
import { holderBody, kycBody } from '../test/helpers/app.js';
import type { Operation } from './http-drive.js';

export function operations(cards: string[]): Array<Operation & { key: string }> {
  const today = new Date().toISOString().slice(0, 10);
  const from = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10);
  const run = randomBytes(3).toString('hex');
  return [
    {
      key: 'list',
      name: 'transaction list (4.1)',
      path: '/api/network/networkAuthTradeList.html',
      randomStr: true,
      body: (n) => ({ cardId: cards[n % cards.length], beginDate: from, endDate: today, start: 0, maxSize: 10 }),
    },
    {
      key: 'holder',
      name: 'create cardholder (4.2)',
      path: '/api/network/holderCreate.html',
      randomStr: true,
      body: (n) => holderBody({ email: `bench.${run}.${n}@example.com`, idnoType: 2, idno: `B${run}${n}`.toUpperCase() }),
    },
    {
      key: 'kyc',
      name: 'KYC submission (4.3)',
      path: '/open/api/kyc/share/information',
      randomStr: false,
      body: (n) =>
        kycBody(
          { requestNo: `BENCH-${run}-${n}`, email: `kyc.${run}.${n}@example.com`, callbackUrl: 'https://merchant.example/hooks' },
          { number: `FR${run}${n}` },
        ),
    },
    {
      key: 'link',
      name: 'login-free link (4.4)',
      path: '/open/merchant/api/v2',
      // Optional in the sandbox; required with the timestamp bench:http signs by default (decisions §11).
      randomStr: process.env.BENCH_TIMESTAMP !== 'off',
      body: (n) => ({ email: `page.${run}.${n}@example.com` }),
    },
    {
      key: 'topup',
      name: 'card top-up',
      path: '/api/network/cardTopUp.html',
      randomStr: true,
      body: (n) => ({ cardId: cards[n % cards.length], amount: 0.01 }),
    },
  ];
}
