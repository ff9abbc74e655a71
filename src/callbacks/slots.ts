import type { Claimed } from './claim.js';

export const keyOf = (e: { merchant_id: string; endpoint: string }) => `${e.merchant_id} ${e.endpoint}`;

export interface SlotLimits {
  /** Attempts in flight and events claimed, over every merchant (the worker's `batch`). */
  total: number;
  /** Attempts in flight and events claimed per merchant, over all its endpoints (its share of `total`). */
  perMerchant: number;
  /** Attempts in flight per merchant and endpoint. */
  perEndpoint: number;
  /** Attempts in flight and events claimed per merchant and endpoint (a busy endpoint's next events at hand). */
  prefetch: number;
}

interface EndpointLoad {
  merchantId: string;
  endpoint: string;
  inFlight: number;
  waiting: Claimed[];
}

interface MerchantLoad {
  inFlight: number;
  waiting: number;
  /** Its endpoints with events waiting, in turn: the next attempt is the first's, which then goes last. */
  turn: string[];
}

/** What the next claim may take: the endpoints and merchants this worker holds all it may of, and those it holds part of. */
export interface ClaimShape {
  busy: Array<{ merchantId: string; endpoint: string }>;
  busyMerchants: string[];
  endpointRoom: Array<{ merchantId: string; endpoint: string; room: number }>;
  merchantRoom: Array<{ merchantId: string; room: number }>;
}

/**
 * One worker's book of attempts in flight and claimed events waiting for a slot, by merchant and
 * endpoint (docs/callbacks.md, "Isolation"). A merchant holds at most `perMerchant` of the worker's
 * `total` (in flight and waiting: claimed events count, so that one merchant's backlog never fills
 * the worker's room to claim), an endpoint at most `perEndpoint` in flight and `prefetch` in all.
 * The next attempt of a merchant is taken round-robin across its endpoints.
 */
export class SlotBook {
  private readonly endpoints = new Map<string, EndpointLoad>();
  private readonly merchants = new Map<string, MerchantLoad>();
  inFlightTotal = 0;
  waitingTotal = 0;

  constructor(readonly limits: SlotLimits) {}

  private endpointOf(e: { merchant_id: string; endpoint: string }): EndpointLoad {
    const key = keyOf(e);
    let load = this.endpoints.get(key);
    if (!load) {
      load = { merchantId: e.merchant_id, endpoint: e.endpoint, inFlight: 0, waiting: [] };
      this.endpoints.set(key, load);
    }
    return load;
  }

  private merchantOf(merchantId: string): MerchantLoad {
    let load = this.merchants.get(merchantId);
    if (!load) {
      load = { inFlight: 0, waiting: 0, turn: [] };
      this.merchants.set(merchantId, load);
    }
    return load;
  }

  /** Forgets what holds nothing any more. */
  private tidy(key: string, merchantId: string): void {
    const e = this.endpoints.get(key);
    if (e && e.inFlight === 0 && e.waiting.length === 0) this.endpoints.delete(key);
    const m = this.merchants.get(merchantId);
    if (m && m.inFlight === 0 && m.waiting === 0) this.merchants.delete(merchantId);
  }

  endpointLoad(key: string): number {
    const e = this.endpoints.get(key);
    return e ? e.inFlight + e.waiting.length : 0;
  }

  merchantLoad(merchantId: string): number {
    const m = this.merchants.get(merchantId);
    return m ? m.inFlight + m.waiting : 0;
  }

  /** How many more attempts this merchant may hold now. */
  merchantRoom(merchantId: string): number {
    return Math.max(0, this.limits.perMerchant - this.merchantLoad(merchantId));
  }

  /** Events the worker may claim now, over every merchant. */
  room(): number {
    return Math.max(0, this.limits.total - this.inFlightTotal - this.waitingTotal);
  }

  /** A claimed event waits for a slot; false (not taken: the caller gives it back) when its endpoint or merchant holds all it may. */
  enqueue(e: Claimed): boolean {
    const key = keyOf(e);
    if (this.endpointLoad(key) >= this.limits.prefetch || this.merchantLoad(e.merchant_id) >= this.limits.perMerchant) return false;
    const load = this.endpointOf(e);
    const m = this.merchantOf(e.merchant_id);
    if (load.waiting.length === 0) m.turn.push(key);
    load.waiting.push(e);
    m.waiting++;
    this.waitingTotal++;
    return true;
  }

