import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  headers: http.IncomingHttpHeaders;
  /** The body exactly as sent (what a signature covers). */
  raw: string;
  body: Record<string, any>;
  verified: boolean;
  /** When it arrived (performance.now()). */
  at: number;
}

/**
 * A merchant's callback receiver on loopback: verifies every request with the public
 * `standardwebhooks` package and answers what the test scripts (200 by default).
 */
export async function receiver(t: { after(fn: () => unknown): void }, webhookSecret: string) {
  const wh = new Webhook(webhookSecret);
  const received: Received[] = [];
  const script: Array<(res: http.ServerResponse) => void> = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const at = performance.now();
      let verified = false;
      try {
        wh.verify(raw, req.headers as Record<string, string>);
        verified = true;
      } catch {
        verified = false;
      }
      received.push({ headers: req.headers, raw, body: JSON.parse(raw), verified, at });
      const next = script.shift();
      if (next) next(res);
      else res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  t.after(
    () =>
      new Promise<void>((resolve) => {
        // A test may leave a request unanswered on purpose: close its connection too, or close() waits for ever.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    /** The next responses, in order (then 200s). */
    respond: (...responders: Array<(res: http.ServerResponse) => void>) => script.push(...responders),
    /** Forget scripted responses and what was received. */
    reset: () => {
      script.length = 0;
      received.length = 0;
    },
    server,
  };
}

/** Waits until `check` holds, polling. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}
