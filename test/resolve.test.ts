import assert from 'node:assert/strict';
import { scrypt } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { deliver } from '../src/callbacks/deliver.js';
import { type DnsClient, HostResolver } from '../src/callbacks/resolve.js';

/** A name server that answers from a table, and counts what it was asked. */
function fakeDns(table: Record<string, { v4?: string[]; v6?: string[]; ttl?: number }>) {
  const asked: string[] = [];
  const answer = (name: string, family: 'v4' | 'v6') => {
    asked.push(`${family} ${name}`);
    const entry = table[name];
    const list = entry?.[family];
    if (!entry) return Promise.reject(Object.assign(new Error(`queryA ENOTFOUND ${name}`), { code: 'ENOTFOUND' }));
    if (!list) return Promise.reject(Object.assign(new Error(`queryA ENODATA ${name}`), { code: 'ENODATA' }));
    return Promise.resolve(list.map((address) => ({ address, ttl: entry.ttl ?? 300 })));
  };
  const dns: DnsClient = { resolve4: (n) => answer(n, 'v4'), resolve6: (n) => answer(n, 'v6') };
  return { dns, asked };
}

/** Fills libuv's thread pool (4 threads) with scrypt for about `ms`: what a login flood did. */
function busyPool(jobs: number) {
  return Promise.all(
    Array.from(
      { length: jobs },
      () => new Promise((resolve) => scrypt('x', 'salt', 32, { N: 2 ** 16, r: 8, p: 1, maxmem: 2 ** 27 }, resolve)),
    ),
  );
}

describe('callback and authorization-endpoint hosts, resolved without the thread pool (issue 26, finding 3)', () => {
  it('an address is itself, localhost is loopback, a name is asked of the name servers (A and AAAA) and kept for its TTL', async () => {
    const now = { ms: 0 };
    const { dns, asked } = fakeDns({ 'merchant.example': { v4: ['93.184.216.34'], v6: ['2606:2800:220:1::1'], ttl: 30 } });
    const r = new HostResolver('production', dns, () => now.ms);
    assert.deepEqual(await r.resolve('198.51.100.1'), [{ address: '198.51.100.1', family: 4 }]);
    assert.deepEqual(await r.resolve('[::1]'), [{ address: '::1', family: 6 }]);
    assert.deepEqual(
      (await r.resolve('localhost')).map((a) => a.address),
      ['127.0.0.1', '::1'],
    );
    assert.deepEqual(
      (await r.resolve('api.localhost.')).map((a) => a.address),
      ['127.0.0.1', '::1'],
    );
    assert.deepEqual(asked, [], 'no query for an address or localhost');
    const expected = [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ];
    assert.deepEqual(await r.resolve('Merchant.Example.'), expected);
    assert.deepEqual(await r.resolve('merchant.example'), expected);
    assert.equal(asked.length, 2, 'the second answer came from the cache');
    now.ms += 30_001;
    await r.resolve('merchant.example');
    assert.equal(asked.length, 4, 'asked again once its TTL is over');
    await assert.rejects(r.resolve('nowhere.example'), /ENOTFOUND/);
  });

  it('answers while scrypt fills the thread pool; deliver still refuses an address the rules do not allow', async () => {
    const server = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const flood = busyPool(16);
      const started = performance.now();
      const res = await deliver({ url: `http://localhost:${port}/hook`, body: '{}', headers: {}, timeoutMs: 2000, env: 'sandbox' });
      const took = performance.now() - started;
      assert.equal(res.status, 200, JSON.stringify(res));
      assert.ok(took < 500, `delivered in ${Math.round(took)} ms while the pool was busy`);
      await flood;
      // Production: localhost is loopback, which a callback may never reach; a name resolving to a private address neither.
      const prod = await deliver({ url: `http://localhost:${port}/hook`, body: '{}', headers: {}, timeoutMs: 2000, env: 'production' });
      assert.match(prod.error ?? '', /blocked/);
      const { dns } = fakeDns({ 'rebind.example': { v4: ['93.184.216.34', '10.0.0.1'] } });
      const sneaky = await deliver({
        url: `http://rebind.example:${port}/hook`,
        body: '{}',
        headers: {},
        timeoutMs: 2000,
        env: 'production',
        resolver: new HostResolver('production', dns).resolve,
      });
      assert.match(sneaky.error ?? '', /blocked/);
    } finally {
      server.close();
    }
  });
});
