import { randomInt } from 'node:crypto';
import { sign } from '../helpers/app.js';

/** The demo merchant's credentials (its data directory's demo-merchant.json). */
export interface Demo {
  appId: string;
  secret: string;
  webhookSecret: string;
}

export interface Reply {
  status: number;
  body: Record<string, any>;
  replayed: boolean;
}

/**
 * A merchant that never gives up on a request while the service is killed and started again: each
 * body is signed once and sent until the service answers it (anything but a dead connection or a
 * 503), so the retries are the same request (the same randomStr). `errorLog` is what the service
 * logged of its 500s, to show beside one.
 */
export function signedClient(base: string, demo: Demo, errorLog: string[]) {
  const stats = { retries: 0, replays: 0, serverErrors: [] as string[] };
  const send = async (path: string, body: Record<string, unknown>): Promise<Reply> => {
    const payload = JSON.stringify(sign(body, demo));
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) {
        stats.retries++;
        await new Promise((r) => setTimeout(r, 20 + randomInt(100)));
      }
      if (attempt > 2000) throw new Error(`no answer for ${path} after 2000 attempts`);
      let res: Response;
      try {
        res = await fetch(`${base}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: payload,
          signal: AbortSignal.timeout(15_000),
        });
      } catch {
        continue; // refused, reset, or the answer lost with the process
      }
      let parsed: Record<string, any>;
      try {
        parsed = (await res.json()) as Record<string, any>;
      } catch {
        continue; // the connection died in the middle of the answer
      }
      // 503 is the documented "database unavailable, retry"; any other 5xx is a defect to report.
      if (res.status === 503) continue;
      if (res.status >= 500) {
        stats.serverErrors.push(`${path}: ${res.status} ${JSON.stringify(parsed)}`);
        await new Promise((r) => setTimeout(r, 300)); // let the service's log line of it arrive
      }
      const replayed = res.headers.get('x-idempotent-replay') === 'true';
      if (replayed) stats.replays++;
      return { status: res.status, body: parsed, replayed };
    }
  };
  /** The answer's body, or an error that says what came instead (with the service's log of a 500). */
  const ok = (what: string, r: Reply) => {
    if (r.status !== 200)
      throw new Error(
        `${what}: ${r.status} ${JSON.stringify(r.body)}${errorLog.length ? `\nthe service logged:\n${errorLog.join('\n')}` : ''}`,
      );
    return r.body;
  };
  return { send, ok, stats };
}
