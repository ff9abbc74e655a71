// "Wrote nothing" and "answered the same": database snapshots and reply comparisons for the
// isolation and authentication tests (test/isolation*.test.ts).
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import type { Harness, Reply } from './app.js';
import { ownTables } from './db.js';
import { CREATE, LINK } from './tenant.js';

export type Snapshot = Record<string, string[]>;
const tableCache = new WeakMap<Harness, Array<{ name: string; owner: string | null }>>();

/** Every row of every table, except (when named) the rows of one merchant. */
export async function snapshot(h: Harness, exceptMerchant?: string): Promise<Snapshot> {
  const db = h.db.database.db as unknown as Kysely<any>;
  let tables = tableCache.get(h);
  if (!tables) {
    tables = (await ownTables(h.db)).map((t) => ({
      name: t.name,
      owner: t.name === 'merchants' ? 'id' : t.columns.includes('merchant_id') ? 'merchant_id' : null,
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
export function assertUnchanged(before: Snapshot, after: Snapshot, what: string) {
  const changed = Object.keys({ ...before, ...after }).filter((t) => JSON.stringify(before[t]) !== JSON.stringify(after[t]));
  assert.deepEqual(changed, [], `${what} changed these tables`);
}

// ---- replies ----

/** A reply as another merchant may see it: everything but traceId and the date, the sent value masked. */
export function comparable(
  res: { status: number; body: unknown; headers: Reply['headers'] },
  sent: string,
  volatile: readonly string[] = [],
) {
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
export function assertFailure(res: Reply, path: string, status: number, code: string, msg: string | RegExp) {
  const what = `${path} → ${res.status} ${JSON.stringify(res.body)}`;
  assert.equal(res.status, status, what);
  const { traceId, errMsg, msg: text, detail, ...rest } = res.body;
  assert.deepEqual(rest, { code, model: null, success: false, error: true }, what);
  // The sandbox explains a 1006 (test/signature-detail.test.ts), except on 4.4; nothing else has detail.
  if (code === '1006' && path !== LINK) assert.equal(typeof detail?.signingString, 'string', what);
  else assert.equal(detail, undefined, what);
  if (typeof msg === 'string') assert.equal(text, msg, what);
  else assert.match(text, msg, what);
  assert.match(String(traceId), /^[0-9a-f]{32}$/);
  assert.equal(res.headers['x-trace-id'], traceId);
  // Cardholder creation also carries errMsg (interface §7); nothing else does.
  assert.equal(errMsg, path === CREATE ? text : undefined, what);
}

export function assertSuccess(res: Reply, path: string) {
  assert.equal(res.status, 200, `${path} → ${JSON.stringify(res.body)}`);
  // 4.1 and 4.2 answer bare bodies; every other operation the envelope.
  if ('code' in res.body) assert.equal(res.body.code, '0');
}
