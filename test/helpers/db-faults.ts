// What the database fault tests share: a signed call to a running service, the 503 it should get,
// and a TCP proxy in front of PostgreSQL that can drop, refuse or poison connections.
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { TestContext } from 'node:test';
import { sign } from './app.js';
import { dialectSkip, isolatedDatabase, testDialects } from './db.js';

import type { Started } from './service.js';

export interface Demo {
  appId: string;
  secret: string;
}

export async function post(service: Started, demo: Demo, path: string, body: Record<string, unknown>) {
  const started = Date.now();
  const res = await fetch(`${service.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(sign(body, { ...demo, webhookSecret: '' })),
    signal: AbortSignal.timeout(15_000),
  });
  return {
    status: res.status,
    body: (await res.json()) as Record<string, any>,
    retryAfter: res.headers.get('retry-after'),
    ms: Date.now() - started,
  };
}

export function alive(service: Started): boolean {
  return service.child.exitCode === null && service.child.signalCode === null;
}

export function assertUnavailable(reply: Awaited<ReturnType<typeof post>>, retryAfter: string): void {
  assert.equal(reply.status, 503, JSON.stringify(reply.body));
  assert.deepEqual(
    { code: reply.body.code, success: reply.body.success, error: reply.body.error, model: reply.body.model, retryAfter: reply.retryAfter },
    { code: '1', success: false, error: true, model: null, retryAfter },
  );
  assert.equal(reply.body.msg, `Service temporarily unavailable; retry in ${retryAfter} s`);
  assert.ok(!/at |\.ts|\.js|SQLITE|ECONN|postgres/i.test(JSON.stringify(reply.body)), 'no internal detail in the reply');
}

/** PostgreSQL's ErrorResponse for a session ended by an administrator (pg_terminate_backend). */
const fatal57P01 = (() => {
  const fields = Buffer.from('SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0');
  const head = Buffer.alloc(5);
  head.write('E');
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
})();

/**
 * A TCP proxy in front of PostgreSQL that can go down like a restarting server: every open
 * connection is cut and new ones are refused, until it comes back on the same port. The real
 * PostgreSQL keeps serving the other tests meanwhile.
 */
async function pgProxy(t: TestContext, target: { host: string; port: number }) {
  const sockets = new Set<Socket>();
  const upstreamPorts = new Set<number>();
  // Connections that look alive to the client but are reset by the first bytes it sends.
  const clients = new Set<Socket>();
  // Connections that look alive to the client but answer its next bytes with a reset, or with the
  // error reply a server sends when it ends a session (FATAL 57P01) and a close.
  const stale = new Map<Socket, 'reset' | 'fatal'>();
  let resets = 0;
  // A network black hole: connections stay open and accept bytes, and nothing comes back.
  let holed = false;
  let server: Server | null = null;
  let port = 0;
  const up = async () => {
    const listening = createServer((client) => {
      const upstream = connect(target.port, target.host);
      upstream.on('connect', () => upstream.localPort && upstreamPorts.add(upstream.localPort));
      clients.add(client);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => {
          sockets.delete(s);
          clients.delete(s);
          stale.delete(s);
        });
        s.on('error', () => undefined);
      }
      // One side gone, the other follows, as with a real server: a proxy that kept the client's side
      // open would be a network black hole, where queries wait for TCP keepalive.
      upstream.on('close', () => client.end());
      client.on('close', () => upstream.destroy());
      client.on('data', (chunk: Buffer) => {
        if (holed) return;
        const mode = stale.get(client);
        if (!mode) return void upstream.write(chunk);
        // Counted once: what the client sends after (its goodbye) goes nowhere.
        stale.delete(client);
        resets++;
        upstream.destroy();
        if (mode === 'reset') client.resetAndDestroy();
        else client.end(fatal57P01);
      });
      upstream.on('data', (chunk: Buffer) => {
        if (!holed) client.write(chunk);
      });
    });
    await new Promise<void>((resolve) => listening.listen(port, '127.0.0.1', resolve));
    port = (listening.address() as { port: number }).port;
    server = listening;
  };
  const down = async () => {
    const s = server;
    server = null;
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => s?.close(resolve));
  };
  /** Every open connection goes dead silently, as a server session ended while the client sat idle. */
  const staleAll = (mode: 'reset' | 'fatal' = 'reset') => {
    for (const client of clients) stale.set(client, mode);
  };
  /** Every connection, open or new, goes quiet (a black hole) until heal(). */
  const blackhole = () => {
    holed = true;
  };
  const heal = () => {
    holed = false;
    // What was half-said meanwhile cannot be resumed: the connections are cut, as a network
    // recovering from a partition leaves them.
    for (const socket of sockets) socket.destroy();
  };
  await up();
  t.after(down);
  return { port: () => port, up, down, upstreamPorts, staleAll, blackhole, heal, resets: () => resets };
}

export const PG = testDialects().find((d) => d.name === 'postgres');
export const SQLITE = testDialects().find((d) => d.name === 'sqlite');
/** The `skip` option of a PostgreSQL-only test, and of a SQLite-only one, with the true reason. */
export const PG_SKIP = dialectSkip('postgres');
export const SQLITE_SKIP = dialectSkip('sqlite');

/** An isolated PostgreSQL database with a proxy in front of it; via(url) points a URL of it at the proxy. */
export async function behindProxy(t: TestContext) {
  const db = await isolatedDatabase(PG as NonNullable<typeof PG>);
  t.after(() => db.cleanup());
  const target = new URL(db.url);
  const proxy = await pgProxy(t, { host: target.hostname, port: Number(target.port || 5432) });
  const via = (url: string) => {
    const u = new URL(url);
    u.host = `127.0.0.1:${proxy.port()}`;
    return u.toString();
  };
  return { db, proxy, via };
}
