import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkCallbackUrl, isPublicAddress } from '../src/callbacks/url-guard.js';

describe('callback URL guard (SSRF)', () => {
  it('classifies addresses', () => {
    const notPublic = [
      '127.0.0.1',
      '127.8.9.10',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:a9fe:a9fe',
      'ff02::1',
      '::a9fe:a9fe',
      '::7f00:1',
      '2002:7f00:1::',
      '2001:0:4136::1',
      // Found by an outside review: site-local, local-use NAT64, discard-only, benchmarking.
      'fec0::1',
      '64:ff9b:1::a9fe:a9fe',
      '100::1',
      '2001:2::1',
      'not-an-ip',
    ];
    for (const ip of notPublic) assert.equal(isPublicAddress(ip), false, ip);
    for (const ip of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '2001:4860:4860::8888'])
      assert.equal(isPublicAddress(ip), true, ip);
  });

  it('production: https to a public host only; sandbox: http and loopback are allowed', () => {
    const hostile = [
      'http://merchant.example/hook',
      'https://127.0.0.1/hook',
      'https://[::1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://10.0.0.5/hook',
      'https://localhost/hook',
      'https://intranet/hook',
      'https://db.internal/hook',
      'https://localhost./hook',
      'https://metadata.google.internal./computeMetadata',
      'https://metadata./',
      'https://[fec0::1]/hook',
      'ftp://merchant.example/hook',
      'https://user:pass@merchant.example/hook',
      'not a url',
    ];
    for (const url of hostile)
      assert.throws(
        () => checkCallbackUrl('callbackUrl', url, 'production'),
        (e: Error & { code?: string }) => e.code === '1002' && /^callbackUrl: /.test(e.message),
        url,
      );
    assert.equal(checkCallbackUrl('callbackUrl', 'https://merchant.example/hook', 'production'), 'https://merchant.example/hook');
    assert.equal(checkCallbackUrl('callbackUrl', 'http://127.0.0.1:9000/hook', 'sandbox'), 'http://127.0.0.1:9000/hook');
    assert.equal(checkCallbackUrl('callbackUrl', 'http://[::1]:9000/hook', 'sandbox'), 'http://[::1]:9000/hook');
    // The sandbox allows loopback, not the rest of the private world.
    for (const url of [
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.5/hook',
      'http://192.168.1.1/',
      'http://[::ffff:169.254.169.254]/',
    ])
      assert.throws(() => checkCallbackUrl('callbackUrl', url, 'sandbox'), /public or loopback host/, url);
    for (const url of ['https://[::a9fe:a9fe]/', 'https://[2002:7f00:1::]/'])
      assert.throws(() => checkCallbackUrl('notifyUrl', url, 'production'), /public host/, url);
  });
});
