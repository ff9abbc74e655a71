import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { ipv4Of, ipv6Groups, type NetworkConfig } from '../../config-network.js';
import type { Services } from '../../context.js';

/** Addresses remembered as a peer's (a certificate admitted from there): at most this many, the least recent forgotten. */
const KNOWN_PEER_ADDRESSES = 32;

/** Log lines of one kind (refusals, failed handshakes) a minute; beyond, they are counted and the count told with the next. */
const LOG_LINES_PER_MINUTE = 20;

/** File descriptors the rest of the process needs besides the link's connections: HTTP, the database, files. */
const OTHER_FILES = 256;

type Refusal = 'total' | 'per_address' | 'handshake_timeout' | 'peer_not_allowed' | 'evicted';

/** How often a known peer's address is written again (its last use), at most. */
const PEER_TOUCH_MS = 3_600_000;

/**
 * The address a cap counts a connection by: an IPv4 address (IPv4-mapped too) as it is, an IPv6
 * address by its /64 (one host is usually given a whole /64: counted per address, it would have
 * 2^64 of them).
 */
export function capKey(remote: string): string {
  const v4 = ipv4Of(remote);
  if (v4 !== null) return v4;
  const groups = ipv6Groups(remote);
  return groups === null
    ? remote
    : `${groups
        .slice(0, 4)
        .map((g) => g.toString(16))
        .join(':')}::/64`;
}

/** The names a client certificate answers to: its subject's CN(s) and its DNS subject alternative names. */
export function certificateNames(cert: PeerCertificate | null): { cn: string[]; dns: string[] } {
  const cnField = (cert?.subject as Record<string, string | string[] | undefined> | undefined)?.CN;
  const cn = cnField === undefined ? [] : Array.isArray(cnField) ? cnField : [cnField];
  const dns: string[] = [];
  // Node writes them `DNS:a.example, IP Address:10.0.0.1`, a value with a comma or a quote JSON-quoted.
  for (const m of (cert?.subjectaltname ?? '').matchAll(/(?:^|, )([A-Za-z][A-Za-z ]*):("(?:[^"\\]|\\.)*"|[^,]*)/g)) {
    if (m[1] !== 'DNS' || m[2] === undefined) continue;
    try {
      dns.push(m[2].startsWith('"') ? (JSON.parse(m[2]) as string) : m[2]);
    } catch {
      // A value Node could not have written: not a name to admit.
    }
  }
  return { cn, dns };
}

/** Whether a certificate is one CARDPROGRAM_NETWORK_PEERS lists: a CN exactly, or a DNS name in any case (DNS ignores it). */
export function peerListed(peers: readonly string[], names: { cn: string[]; dns: string[] }): boolean {
  return peers.some((p) => names.cn.includes(p) || names.dns.some((d) => d.toLowerCase() === p.toLowerCase()));
}

/** A budget of log lines a minute: a flood is told, not written line by line. */
class LogBudget {
  private windowStart = Number.NEGATIVE_INFINITY;
  private used = 0;
  private held = 0;

  /** Null: not now (counted). Else how many lines were held back since the last one written. */
  take(): number | null {
    const now = performance.now();
    if (now - this.windowStart >= 60_000) {
      this.windowStart = now;
      this.used = 0;
    }
    if (this.used >= LOG_LINES_PER_MINUTE) {
      this.held++;
      return null;
    }
    this.used++;
    const held = this.held;
    this.held = 0;
    return held;
  }
}

/** OpenSSL's reason in a TLS error's message (`…:SSL routines:ssl3_get_record:wrong version number:…`), else its code. */
function tlsReason(err: Error): string {
  const reason = /SSL routines:[^:]*:([^:]+):/.exec(err.message)?.[1];
  return reason ?? (err as NodeJS.ErrnoException).code ?? err.message.slice(0, 120);
}

interface Handshaking {
  raw: Socket;
  /** Its cap key (capKey). */
  key: string;
  timer: NodeJS.Timeout;
  /** Closed here: the handshake timed out, or failed and was told. */
  settled: boolean;
  /** Evicted to make room: its place was given back then, not at its close. */
  released?: boolean;
}

/**
 * Who may hold a connection to the link (decisions §12.13), so that whatever arrives the certified
 * peer and the HTTP API keep working: every connection costs a file descriptor, and before issue 39
 * 612 that never began their TLS handshake (held for Node's 120 s) used up a limit of 512 and cut
 * both off.
 *
 * - At most `maxPerAddress` from one remote address (an IPv6 /64), then at most `maxConnections` in
 *   all, handshakes included; beyond, a connection is closed at once.
 * - A TLS handshake not finished within `handshakeMs` (10 s, counted from the connection, however
 *   slowly its bytes trickle) is closed: a silent connection frees its place.
 * - The real peer keeps its place: an address a listed certificate has connected from (the last
 *   32, kept in `network_peer_addresses` so a restart forgets none) is admitted beyond the total,
 *   within its own per-address cap. Without a certificate nobody can earn that, and a flood from
 *   elsewhere fills at most the total. A connection whose handshake finished is never closed to
 *   make room.
 * - A full cap makes room by closing the oldest connection still in its handshake (issue 39's
 *   attack pass, F1: a flood that never handshakes held every place until its 10 s ran out, and a
 *   certified peer's new connection was refused meanwhile): for the per-address cap, the oldest from
 *   that address; for the total, the oldest from an address not known as the peer's. So a flood
 *   only ever evicts itself, and a connection that does handshake gets its turn.
 * - A handshake that fails (no certificate, another CA, not TLS) is logged with the remote address
 *   and the reason, at most 20 lines a minute of each kind.
 */
