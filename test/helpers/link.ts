import { connect, type Socket } from 'node:net';
import type { TestContext } from 'node:test';
import { type LinkServer, startLink } from '../../src/card-network/link/listener.js';
import { decode, encode, type IsoMessage, message } from '../../src/iso8583/codec.js';
import { FrameReader, frame } from '../../src/iso8583/frame.js';
import { type Harness, randomStr } from './app.js';
import { noteSecret } from './log-audit.js';

/** The link started on the harness's service, on a free loopback port; stopped after the test. */
export async function linkOf(t: TestContext, h: Harness): Promise<LinkServer> {
  h.app.svc.config.network = { ...h.app.svc.config.network, port: 0, host: '127.0.0.1' };
  const link = await startLink(h.app.svc);
  if (!link) throw new Error('no link');
  // Stopped before the app closes its database (the harness closes it in its own after hook, which
  // runs first): decisions still running finish on an open database.
  const close = h.app.close.bind(h.app);
  let stopped: Promise<void> | null = null;
  const stop = () => (stopped ??= link.stop());
  h.app.close = (async () => {
    await stop();
    return close();
  }) as typeof h.app.close;
  t.after(stop);
  return link;
}

/** A raw connection: frames sent, frames received in order of arrival. */
export class Peer {
  private readonly reader = new FrameReader(65535);
  private readonly waiting: Array<(m: Buffer) => void> = [];
  private readonly queued: Buffer[] = [];
  closed: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk) => {
      for (const f of this.reader.push(chunk)) {
        const w = this.waiting.shift();
        if (w) w(f);
        else this.queued.push(f);
      }
    });
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.on('close', () => resolve()));
  }

  static async open(t: TestContext, port: number, host = '127.0.0.1'): Promise<Peer> {
    const socket = connect(port, host);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const peer = new Peer(socket);
    t.after(() => socket.destroy());
    return peer;
  }

  writeRaw(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  send(msg: IsoMessage): void {
    this.socket.write(frame(encode(msg)));
  }

  /** The next frame received (rejects if the connection closes first, or after 20 s). */
  next(): Promise<Buffer> {
    const q = this.queued.shift();
    if (q) return Promise.resolve(q);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no answer within 20 s')), 20_000);
      this.waiting.push((m) => {
        clearTimeout(timer);
        resolve(m);
      });
      void this.closed.then(() => {
        clearTimeout(timer);
        reject(new Error('connection closed'));
      });
    });
  }

  async ask(msg: IsoMessage): Promise<IsoMessage> {
    this.send(msg);
    return decode(await this.next());
  }
}

let stan = 0;
/** A fresh STAN (6 digits) and field 7 for each message of a run. */
export function trace(): { 7: string; 11: string } {
  stan = (stan + 1) % 1_000_000;
  const d = new Date();
  const p = (n: number) => String(n).padStart(2, '0');
  return {
    7: `${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`,
    11: String(100000 + (stan % 900000)).padStart(6, '0'),
  };
}

/** A card's full number, expiry (YYMM) and CVV2, from the sandbox's card details (noted as secrets for the log audit). */
export async function cardSecrets(h: Harness, cardId: string): Promise<{ pan: string; expiry: string; cvv: string }> {
  const res = await h.call('/sandbox/network/cardDetails', { cardId, randomStr: randomStr() });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  const { cardNo, expiry, cvv } = res.body.model as { cardNo: string; expiry: string; cvv: string };
  noteSecret('pan', cardNo);
  noteSecret('cvv', cvv);
  const [mm, yy] = expiry.split('/');
  return { pan: cardNo, expiry: `${yy}${mm}`, cvv };
}

/** An 0100 for a card: purchase by default, EUR (978), an acceptor in Berlin, e-commerce. */
export function authorizationRequest(
  card: { pan: string; expiry: string; cvv: string },
  opts: { amount?: number; processing?: string; currency?: string; extra?: Record<number, string>; mti?: string } = {},
): IsoMessage {
  return message(opts.mti ?? '0100', {
    2: card.pan,
    3: opts.processing ?? '000000',
    4: String(opts.amount ?? 1000).padStart(12, '0'),
    ...trace(),
    12: '171500',
    13: '1125',
    14: card.expiry,
    18: '5411',
    22: '810',
    32: '12345678',
    37: 'RRN000000001',
    41: 'TERM0001',
    42: 'ACCEPTOR0000001',
    43: `${'Corner Grocery'.padEnd(25)}${'Berlin'.padEnd(13)}DE`,
    48: `92${String(card.cvv.length).padStart(2, '0')}${card.cvv}`,
    49: opts.currency ?? '978',
    ...opts.extra,
  });
}
