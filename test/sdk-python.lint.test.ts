// The Python SDK's CI checks (npm run lint → scripts/sdk-python-types.ts --check): its generated
// types are what the OpenAPI document gives, and every operation has a method taking its fields.
// A document changed the way another engineer's work will change it (a new operation such as
// 3-D Secure, a new field on an operation) must fail the check, naming what to add.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { openapiDocument } from '../scripts/openapi-doc.js';
import { checkPythonOperations, newResourceModule, operationsOf, PY_KEYWORDS, pythonModuleName } from '../scripts/sdk-python-operations.js';
import { generatePython, PY_OUT } from '../scripts/sdk-python-types.js';

const hasPython = spawnSync(process.env.PYTHON || 'python3', ['-c', 'import sys; sys.exit(sys.version_info < (3, 10))']).status === 0;
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v));

describe('the Python SDK’s lint checks', () => {
  let doc: Record<string, any>;
  before(async () => {
    doc = await openapiDocument();
  });

  it('the committed _wire.py is what the document gives, and every operation has its method', async () => {
    assert.equal(readFileSync(PY_OUT, 'utf8'), generatePython(doc), 'run npm run build');
    assert.deepEqual(await checkPythonOperations(doc), []);
  });

  it('a new operation without a Python method fails, naming it and showing the method to add', async () => {
    const changed = clone(doc);
    const apply = changed.paths['/api/network/cardApply.html'].post;
    changed.paths['/api/network/threeDsAuthenticate.html'] = {
      post: {
        ...clone(apply),
        operationId: 'threeDsAuthenticate',
        summary: 'Authenticate a card-not-present purchase (3-D Secure)',
      },
    };
    assert.notEqual(generatePython(changed), generatePython(doc), 'its types change _wire.py: the stale-file check fails too');
    const problems = await checkPythonOperations(changed);
    const missing = problems.find((p) =>
      p.startsWith('operation threeDsAuthenticate (POST /api/network/threeDsAuthenticate.html) has no method'),
    );
    assert.ok(missing, problems.join('\n'));
    assert.match(missing, /Add it to sdk\/python\/cardprogram\/resources\/cards\.py:/);
    assert.match(missing, /@operation\("threeDsAuthenticate", "write"\)/);
    assert.match(
      missing,
      /return self\._call\("threeDsAuthenticate", \{"holderId": holder_id, "currency": currency, "controls": controls, "randomStr": random_str\}\)/,
    );
    assert.ok(problems.some((p) => p.includes('threeDsAuthenticate is not in test/helpers/operations.ts OPERATIONS')));
  });

  it('a field added to an operation (or a method of the wrong kind) fails, naming the method', {
    skip: hasPython ? false : 'python3 3.10+ not found: arguments are checked by Python',
  }, async () => {
    const changed = clone(doc);
    const authorize = changed.paths['/sandbox/network/authorize'].post.requestBody.content['application/json'].schema;
    authorize.properties.terminalId = { type: 'string', maxLength: 8 };
    const problems = await checkPythonOperations(changed);
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(
      problems[0] ?? '',
      /^sdk\/python\/cardprogram\/resources\/sandbox\.py:\d+ sandbox\.authorize \(sandboxAuthorize\) takes no argument for the field terminalId: add `terminal_id: Optional\[str\] = None` and "terminalId": terminal_id to the body it sends$/,
    );
  });

  it('a new group’s module is a Python identifier: the Node SDK’s resource name, else its tag in snake case', async () => {
    const identifier = (name: string) => /^[a-z_][a-z0-9_]*$/.test(name) && !PY_KEYWORDS.has(name);
    const cases: Array<[string, string]> = [
      ['3-D Secure', 'three_d_secure'],
      ['2FA', 'two_fa'],
      ['30-day statements', 'three_zero_day_statements'],
      ['KYC', 'kyc'],
      ['Login-free page', 'login_free_page'],
      ['cardControls', 'card_controls'],
      ['three-ds', 'three_ds'],
      ['Cards', 'cards'],
      ['Class', 'class_'],
      ['  Wallet  tokens!', 'wallet_tokens'],
      ['—', 'resource'],
    ];
    for (const [tag, name] of cases) assert.equal(pythonModuleName(tag), name, tag);
    for (const op of operationsOf(doc)) assert.ok(identifier(pythonModuleName(op.tag)), `${op.tag} → ${pythonModuleName(op.tag)}`);
    // The Node SDK's resource first: the two SDKs have one shape (client.threeDs, client.three_ds).
    assert.equal(newResourceModule({ path: '/api/network/threeDsQuery.html', tag: '3-D Secure' }), 'three_ds');
    assert.equal(newResourceModule({ path: '/api/network/threeDsNext.html', tag: '3-D Secure' }), 'three_d_secure');
    // The existing resources keep their modules: each operation's rule names the file its method is in.
    const resources = join('sdk', 'python', 'cardprogram', 'resources');
    const moduleOf = new Map<string, string>();
    for (const f of readdirSync(resources).filter((n) => n.endsWith('.py'))) {
      for (const m of readFileSync(join(resources, f), 'utf8').matchAll(/@operation\("(\w+)"/g)) moduleOf.set(m[1] ?? '', f.slice(0, -3));
    }
    for (const op of operationsOf(doc)) assert.equal(newResourceModule(op), moduleOf.get(op.operationId), op.operationId);
  });

  it('an operation of a new group without a Python method names a module Python can import', async () => {
    const changed = clone(doc);
    changed.paths['/api/network/threeDsTokenQuery.html'] = {
      post: {
        ...clone(changed.paths['/api/network/threeDsQuery.html'].post),
        operationId: 'threeDsTokenQuery',
        tags: ['3-D Secure tokens'],
      },
    };
    const missing = (await checkPythonOperations(changed)).find((p) => p.startsWith('operation threeDsTokenQuery (POST'));
    assert.ok(missing);
    assert.match(
      missing,
      /Add it to sdk\/python\/cardprogram\/resources\/three_d_secure_tokens\.py \(a new resource, attached in _client\.py as client\.three_d_secure_tokens\):/,
    );
  });
});