export class Admission {
  private total = 0;
  private readonly perAddress = new Map<string, number>();
  /** TLS connections admitted whose handshake has not finished, by remote address and port. */
  private readonly handshaking = new Map<string, Handshaking>();
  /** Cap keys a listed certificate connected from, least recent first. */
  private readonly knownPeers = new Set<string>();
  /** When each known address was last written to the database (ms). */
  private readonly touched = new Map<string, number>();
  private readonly logs = { refused: new LogBudget(), handshake: new LogBudget() };

  constructor(
    private readonly svc: Services,
    private readonly cfg: NetworkConfig,
  ) {}

  /** A new TCP connection: admitted (counted until it closes) or closed at once. */
  admit(raw: Socket): boolean {
    raw.on('error', () => undefined); // a reset by the peer is its business; 'close' follows
    const address = raw.remoteAddress;
    if (address === undefined) {
      raw.destroy(); // gone already
      return false;
    }
    const key = capKey(address);
    if ((this.perAddress.get(key) ?? 0) >= this.cfg.maxPerAddress && !this.evictOldest((k) => k === key))
      return this.refuse(raw, address, 'per_address');
    if (this.total >= this.cfg.maxConnections && !this.knownPeers.has(key) && !this.evictOldest((k) => !this.knownPeers.has(k)))
      return this.refuse(raw, address, 'total');
    this.total++;
    this.perAddress.set(key, (this.perAddress.get(key) ?? 0) + 1);
    const remote = `${address}|${raw.remotePort}`;
    let pending: Handshaking | null = null;
    if (this.cfg.tls) {
      const timeout = () => {
        if (pending) pending.settled = true;
        this.refuse(raw, address, 'handshake_timeout');
      };
      pending = { raw, key, settled: false, timer: setTimeout(timeout, this.cfg.handshakeMs) };
      this.handshaking.set(remote, pending);
    }
    raw.once('close', () => {
      if (!pending?.released) this.release(key);
      if (pending && this.handshaking.get(remote) === pending) {
        clearTimeout(pending.timer);
        this.handshaking.delete(remote);
        // A TCP probe (a load balancer's check, a port scan): not worth more than debug.
        if (!pending.settled) this.svc.log.debug({ peer: address }, 'network link: closed before the TLS handshake finished');
      }
    });
    return true;
  }

  /**
   * A finished TLS handshake: true when its certificate verified against the CA and, with
   * CARDPROGRAM_NETWORK_PEERS, is listed; otherwise the connection is closed before a byte is read,
   * and logged. (The TLS server does not reject unverified certificates itself: it would close them
   * before their address and reason could be read, so the refusal would go unlogged.)
   */
  secured(socket: TLSSocket): boolean {
    const address = socket.remoteAddress ?? 'unknown';
    const remote = `${socket.remoteAddress}|${socket.remotePort}`;
    const pending = this.handshaking.get(remote);
    if (!pending || pending.settled) {
      socket.destroy(); // timed out meanwhile
      return false;
    }
    clearTimeout(pending.timer);
    this.handshaking.delete(remote);
    const cert = socket.getPeerCertificate();
    if (!socket.authorized) {
      const none = !cert || Object.keys(cert).length === 0;
      const reason = none ? 'no client certificate' : `client certificate not accepted (${socket.authorizationError ?? 'unverified'})`;
      this.handshakeFailed(address, 'certificate', reason);
      socket.destroy();
      return false;
    }
    const names = certificateNames(cert);
    if (this.cfg.peers && !peerListed(this.cfg.peers, names)) {
      this.svc.metrics.networkRefused('peer_not_allowed');
      const suppressed = this.logs.refused.take();
      if (suppressed !== null) {
        this.svc.log.warn(
          { peer: address, subject: names, reason: 'not in CARDPROGRAM_NETWORK_PEERS', ...(suppressed ? { suppressed } : {}) },
          'network link: certificate refused',
        );
      }
      socket.destroy();
      return false;
    }
    const key = capKey(address);
    this.knownPeers.delete(key);
    this.knownPeers.add(key);
    if (this.knownPeers.size > KNOWN_PEER_ADDRESSES) this.knownPeers.delete(this.knownPeers.values().next().value as string);
    this.remember(key);
    return true;
  }