  /**
   * The merchant's next event that may start now: its endpoints in turn, each with a free slot, while
   * the merchant has fewer than `perMerchant` in flight (`force`: whatever the slots, to empty it).
   */
  next(merchantId: string, force = false): Claimed | null {
    const m = this.merchants.get(merchantId);
    if (!m || (!force && m.inFlight >= this.limits.perMerchant)) return null;
    for (let tries = m.turn.length; tries > 0; tries--) {
      const key = m.turn.shift() as string;
      const load = this.endpoints.get(key);
      if (!load || load.waiting.length === 0) continue;
      if (!force && load.inFlight >= this.limits.perEndpoint) {
        m.turn.push(key);
        continue;
      }
      const e = load.waiting.shift() as Claimed;
      if (load.waiting.length > 0) m.turn.push(key);
      m.waiting--;
      this.waitingTotal--;
      this.tidy(key, merchantId);
      return e;
    }
    return null;
  }

  /** An attempt starts (a waiting event taken by next(), or a probe, which never waited). */
  started(e: Claimed): void {
    this.endpointOf(e).inFlight++;
    this.merchantOf(e.merchant_id).inFlight++;
    this.inFlightTotal++;
  }

  /** An attempt ended: its slot is free. */
  ended(e: Claimed): void {
    const key = keyOf(e);
    const load = this.endpoints.get(key);
    const m = this.merchants.get(e.merchant_id);
    if (load) load.inFlight--;
    if (m) m.inFlight--;
    this.inFlightTotal--;
    this.tidy(key, e.merchant_id);
  }

  /** The endpoint's waiting events, taken out (its breaker opened, or the worker stops). */
  drop(key: string): Claimed[] {
    const load = this.endpoints.get(key);
    if (!load || load.waiting.length === 0) return [];
    const out = load.waiting.splice(0);
    const m = this.merchantOf(load.merchantId);
    m.waiting -= out.length;
    m.turn = m.turn.filter((k) => k !== key);
    this.waitingTotal -= out.length;
    this.tidy(key, load.merchantId);
    return out;
  }

  /** Every endpoint with events waiting. */
  waitingKeys(): string[] {
    return [...this.endpoints].filter(([, l]) => l.waiting.length > 0).map(([k]) => k);
  }

  merchantsWaiting(): string[] {
    return [...this.merchants].filter(([, m]) => m.waiting > 0).map(([id]) => id);
  }

  /** What the next claim may take (`failing`: endpoints held back until their breaker's record). */
  shape(failing: Array<{ merchantId: string; endpoint: string }>): ClaimShape {
    const { prefetch, perMerchant } = this.limits;
    const busy = [...failing];
    const endpointRoom: ClaimShape['endpointRoom'] = [];
    const failed = new Set(failing.map((f) => `${f.merchantId} ${f.endpoint}`));
    for (const [key, l] of this.endpoints) {
      if (failed.has(key)) continue;
      const load = l.inFlight + l.waiting.length;
      if (load >= prefetch) busy.push({ merchantId: l.merchantId, endpoint: l.endpoint });
      else if (load > 0) endpointRoom.push({ merchantId: l.merchantId, endpoint: l.endpoint, room: prefetch - load });
    }
    const busyMerchants: string[] = [];
    const merchantRoom: ClaimShape['merchantRoom'] = [];
    for (const [merchantId, m] of this.merchants) {
      const load = m.inFlight + m.waiting;
      if (load >= perMerchant) busyMerchants.push(merchantId);
      else if (load > 0) merchantRoom.push({ merchantId, room: perMerchant - load });
    }
    return { busy, busyMerchants, endpointRoom, merchantRoom };
  }

  /** Attempts in flight per merchant (the gauge `cardprogram_callback_in_flight`). */
  inFlightByMerchant(): Array<{ merchant: string; n: number }> {
    return [...this.merchants].filter(([, m]) => m.inFlight > 0).map(([merchant, m]) => ({ merchant, n: m.inFlight }));
  }
}
