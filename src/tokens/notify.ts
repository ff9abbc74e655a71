import { notifyMerchant } from '../callbacks/merchant-event.js';
import type { VerbCtx } from '../context.js';
import { forUpdate } from '../db/locks.js';
import type { TokenStatus, TspEvent } from '../db/schema.js';
import { changeTokenStatus } from './lifecycle.js';
import { TspRefusal } from './refusal.js';
import type { TspNotifyAnswer, TspNotifyRequest } from './schemas.js';
import { historyOf, lockToken, type TokenRow, tokenByReference, toToken } from './store.js';

/** What a notification did (recorded with it): a status change, nothing, or why it was left aside. */
type Outcome = 'applied' | 'unchanged' | 'device_changed' | 'ignored_final' | 'ignored_stale' | 'ignored_state' | 'ignored_held';

/** The status each event asks for; device_changed asks none. */
const TARGET: Record<Exclude<TspEvent, 'device_changed'>, TokenStatus> = {
  created: 'pending',
  activated: 'active',
  suspended: 'suspended',
  resumed: 'active',
  deleted: 'deleted',
};

/**
 * What an event does to a token in the state it is in (decisions §15.2, §15.4), whatever order the
 * TSP's notifications arrive in:
 * - `deleted` is final: any event after it changes nothing; a `deleted` applies whenever it comes.
 * - `created` changes nothing (the token exists since its provisioning).
 * - `activated` activates a pending token; `suspended` suspends an active one; `resumed` (and a late
 *   `activated`) resumes only a token the TSP itself suspended: a suspension by the card, the
 *   merchant or the operator is theirs to lift.
 * - An event older than the token's last change (lastChangeOf) is stale, but for `deleted`.
 */
function outcomeOf(row: TokenRow, event: Exclude<TspEvent, 'device_changed'>, at: number, lastChange: number): Outcome {
  if (row.status === 'deleted') return 'ignored_final';
  const to = TARGET[event];
  if (event === 'created' || row.status === to) return 'unchanged';
  if (event !== 'deleted' && at < lastChange) return 'ignored_stale';
  if (event === 'activated' && row.status === 'pending') return 'applied';
  if (event === 'suspended' && row.status === 'active') return 'applied';
  if ((event === 'resumed' || event === 'activated') && row.status === 'suspended') {
    return row.suspended_by === 'tsp' ? 'applied' : 'ignored_held';
  }
  if (event === 'deleted') return 'applied';
  return 'ignored_state';
}

/**
 * When the token last changed, on the TSP's clock where the TSP changed it (the newest notification
 * applied, or that found the token already in its state, by its `at`: a `resumed` of T1 arriving
 * before the `suspended` of T0 makes the late `suspended` stale) and on the service's where the
 * service did (its history's other sources): an event older than that is stale.
 */
async function lastChangeOf(ctx: VerbCtx, row: TokenRow): Promise<number> {
  const tsp = await ctx.tx
    .selectFrom('token_notifications')
    .select((eb) => eb.fn.max('at').as('at'))
    .where('token_reference_id', '=', row.token_reference_id)
    // Applied, or found the token already in its state: either is the TSP's word on the token at `at`.
    .where('outcome', 'in', ['applied', 'unchanged'])
    .where('event', '!=', 'device_changed')
    .executeTakeFirst();
  const own = await ctx.tx
    .selectFrom('token_history')
    .select((eb) => eb.fn.max('at').as('at'))
    .where('token_id', '=', row.id)
    .where('source', '!=', 'tsp')
    .executeTakeFirst();
  return Math.max(Number(tsp?.at ?? 0), Number(own?.at ?? 0));
}

/**
 * A token the TSP activated or resumed while its card is frozen: the card's freeze takes it at once,
 * as it would have had the token been active when the card was frozen (suspended, source `card`, the
 * TSP told `suspend`), and the card's unfreeze brings it back. Without this the token was active on a
 * frozen card, and the TSP's wallet offered a card its issuer had frozen.
 */
async function holdForFrozenCard(ctx: VerbCtx, tokenId: string): Promise<TokenStatus> {
  const held = await changeTokenStatus(ctx, { token: { id: tokenId }, to: 'suspended', source: 'card', reason: 'card_frozen' });
  return held.row.status;
}

/**
 * `POST /tsp/notify` (decisions §15.2): the TSP tells of a token's life. Idempotent by
 * (tokenReferenceId, event, at): a repeat changes nothing and gets the token's status. A change goes
 * through changeTokenStatus (source `tsp`: history, `token.updated`, no call back to the TSP); a
 * `device_changed` updates the device the token is on and tells the merchant.
 */
export async function applyNotification({
  ctx,
  input,
}: {
  ctx: VerbCtx;
  input: TspNotifyRequest & { atMs: number };
}): Promise<TspNotifyAnswer> {
  const seen = await tokenByReference(ctx.tx, input.tokenReferenceId);
  if (!seen) throw new TspRefusal(404, 'not_found', 'tokenReferenceId: no such token');
  // The card locked first (the lock order: a card before its tokens): its freeze cannot pass between
  // the read of its status below and this notification's change.
  const card = await forUpdate(ctx.tx, ctx.tx.selectFrom('cards').select('status').where('id', '=', seen.card_id)).executeTakeFirst();
  const row = await lockToken(ctx.tx, { tokenReferenceId: input.tokenReferenceId });
  if (!row) throw new TspRefusal(404, 'not_found', 'tokenReferenceId: no such token');
  const claimed = await ctx.tx
    .insertInto('token_notifications')
    .values({
      token_reference_id: input.tokenReferenceId,
      event: input.event,
      at: input.atMs,
      reason: input.reason ?? null,
      outcome: 'unchanged',
      received_at: ctx.now,
    })
    .onConflict((oc) => oc.columns(['token_reference_id', 'event', 'at']).doNothing())
    .returning('event')
    .executeTakeFirst();
  if (!claimed) return { tokenId: row.id, status: row.status };

  const history = await historyOf(ctx.tx, row.id);
  const lastChange = await lastChangeOf(ctx, row);
  let outcome: Outcome;
  let status = row.status;
  if (input.event === 'device_changed') {
    if (row.status === 'deleted') outcome = 'ignored_final';
    else if (!input.device) outcome = 'unchanged';
    else {
      outcome = 'device_changed';
      {
        const device = {
          device_type: input.device.type,
          device_name: input.device.name ?? null,
          device_locale: input.device.locale ?? null,
        };
        await ctx.tx
          .updateTable('tokens')
          .set({ ...device, updated_at: ctx.now })
          .where('id', '=', row.id)
          .execute();
        const after = { ...row, ...device, updated_at: ctx.now };
        await notifyMerchant(ctx, {
          merchantId: row.merchant_id,
          type: 'token.updated',
          subject: `token:${row.id}`,
          body: { token: toToken(after, history) },
        });
      }
    }
  } else {
    outcome = outcomeOf(row, input.event, input.atMs, lastChange);
    if (outcome === 'applied') {
      const changed = await changeTokenStatus(ctx, {
        token: { id: row.id },
        to: TARGET[input.event],
        source: 'tsp',
        reason: input.reason ?? `TSP: ${input.event}`,
      });
      status = changed.row.status;
      if (status === 'active' && card?.status === 'frozen') status = await holdForFrozenCard(ctx, row.id);
    }
  }
  await ctx.tx
    .updateTable('token_notifications')
    .set({ outcome })
    .where('token_reference_id', '=', input.tokenReferenceId)
    .where('event', '=', input.event)
    .where('at', '=', input.atMs)
    .execute();
  return { tokenId: row.id, status };
}
