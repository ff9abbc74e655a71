import type { Static } from 'typebox';
import { ISO_COUNTRIES } from '../codes/countries.js';
import type { MerchantCtx } from '../context.js';
import { forUpdate } from '../db/locks.js';
import { DomainError, invalid } from '../errors.js';
import { CARD_CURRENCIES, toMinor } from '../money/currency.js';
import type { OperationInput } from '../operation-input.js';
import type { Controls, ControlsUpdateBody } from './schemas.js';
import { limitKey, rebuildCounters } from './spending.js';

/**
 * What the schema cannot say about controls: a list of allowed and one of blocked values for the
 * same thing are one rule too many; countries must exist; a limit's amount must be a valid amount
 * in every currency it can apply to; two limits on the same interval and categories contradict.
 * Returns the controls as stored (canonical: the order of the fields fixed).
 */
export function checkControls(controls: Controls, currencies: readonly string[]): Controls {
  if (controls.allowedMccs && controls.blockedMccs) throw invalid('controls', 'set allowedMccs or blockedMccs, not both');
  if (controls.allowedCountries && controls.blockedCountries) {
    throw invalid('controls', 'set allowedCountries or blockedCountries, not both');
  }
  for (const field of ['allowedCountries', 'blockedCountries'] as const) {
    const bad = controls[field]?.find((c) => !ISO_COUNTRIES.has(c));
    if (bad) throw invalid(`controls.${field}`, `${bad} is not an ISO 3166-1 alpha-2 country code`);
  }
  const keys = new Set<string>();
  (controls.spendingLimits ?? []).forEach((limit, i) => {
    for (const currency of currencies) {
      try {
        toMinor(limit.amount, currency, `controls.spendingLimits.${i}.amount`);
      } catch (err) {
        // An amount no card could hold (too many decimals, too large) is a bad field here, not a 2723.
        if (err instanceof DomainError) throw new DomainError('validation', err.message);
        throw err;
      }
    }
    const key = limitKey(limit);
    if (keys.has(key)) throw invalid(`controls.spendingLimits.${i}`, 'repeats the interval and categories of an earlier limit');
    keys.add(key);
  });
  const out: Controls = {};
  if (controls.spendingLimits) {
    out.spendingLimits = controls.spendingLimits.map((l) => ({
      amount: l.amount,
      interval: l.interval,
      ...(l.mccs ? { mccs: [...l.mccs].sort() } : {}),
    }));
  }
  for (const f of ['allowedMccs', 'blockedMccs', 'allowedCountries', 'blockedCountries', 'channels', 'allowedWallets'] as const) {
    const v = controls[f];
    if (v) (out as Record<string, unknown>)[f] = [...v].sort();
  }
  return out;
}

/** How controls are stored: null for none. */
export const storedControls = (c: Controls): string | null => (Object.keys(c).length ? JSON.stringify(c) : null);

/** cardControlsUpdate's body without the signed envelope: `cardId` or `holderId`, and the controls. */
export type UpdateControlsInput = OperationInput<Static<typeof ControlsUpdateBody>>;

/**
 * Replaces the spending controls of one of the merchant's cards, or of a cardholder (they apply to
 * each of its cards that does not set the same field). The counters of the owner's limits are built
 * again from its history, under the locks of every card they count.
 */
export async function updateControls({
  ctx,
  input,
}: {
  ctx: MerchantCtx;
  input: UpdateControlsInput;
}): Promise<{ cardId: string | null; holderId: string; controls: Controls }> {
  if ((input.cardId === undefined) === (input.holderId === undefined)) {
    throw invalid('cardId', 'send cardId (a card’s controls) or holderId (a cardholder’s), not both and not neither');
  }
  if (input.cardId !== undefined) {
    const q = ctx.tx
      .selectFrom('cards')
      .select(['id', 'holder_id', 'currency', 'status'])
      .where('id', '=', input.cardId)
      .where('merchant_id', '=', ctx.merchantId);
    const card = await forUpdate(ctx.tx, q).executeTakeFirst();
    if (!card) throw new DomainError('cardNotFound');
    if (card.status === 'closed') throw new DomainError('cardStatus', 'cardId: the card is closed');
    const controls = checkControls(input.controls, [card.currency]);
    await ctx.tx
      .updateTable('cards')
      .set({ controls: storedControls(controls), updated_at: ctx.now })
      .where('id', '=', card.id)
      .execute();
    await rebuildCounters(ctx, { id: card.id, cardIds: [card.id], currencies: [card.currency], controls }, ctx.svc.clock);
    return { cardId: card.id, holderId: card.holder_id, controls };
  }
  const holderId = input.holderId as string;
  const hq = ctx.tx.selectFrom('cardholders').select('id').where('id', '=', holderId).where('merchant_id', '=', ctx.merchantId);
  const holder = await forUpdate(ctx.tx, hq).executeTakeFirst();
  if (!holder) throw new DomainError('holderNotFound');
  const controls = checkControls(input.controls, CARD_CURRENCIES);
  await ctx.tx
    .updateTable('cardholders')
    .set({ controls: storedControls(controls), updated_at: ctx.now })
    .where('id', '=', holder.id)
    .execute();
  // Every card of the holder, locked in id order (the global order): an authorization on one of
  // them either committed before (and is in the history read below) or waits and then counts.
  const cq = ctx.tx.selectFrom('cards').select('id').where('holder_id', '=', holder.id).orderBy('id');
  const cards = await forUpdate(ctx.tx, cq).execute();
  // And each card's row updated: an authorization that waited for a card's lock while this change
  // committed sees its card's row changed, and reads the cardholder's controls again
  // (lockCardAtOnce, src/ledger/book-at-once.ts).
  if (cards.length > 0) {
    await ctx.tx
      .updateTable('cards')
      .set({ updated_at: ctx.now })
      .where(
        'id',
        'in',
        cards.map((c) => c.id),
      )
      .execute();
  }
  await rebuildCounters(ctx, { id: holder.id, cardIds: cards.map((c) => c.id), currencies: CARD_CURRENCIES, controls }, ctx.svc.clock);
  return { cardId: null, holderId: holder.id, controls };
}
