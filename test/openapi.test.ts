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

  it('/docs serves the API reference (Swagger UI) from local assets, under a CSP', async (t) => {
    const h = await build(t, dialect);
    const page = await h.app.inject({ method: 'GET', url: '/docs/' });
    const html = page.statusCode === 302 ? await h.app.inject({ method: 'GET', url: String(page.headers.location) }) : page;
    assert.equal(html.statusCode, 200);
    assert.match(html.body, /swagger-ui/);
    assert.doesNotMatch(html.body, /https?:\/\/(?!127\.0\.0\.1)[a-z]/i, 'no asset from another host');
    assert.ok(html.headers['content-security-policy'], 'static CSP');
    assert.doesNotMatch(String(html.headers['content-security-policy']), /upgrade-insecure-requests/, 'works over plain http');
    // Its script and stylesheet are served from here.
    for (const asset of ['/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-ui.css']) {
      const res = await h.app.inject({ method: 'GET', url: asset });
      assert.equal(res.statusCode, 200, asset);
      assert.ok(res.body.length > 10_000, `${asset} has its content`);
    }
    const doc = await h.app.inject({ method: 'GET', url: '/docs/json' });
    assert.equal(doc.statusCode, 200);
    assert.deepEqual(doc.json().paths, (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json().paths);
  });
});
