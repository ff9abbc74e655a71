// A token service provider's side of the service's calls (decisions §15.1, §15.4), written from the
// spec, not from this project's types: it takes `POST /tokens/{tokenReferenceId}/{action}` with a
// JSON body `{reason}`, records each, and answers what the test sets (200 `{}` by default; 503 while
// "down").
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TspCall {
  tokenReferenceId: string;
  action: string;
  body: Record<string, unknown>;
  idempotencyKey: string | undefined;
  /** The status it was answered. */
  answered: number;
}

export async function tspSimulator(t: { after(fn: () => unknown): void }) {
  const calls: TspCall[] = [];
  /** The status to answer (200: up; 503: down). */
  let status = 200;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const m = /^\/tokens\/([^/]+)\/(activate|suspend|resume|delete)$/.exec(req.url ?? '');
      if (req.method !== 'POST' || !m) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
        return;
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw);
      } catch {
        res.writeHead(400).end();
        return;
      }
      const key = req.headers['idempotency-key'];
      calls.push({
        tokenReferenceId: decodeURIComponent(m[1] as string),
        action: m[2] as string,
        body,
        idempotencyKey: typeof key === 'string' ? key : undefined,
        answered: status,
      });
      res.writeHead(status, { 'content-type': 'application/json' }).end(status < 300 ? '{}' : '{"error":"unavailable"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    /** The calls the TSP took (2xx). */
    taken: () => calls.filter((c) => c.answered < 300),
    answer: (next: number) => {
      status = next;
    },
  };
}

/**
 * Sends what is due to the TSP and waits until it is recorded. Through the service's own pass per
 * process (the reaper's timer may be running one): the second pass starts after the first ended,
 * so it sees every change committed before this was called.
 */
export async function flushTsp(svc: import('../../src/context.js').Services): Promise<void> {
  const { sendTspCallsOnce } = await import('../../src/tokens/tsp-calls.js');
  await sendTspCallsOnce(svc);
  await sendTspCallsOnce(svc);
}
