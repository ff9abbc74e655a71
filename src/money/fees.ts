import { basisPoints } from './currency.js';

/** What a fee is charged on. */
export type FeeEvent = 'topUp' | 'authorization' | 'authorizationFx' | 'withdrawal' | 'transferOut';

export interface FeeRule {
  /** Proportional part, in basis points of the amount (100 = 1 %). */
  bps: number;
  /** Fixed part, in minor units of the card's currency. */
  fixed: number;
}

export type FeeSchedule = Readonly<Record<FeeEvent, FeeRule>>;

/**
 * The program's default fee schedule (CARDPROGRAM_FEES overrides any part of it). Cross-currency
 * authorizations pay 1.5 %, an ATM withdrawal 2.00; the rest is free.
 */
export const DEFAULT_FEES: FeeSchedule = {
  topUp: { bps: 0, fixed: 0 },
  authorization: { bps: 0, fixed: 0 },
  authorizationFx: { bps: 150, fixed: 0 },
  withdrawal: { bps: 0, fixed: 200 },
  transferOut: { bps: 0, fixed: 0 },
};

export function feeFor(schedule: FeeSchedule, event: FeeEvent, amountMinor: number): number {
  const rule = schedule[event];
  return rule.fixed + basisPoints(amountMinor, rule.bps);
}

export function validateFees(raw: Record<string, unknown>): FeeSchedule {
  const out: Record<string, FeeRule> = { ...DEFAULT_FEES };
  for (const [event, rule] of Object.entries(raw)) {
    if (!(event in DEFAULT_FEES)) throw new Error(`unknown fee event "${event}" (known: ${Object.keys(DEFAULT_FEES).join(', ')})`);
    const r = rule as Partial<FeeRule> | null;
    const bps = r?.bps ?? 0;
    const fixed = r?.fixed ?? 0;
    if (!Number.isInteger(bps) || bps < 0 || bps > 10_000 || !Number.isInteger(fixed) || fixed < 0) {
      throw new Error(`fee "${event}" must be {"bps": 0..10000, "fixed": minor units ≥ 0}`);
    }
    out[event] = { bps, fixed };
  }
  return out as FeeSchedule;
}
