import { readFileSync } from 'node:fs';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { linkAddress } from '../../config-network.js';
import type { Services } from '../../context.js';
import { encode } from '../../iso8583/codec.js';
import { FrameError, FrameReader, frame } from '../../iso8583/frame.js';
import { Admission } from './admission.js';
import { handleFrame, type Peer } from './dispatch.js';

/**
 * Messages being decided at once on one connection (decisions §12.13), counted exactly: frames read
 * beyond it wait in the connection's queue, the connection unread meanwhile.
 */
export const MAX_IN_FLIGHT = 256;
/** Answers the peer has not read: beyond this many bytes it is not reading, and is disconnected. */
const MAX_UNREAD = 1 << 20;
/** How long a stop waits for the messages in flight to be answered. */
const STOP_GRACE_MS = 5000;

export interface LinkServer {
  port: number;
  /** Stops accepting, lets the messages in flight be answered (at most a few seconds), closes every connection. */
  stop(): Promise<void>;
}

/**
 * The card network link's listener (decisions §12.1, docs/network.md): TCP, or TLS 1.2+ with a
 * client certificate verified against CARDPROGRAM_NETWORK_TLS_CA (required in production:
 * src/config.ts refuses to start without it). Each connection carries framed ISO 8583 messages,
 * many in flight; each is answered when decided, in any order. A frame over the limit or of
 * length 0, or a message whose MTI or STAN cannot be read, closes the connection; so does silence,
 * or a frame left incomplete, for CARDPROGRAM_NETWORK_IDLE_MS. Who may connect at all (the caps,
 * the handshake's time, the peers' list): src/card-network/link/admission.ts. Null when no port is set.
 */
