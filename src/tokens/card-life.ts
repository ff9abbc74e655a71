import type { CardLifeHook, TxCtx } from '../context.js';
import type { TokenStatus } from '../db/schema.js';
import { changeTokenStatus } from './lifecycle.js';
import { lockToken, tokensOfCard } from './store.js';

/** What the TSP and the token's history are told of a move the card's life made. */
const REASONS = { frozen: 'card_frozen', active: 'card_unfrozen', closed: 'card_closed' } as const;

/**
 * Moves one token if, under its lock, it still qualifies: a token read before its lock may have
 * changed since (the TSP deleted it, the merchant suspended it); such a token is left as it is
 * rather than refusing the card's change.
 */
async function moveIfStill(
  ctx: TxCtx,
  tokenId: string,
  qualifies: (row: { status: TokenStatus; suspended_by: string | null }) => boolean,
  to: TokenStatus,
  reason: string,
): Promise<void> {
  const row = await lockToken(ctx.tx, { id: tokenId });
  if (!row || !qualifies(row)) return;
  await changeTokenStatus(ctx, { token: { id: tokenId }, to, source: 'card', reason });
}

/**
 * The card's own life reaching its tokens (decisions §15.4), in the transaction of the card's change
 * (which holds the card's lock: the lock order is a card before its tokens): a freeze suspends every
 * active token (source `card`), an unfreeze resumes those the card suspended (not those the
 * merchant, the operator or the TSP suspended), a close deletes every token not yet deleted. Each
 * move through changeTokenStatus: its history, its `token.updated`, its call to the TSP. A pending
 * token is left pending by a freeze (its step-up cannot finish on a frozen card) and deleted by a close.
 * Handed to the cards domain as `svc.cardLife` (src/services.ts).
 */
export const tokensFollowCard: CardLifeHook = async (ctx, { cardId, status }) => {
  const reason = REASONS[status];
  if (status === 'frozen') {
    for (const t of await tokensOfCard(ctx.tx, cardId, ['active'])) {
      await moveIfStill(ctx, t.id, (r) => r.status === 'active', 'suspended', reason);
    }
  } else if (status === 'active') {
    for (const t of await tokensOfCard(ctx.tx, cardId, ['suspended'])) {
      if (t.suspended_by !== 'card') continue;
      await moveIfStill(ctx, t.id, (r) => r.status === 'suspended' && r.suspended_by === 'card', 'active', reason);
    }
  } else {
    for (const t of await tokensOfCard(ctx.tx, cardId, ['pending', 'active', 'suspended'])) {
      await moveIfStill(ctx, t.id, (r) => r.status !== 'deleted', 'deleted', reason);
    }
  }
};
