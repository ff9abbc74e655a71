import assert from 'node:assert/strict';
import { it } from 'node:test';
import { build } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

eachDialect('OpenAPI document', (dialect) => {
  it('lists every operation the app registers, each with tags, a request schema and its responses', async (t) => {
    const h = await build(t, dialect);
    const res = await h.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    const doc = res.json();
    assert.equal(doc.openapi, '3.1.0');
    assert.match(doc.info.version, /^\d+\.\d+\.\d+/);
    const paths = doc.paths as Record<string, Record<string, any>>;
    // Every signed operation the app registered, taken from the app itself.
    const expected = h.app.operations.map((o) => o.url);
    assert.ok(expected.length >= 21, `all operations registered (${expected.length})`);
    for (const path of expected) {
      const op = paths[path]?.post;
      assert.ok(op, `${path} is documented`);
      assert.ok(op.tags?.length, `${path} has tags`);
      assert.ok(op.requestBody?.content?.['application/json']?.schema, `${path} has a request schema`);
      for (const status of ['200', '400', '401', '409', '500']) assert.ok(op.responses?.[status], `${path} documents ${status}`);
    }
    const documentedPosts = Object.entries(paths)
      .filter(([, ops]) => ops.post)
      .map(([p]) => p)
      .sort();
    assert.deepEqual(documentedPosts, [...expected].sort(), 'no undocumented and no stale operations');
    assert.equal(paths['/healthz'], undefined, 'operators’ health check, not a merchant operation');
    for (const [path, ops] of Object.entries(paths))
      assert.equal(ops.post?.operationId, h.app.operations.find((o) => o.url === path)?.operation);
  });

  it('/docs serves the API reference from local assets under a strict CSP; /openapi.json stays', async (t) => {
    const h = await build(t, dialect);
    for (const url of ['/docs', '/docs/']) {
      const html = await h.app.inject({ method: 'GET', url });
      assert.equal(html.statusCode, 200, url);
      assert.match(html.body, /<title>cardprogram API reference<\/title>/);
      assert.doesNotMatch(html.body, /https?:\/\//i, 'no asset from another host');
      assert.doesNotMatch(html.body, /<script>|<script type/, 'no inline script');
      const csp = String(html.headers['content-security-policy']);
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.match(csp, /connect-src 'self'(;|$)/);
      assert.doesNotMatch(csp, /unsafe-eval|upgrade-insecure-requests|\*/);
    }
    const setup = await h.app.inject({ method: 'GET', url: '/docs/reference.js' });
    assert.equal(setup.statusCode, 200);
    assert.match(setup.body, /"url":"\/openapi\.json"/);
    const bundle = await h.app.inject({ method: 'GET', url: '/docs/scalar.js' });
    assert.equal(bundle.statusCode, 200);
    assert.match(String(bundle.headers['content-type']), /^application\/javascript/);
    assert.ok(bundle.body.length > 100_000, 'the renderer is served from here');
    const doc = await h.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(doc.statusCode, 200);
    assert.doesNotMatch(JSON.stringify(doc.json().paths), /"\/docs/, 'the reference is not an operation');
  });

  it('explains signing up front, and gives every operation an example body the service accepts as valid', async (t) => {
    const h = await build(t, dialect);
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    assert.match(doc.info.description, /## Signing every request/);
    assert.match(doc.info.description, /534fe99247af6aa210b5ad738f1f5610867bc53c25d01daa2e0e0a30e95a5665/);
    for (const { url } of h.app.operations) {
      const media = doc.paths[url].post.requestBody.content['application/json'];
      const example = media.example ?? Object.values(media.examples ?? {})[0];
      assert.ok(example && typeof example === 'object', `${url} has an example body`);
      assert.equal(typeof example.sign, 'string', `${url}: the example shows sign`);
      // The example, as this merchant, signed: whatever else happens, it is not refused as invalid.
      const { appId: _a, sign: _s, ...fields } = example;
      const res = await h.call(url, fields);
      assert.notEqual(res.body.code, '1002', `${url}: ${JSON.stringify(example)} -> ${JSON.stringify(res.body)}`);
      assert.ok(res.status < 500, `${url}: ${res.status}`);
    }
  });
});
