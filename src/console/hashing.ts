/**
 * Password hashing's own bounded queue (issue 26, finding 3). scrypt runs on libuv's thread pool (4
 * threads), which file I/O and other work of the process share: unauthenticated logins must never
 * fill it. At most `atOnce` hashes run at a time and at most `waiting` more wait their turn (in
 * order); a login or set-up beyond that is refused with 429 before anything is hashed.
 * CARDPROGRAM_CONSOLE_HASHES sets `atOnce` (default 2); `waiting` is eight times it.
 *
 * After an attack pass, a flood from rotating addresses (each under its per-address limit) could
 * still hold every place, and a real operator got 429 thirty times out of thirty-one. So:
 * - a client (an IPv4 /24, an IPv6 /64: `queueKey` of src/console/login-throttle.ts) holds at most
 *   PLACES_PER_CLIENT places at a time;
 * - `reserved` more places (default twice `atOnce`) are kept for browsers that have logged in before
 *   (a signed known-device cookie bound to the account, src/console/known-device.ts), at most one
 *   per account at a time; their hashing goes ahead of the general lane's waiting turns, so a known
 *   device waits for one hash at most, whatever the flood.
 */
export const PLACES_PER_CLIENT = 1;

const queues = new WeakMap<object, HashingQueue>();

/** The service's one hashing queue (logins and set-ups share it), made on first use. */
export function hashingQueueOf(svc: { config: { consoleHashes: number } }): HashingQueue {
  let q = queues.get(svc);
  if (!q) {
    q = new HashingQueue(svc.config.consoleHashes);
    queues.set(svc, q);
  }
  return q;
}

export interface Reservation {
  /** The client's network (`queueKey`): at most PLACES_PER_CLIENT places at a time in the general lane. */
  client?: string;
  /** The operator id of a valid known-device cookie bound to the account tried: the reserved lane. */
  knownDevice?: string;
}

export class HashingQueue {
  private general = 0;
  private known = 0;
  private active = 0;
  private readonly turns: Array<() => void> = [];
  private readonly urgentTurns: Array<() => void> = [];
  /** Places held per client network (general lane) or per account (`device:<id>`, reserved lane). */
  private readonly holders = new Map<string, number>();

  constructor(
    readonly atOnce: number,
    readonly waiting: number = atOnce * 8,
    readonly reserved: number = atOnce * 2,
  ) {}

  /** Places held now, every lane (for tests and metrics). */
  get held(): number {
    return this.general + this.known;
  }

  /**
   * A place in the queue, taken at once (before the request's other work, so a refusal costs no
   * hashing), or null when it is full. Release it when done, whether it was used or not. A known
   * device takes a reserved place, or a general one when they are all taken.
   */
  reserve(who: Reservation = {}): HashingPlace | null {
    const device = who.knownDevice === undefined ? undefined : `device:${who.knownDevice}`;
    if (device !== undefined && this.known < this.reserved && !this.holders.has(device)) {
      this.known += 1;
      return this.place(device, true, () => {
        this.known -= 1;
      });
    }
    const client = who.client;
    if (client !== undefined && (this.holders.get(client) ?? 0) >= PLACES_PER_CLIENT) return null;
    if (this.general >= this.atOnce + this.waiting) return null;
    this.general += 1;
    return this.place(client, false, () => {
      this.general -= 1;
    });
  }

  private place(holder: string | undefined, urgent: boolean, free: () => void): HashingPlace {
    if (holder !== undefined) this.holders.set(holder, (this.holders.get(holder) ?? 0) + 1);
    let released = false;
    return {
      run: async <T>(fn: () => Promise<T>): Promise<T> => {
        await this.turn(urgent);
        try {
          return await fn();
        } finally {
          this.active -= 1;
          (this.urgentTurns.shift() ?? this.turns.shift())?.();
        }
      },
      release: () => {
        if (released) return;
        released = true;
        free();
        if (holder === undefined) return;
        const n = (this.holders.get(holder) ?? 1) - 1;
        if (n > 0) this.holders.set(holder, n);
        else this.holders.delete(holder);
      },
    };
  }

  /** Runs `fn` in its turn; null at once (nothing run) when the queue is full. */
  async runOrRefuse<T>(fn: () => Promise<T>, who: Reservation = {}): Promise<T | null> {
    const place = this.reserve(who);
    if (!place) return null;
    try {
      return await place.run(fn);
    } finally {
      place.release();
    }
  }

  private turn(urgent: boolean): Promise<void> {
    if (this.active < this.atOnce) {
      this.active += 1;
      return Promise.resolve();
    }
    return new Promise((resolve) =>
      (urgent ? this.urgentTurns : this.turns).push(() => {
        this.active += 1;
        resolve();
      }),
    );
  }
}

export interface HashingPlace {
  /** Runs the hashing when its turn comes. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  release(): void;
}
