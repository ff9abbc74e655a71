import type { TxCtx } from '../context.js';
import { lockState } from './statements.js';

/** AReqs of one card in an hour beyond which the ACS answers N/04 (decisions §14.7). */
export const AREQS_PER_HOUR = 30;
export const HOUR_MS = 3_600_000;

/**
 * PSD2's low-value exemption (RTS art. 16, decisions §14.3.5), in EUR minor units: a purchase of at
 * most 30.00 EUR, and since the card's last successful challenge at most 5 exempted authentications
 * and at most 100.00 EUR in all, this one included.
 */
export const EXEMPTION = { maxAmount: 3000, maxCount: 5, maxSum: 10000 } as const;

export interface CardState {
  exemptCount: number;
  exemptEur: number;
  lastChallengeAt: number | null;
}

/**
 * Locks the card's 3-D Secure row, creating it the first time, and reads it: the first thing an
 * AReq's transaction does, so that two AReqs of a card are decided one after the other (the hourly
 * limit, the exemption's counters). On SQLite the transaction holds the write lock already.
 * Lock order: this row before its card (an expiry mismatch then locks the card to count it:
 * ./verification-failure.ts); nothing that holds a card's lock takes this row.
 */
export async function lockCardState(ctx: TxCtx, cardId: string): Promise<CardState> {
  // One statement: the row is created the first time, and on PostgreSQL an upsert that finds the row
  // locks it as FOR UPDATE would (a concurrent AReq of the card waits here until this one commits).
  const { rows } = await lockState.execute(ctx.tx, { cardId, now: ctx.now });
  const row = rows[0] as { exempt_count: number; exempt_eur: number; last_challenge_at: number | null };
  return {
    exemptCount: Number(row.exempt_count),
    exemptEur: Number(row.exempt_eur),
    lastChallengeAt: row.last_challenge_at === null ? null : Number(row.last_challenge_at),
  };
}

/** Whether a purchase of `eur` (EUR minor units) fits the exemption, given what the card used since its last successful challenge. */
export function exemptionFits(state: CardState, eur: number): boolean {
  return eur <= EXEMPTION.maxAmount && state.exemptCount + 1 <= EXEMPTION.maxCount && state.exemptEur + eur <= EXEMPTION.maxSum;
}

/** Counts an exempted authentication (under the card's state lock). */
export async function countExemption(ctx: TxCtx, cardId: string, state: CardState, eur: number): Promise<void> {
  await ctx.tx
    .updateTable('three_ds_card_state')
    .set({ exempt_count: state.exemptCount + 1, exempt_eur: state.exemptEur + eur, updated_at: ctx.now })
    .where('card_id', '=', cardId)
    .execute();
}

/** A successful challenge starts the exemption's count again (an unfinished or failed one does not). */
export async function resetExemption(ctx: TxCtx, cardId: string): Promise<void> {
  await lockCardState(ctx, cardId);
  await ctx.tx
    .updateTable('three_ds_card_state')
    .set({ exempt_count: 0, exempt_eur: 0, last_challenge_at: ctx.now, updated_at: ctx.now })
    .where('card_id', '=', cardId)
    .execute();
}
