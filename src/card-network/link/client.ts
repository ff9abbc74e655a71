import { readFileSync } from 'node:fs';
import { type Socket, connect as tcpConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { answerMti, decode, encode, type IsoMessage } from '../../iso8583/codec.js';
import { FrameReader, frame } from '../../iso8583/frame.js';

/**
 * The acquirer's side of the card network link (decisions §12.1): one connection, framed ISO 8583
 * messages, many in flight, each answer matched to its request by answer MTI, STAN (field 11),
 * field 7 and field 32, whatever order they come back in. Used by `cardprogram network send` (the
 * simulator, §12.11) and by `npm run bench:network`.
 */

export interface LinkClientOptions {
  host: string;
  port: number;
  /** TLS with a client certificate (files): the link's production setting. Null or absent: plain TCP. */
  tls?: { ca: string; cert: string; key: string; servername?: string } | null;
  /** How long to wait for the connection, ms (default 5 000). */
  connectTimeoutMs?: number;
}

/** The connection failed, closed, or an answer did not come in time. */
export class LinkClientError extends Error {
  override name = 'LinkClientError';
}

/** The key an answer is matched by: its MTI, fields 11, 7 and 32. */
const keyOf = (mti: string, fields: Map<number, string>) => `${mti}|${fields.get(11) ?? ''}|${fields.get(7) ?? ''}|${fields.get(32) ?? ''}`;

interface Waiting {
  resolve(m: IsoMessage): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

export class LinkClient {
  private readonly reader = new FrameReader(65535);
  private readonly waiting = new Map<string, Waiting[]>();
  private closedWith: Error | null = null;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      let frames: Buffer[];
      try {
        frames = this.reader.push(chunk);
      } catch (err) {
        return this.fail(new LinkClientError(`the link sent a bad frame: ${(err as Error).message}`));
      }
      for (const f of frames) {
        let msg: IsoMessage;
        try {
          msg = decode(f);
        } catch (err) {
          return this.fail(new LinkClientError(`the link sent a message that does not decode: ${(err as Error).message}`));
        }
        const key = keyOf(msg.mti, msg.fields);
        const queue = this.waiting.get(key);
        const w = queue?.shift();
        if (queue && queue.length === 0) this.waiting.delete(key);
        if (w) {
          clearTimeout(w.timer);
          w.resolve(msg);
        }
      }
    });
    socket.on('error', (err) => this.fail(new LinkClientError(`the link connection failed: ${err.message}`)));
    socket.on('close', () => this.fail(new LinkClientError('the link closed the connection')));
  }

  /** Connects (TCP, or TLS when `tls` is given). */
  static connect(opts: LinkClientOptions): Promise<LinkClient> {
    const where = `${opts.host}:${opts.port}`;
    return new Promise((resolve, reject) => {
      const socket = opts.tls
        ? tlsConnect({
            host: opts.host,
            port: opts.port,
            ca: readFileSync(opts.tls.ca),
            cert: readFileSync(opts.tls.cert),
            key: readFileSync(opts.tls.key),
            servername: opts.tls.servername ?? (/^[\d.:]+$/.test(opts.host) ? undefined : opts.host),
            minVersion: 'TLSv1.2',
          })
        : tcpConnect(opts.port, opts.host);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new LinkClientError(`no connection to the link at ${where} within ${opts.connectTimeoutMs ?? 5000} ms`));
      }, opts.connectTimeoutMs ?? 5000);
      const onError = (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(
          new LinkClientError(
            err.code === 'ECONNREFUSED'
              ? `nothing listens at ${where} (is the service running with CARDPROGRAM_NETWORK_PORT set?)`
              : `cannot connect to the link at ${where}: ${err.message}`,
          ),
        );
      };
      socket.once('error', onError);
      socket.once(opts.tls ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        socket.off('error', onError);
        resolve(new LinkClient(socket));
      });
    });
  }

  private fail(err: Error): void {
    if (this.closedWith) return;
    this.closedWith = err;
    for (const queue of this.waiting.values()) {
      for (const w of queue) {
        clearTimeout(w.timer);
        w.reject(err);
      }
    }
    this.waiting.clear();
    this.socket.destroy();
  }

  /** Sends a message without waiting for its answer. */
  send(msg: IsoMessage): void {
    if (this.closedWith) throw this.closedWith;
    this.socket.write(frame(encode(msg)));
  }

  /** Sends a message and resolves with its answer (rejects after timeoutMs, default 10 000, or when the connection closes). */
  ask(msg: IsoMessage, timeoutMs = 10_000): Promise<IsoMessage> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    const bytes = frame(encode(msg));
    const key = keyOf(answerMti(msg.mti), msg.fields);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const queue = this.waiting.get(key);
        const i = queue?.indexOf(w) ?? -1;
        if (queue && i >= 0) queue.splice(i, 1);
        if (queue?.length === 0) this.waiting.delete(key);
        reject(new LinkClientError(`no answer from the link within ${timeoutMs} ms`));
      }, timeoutMs);
      const w: Waiting = { resolve, reject, timer };
      const queue = this.waiting.get(key);
      if (queue) queue.push(w);
      else this.waiting.set(key, [w]);
      this.socket.write(bytes);
    });
  }

  /** Whether the connection has ended (closed by either side, or failed): nothing more will be answered on it. */
  isClosed(): boolean {
    return this.closedWith !== null;
  }

  /** Closes the connection (answers still awaited are rejected). */
  close(): void {
    this.fail(new LinkClientError('closed'));
  }
}

/** Field 7 (MMDDhhmmss, UTC) of a moment. */
export function transmissionTime(at: Date = new Date()): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(at.getUTCMonth() + 1)}${p(at.getUTCDate())}${p(at.getUTCHours())}${p(at.getUTCMinutes())}${p(at.getUTCSeconds())}`;
}

/** Field 43 from "NAME, CITY CC": name (25), city (13), country alpha-2 (2). Null when it does not read so. */
export function acceptorField(text: string): string | null {
  const m = /^\s*(.+?)\s*,\s*(.+?)\s+([A-Za-z]{2})\s*$/.exec(text);
  if (!m) return null;
  const [, name, city, cc] = m as unknown as [string, string, string, string];
  return `${name.slice(0, 25).padEnd(25)}${city.slice(0, 13).padEnd(13)}${cc.toUpperCase()}`;
}