export async function startLink(svc: Services): Promise<LinkServer | null> {
  const cfg = svc.config.network;
  if (cfg.port === null) return null;
  const address = await linkAddress(cfg);
  const admission = new Admission(svc, cfg);
  await admission.loadKnownPeers();
  const sockets = new Set<Socket>();
  const inFlight = new Map<Socket, number>();
  let deciding = 0;
  // Decisions still running, answered or not (an answer of 91 leaves its decision to roll back).
  const decisions = new Set<Promise<unknown>>();
  const track = (p: Promise<unknown>) => {
    decisions.add(p);
    void p.finally(() => decisions.delete(p));
  };
  let stopping = false;
  const peers = new Map<Socket, Peer>();
  svc.metrics.networkLink({
    connections: () => sockets.size,
    signedOn: () => [...peers.values()].filter((p) => p.signedOn).length,
    inFlight: () => deciding,
  });

  const onConnection = (socket: Socket) => {
    if (stopping) return void socket.destroy();
    sockets.add(socket);
    inFlight.set(socket, 0);
    const peer: Peer = { signedOn: false, remote: `${socket.remoteAddress}:${socket.remotePort}`, track };
    peers.set(socket, peer);
    const reader = new FrameReader(cfg.maxFrame);
    let partial: NodeJS.Timeout | null = null;
    const close = (why: string) => {
      if (socket.destroyed) return;
      svc.log.info({ peer: peer.remote, why }, 'network link: connection closed');
      socket.destroy();
    };
    socket.setNoDelay(true);
    socket.setTimeout(cfg.idleMs, () => close('idle'));
    socket.on('error', () => undefined); // a reset by the peer is its business; 'close' follows
    socket.on('close', () => {
      if (partial) clearTimeout(partial);
      sockets.delete(socket);
      inFlight.delete(socket);
      peers.delete(socket);
    });
    // Frames read while MAX_IN_FLIGHT are being decided wait here (one chunk's worth at most: the
    // socket is paused while any wait), in order; none is dropped or answered out of turn.
    const waiting: Array<Buffer | undefined> = [];
    let head = 0;
    const pump = () => {
      while (head < waiting.length && (inFlight.get(socket) ?? 0) < MAX_IN_FLIGHT && !socket.destroyed && !stopping) {
        const bytes = waiting[head] as Buffer;
        waiting[head++] = undefined;
        dispatch(socket, peer, bytes, close, pump);
      }
      if (head === waiting.length) {
        waiting.length = 0;
        head = 0;
      }
      const full = head < waiting.length || (inFlight.get(socket) ?? 0) >= MAX_IN_FLIGHT;
      if (full) socket.pause();
      else if (socket.isPaused() && !socket.destroyed && !stopping) socket.resume();
    };
    socket.on('data', (chunk: Buffer) => {
      let frames: Buffer[];
      try {
        frames = reader.push(chunk);
      } catch (err) {
        if (!(err instanceof FrameError)) throw err;
        return close(err.message);
      }
      // A frame begun must be complete within the idle time: a peer sending a byte at a time holds nothing.
      if (reader.pending && !partial) partial = setTimeout(() => close('incomplete frame'), cfg.idleMs);
      else if (!reader.pending && partial) {
        clearTimeout(partial);
        partial = null;
      }
      waiting.push(...frames);
      pump();
    });
  };

  const dispatch = (socket: Socket, peer: Peer, bytes: Buffer, close: (why: string) => void, pump: () => void) => {
    // Its arrival is when it is taken from the queue: a frame waiting its turn is, as one still in
    // the socket's buffer, not yet read (the deadline counts from here).
    const arrived = svc.clock();
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    deciding++;
    handleFrame(svc, peer, bytes, arrived)
      .then(
        (outcome) => {
          if ('close' in outcome) return close(outcome.close);
          if (socket.destroyed) return;
          svc.metrics.networkMessage(outcome.answer.mti, outcome.code, (svc.clock() - arrived) / 1000);
          socket.write(frame(encode(outcome.answer)));
          if (socket.writableLength > MAX_UNREAD) close('the peer does not read its answers');
        },
        (err: unknown) => {
          svc.log.error(
            { err: { name: (err as Error).name, message: (err as Error).message }, peer: peer.remote },
            'network link: message failed',
          );
          close('internal error');
        },
      )
      .finally(() => {
        deciding--;
        if (!inFlight.has(socket)) return;
        inFlight.set(socket, (inFlight.get(socket) ?? 1) - 1);
        pump();
      });
  };

  let server: Server;
  if (cfg.tls) {
    // The TLS server does not listen: the TCP server below admits each connection (the caps) and
    // hands it over. Unverified certificates are refused by Admission.secured, which logs them.
    const tlsServer = createTlsServer({
      ca: readFileSync(cfg.tls.ca),
      cert: readFileSync(cfg.tls.cert),
      key: readFileSync(cfg.tls.key),
      requestCert: true,
      rejectUnauthorized: false,
      minVersion: 'TLSv1.2',
      // Admission closes a handshake at handshakeMs from the connection; Node's own (from the last byte) only backs it up.
      handshakeTimeout: cfg.handshakeMs * 2,
    });
    tlsServer.on('secureConnection', (socket) => {
      if (admission.secured(socket)) onConnection(socket);
    });
    tlsServer.on('tlsClientError', (err, socket) => admission.failed(err, socket));
    server = createTcpServer((raw) => {
      if (admission.admit(raw)) tlsServer.emit('connection', raw);
    });
  } else {
    server = createTcpServer((raw) => {
      if (admission.admit(raw)) onConnection(raw);
    });
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(cfg.port ?? 0, address, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // After listening, an error is one accept failing (EMFILE: out of file descriptors): logged, never
  // a crash; the connection it concerned is lost, the listener goes on.
  let acceptErrors = 0;
  server.on('error', (err: NodeJS.ErrnoException) => {
    if (acceptErrors++ % 100 === 0)
      svc.log.error({ code: err.code, times: acceptErrors }, 'network link: a connection could not be accepted');
  });
  admission.checkOpenFiles();
  const port = (server.address() as { port: number }).port;
  svc.log.info({ port, host: address, tls: cfg.tls !== null }, 'network link listening');

  return {
    port,
    stop: async () => {
      stopping = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      admission.closeHandshaking();
      const until = Date.now() + STOP_GRACE_MS;
      while (([...inFlight.values()].some((n) => n > 0) || decisions.size > 0) && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 20));
      }
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
