/**
 * Password hashing's own bounded queue (issue 26, finding 3). scrypt runs on libuv's thread pool (4
 * threads), which file I/O and other work of the process share: unauthenticated logins must never
 * fill it. At most `atOnce` hashes run at a time and at most `waiting` more wait their turn (in
 * order); a login or set-up beyond that is refused with 429 before anything is hashed.
 * CARDPROGRAM_CONSOLE_HASHES sets `atOnce` (default 2); `waiting` is eight times it.
 */
export class HashingQueue {
  private places = 0;
  private active = 0;
  private readonly turns: Array<() => void> = [];

  constructor(
    readonly atOnce: number,
    readonly waiting: number = atOnce * 8,
  ) {}

  /**
   * A place in the queue, taken at once (before the request's other work, so a refusal costs no
   * hashing), or null when it is full. Release it when done, whether it was used or not.
   */
  reserve(): HashingPlace | null {
    if (this.places >= this.atOnce + this.waiting) return null;
    this.places += 1;
    let released = false;
    return {
      run: async <T>(fn: () => Promise<T>): Promise<T> => {
        await this.turn();
        try {
          return await fn();
        } finally {
          this.active -= 1;
          this.turns.shift()?.();
        }
      },
      release: () => {
        if (!released) {
          released = true;
          this.places -= 1;
        }
      },
    };
  }

  /** Runs `fn` in its turn; null at once (nothing run) when the queue is full. */
  async runOrRefuse<T>(fn: () => Promise<T>): Promise<T | null> {
    const place = this.reserve();
    if (!place) return null;
    try {
      return await place.run(fn);
    } finally {
      place.release();
    }
  }

  private turn(): Promise<void> {
    if (this.active < this.atOnce) {
      this.active += 1;
      return Promise.resolve();
    }
    return new Promise((resolve) =>
      this.turns.push(() => {
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