  /**
   * Closes the oldest connection still in its TLS handshake whose cap key `which` accepts, to make
   * room for a new one; false when there is none (a cap full of finished handshakes is respected).
   * The close frees its count at once (its 'close' event follows and finds it gone).
   */
  private evictOldest(which: (key: string) => boolean): boolean {
    for (const [remote, pending] of this.handshaking) {
      if (pending.settled || !which(pending.key)) continue;
      clearTimeout(pending.timer);
      pending.settled = true;
      this.handshaking.delete(remote);
      this.release(pending.key);
      pending.released = true;
      this.svc.metrics.networkRefused('evicted');
      pending.raw.destroy();
      return true;
    }
    return false;
  }

  private release(key: string): void {
    this.total--;
    const left = (this.perAddress.get(key) ?? 1) - 1;
    if (left > 0) this.perAddress.set(key, left);
    else this.perAddress.delete(key);
  }

  /** The addresses a listed certificate connected from, as the database remembers them (the latest 32): a restart forgets none. */
  async loadKnownPeers(): Promise<void> {
    try {
      const rows = await this.svc.database.read((db) =>
        db
          .selectFrom('network_peer_addresses')
          .select(['address', 'last_seen_at'])
          .orderBy('last_seen_at', 'desc')
          .limit(KNOWN_PEER_ADDRESSES)
          .execute(),
      );
      for (const r of rows.reverse()) {
        this.knownPeers.add(r.address);
        this.touched.set(r.address, Number(r.last_seen_at));
      }
    } catch (err) {
      this.svc.log.warn({ err: { message: (err as Error).message } }, 'network link: the known peer addresses could not be read');
    }
  }

  /** Writes a peer's address (new, or last written over an hour ago), in the background: the handshake does not wait for it. */
  private remember(key: string): void {
    const now = this.svc.clock();
    if (now - (this.touched.get(key) ?? Number.NEGATIVE_INFINITY) < PEER_TOUCH_MS) return;
    this.touched.set(key, now);
    void this.svc.database
      .write((db) =>
        db
          .insertInto('network_peer_addresses')
          .values({ address: key, last_seen_at: now })
          .onConflict((oc) => oc.column('address').doUpdateSet({ last_seen_at: now }))
          .execute(),
      )
      .catch((err: unknown) => {
        this.touched.delete(key);
        this.svc.log.warn({ err: { message: (err as Error).message } }, 'network link: a peer address could not be remembered');
      });
  }

  /** A TLS handshake that failed before finishing (not TLS at all, a TLS error). */
  failed(err: Error, socket: TLSSocket): void {
    // Ended before finishing, by the client or by the handshake timeout: told at 'close' (admit).
    if ((err as NodeJS.ErrnoException).code === 'ECONNRESET' || socket.remoteAddress === undefined) return;
    const pending = this.handshaking.get(`${socket.remoteAddress}|${socket.remotePort}`);
    if (!pending || pending.settled) return;
    pending.settled = true;
    this.handshakeFailed(socket.remoteAddress, 'protocol', tlsReason(err));
  }

  /** The link stops: connections still in their handshake are closed (the established ones are the listener's). */
  closeHandshaking(): void {
    for (const pending of this.handshaking.values()) {
      clearTimeout(pending.timer);
      pending.settled = true;
      pending.raw.destroy();
    }
  }

  /** A warning when the open-file limit leaves the link and the rest of the process too little room (docs/operations.md). */
  checkOpenFiles(): void {
    const soft = openFileLimit();
    const need = this.cfg.maxConnections + OTHER_FILES;
    if (soft !== null && soft < need) {
      this.svc.log.warn(
        { openFiles: soft, maxConnections: this.cfg.maxConnections, advised: need },
        'network link: the open-file limit leaves too little room beside CARDPROGRAM_NETWORK_MAX_CONNECTIONS: raise it (ulimit -n, systemd LimitNOFILE) or lower the cap',
      );
    }
  }

  private refuse(raw: Socket, address: string, reason: Refusal): false {
    this.svc.metrics.networkRefused(reason);
    const suppressed = this.logs.refused.take();
    if (suppressed !== null)
      this.svc.log.warn({ peer: address, reason, ...(suppressed ? { suppressed } : {}) }, 'network link: connection refused');
    raw.destroy();
    return false;
  }

  private handshakeFailed(address: string, kind: 'certificate' | 'protocol', reason: string): void {
    this.svc.metrics.networkHandshakeFailed(kind);
    const suppressed = this.logs.handshake.take();
    if (suppressed !== null)
      this.svc.log.warn({ peer: address, reason, ...(suppressed ? { suppressed } : {}) }, 'network link: TLS handshake failed');
  }
}

/** The process's soft limit of open files (Linux: /proc/self/limits), or null where it cannot be read. */
function openFileLimit(): number | null {
  try {
    const line = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    return line === undefined || line === 'unlimited' ? null : Number(line);
  } catch {
    return null;
  }
}
