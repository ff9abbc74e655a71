import { recordVerificationFailure } from '../cards/verification.js';
import type { VerbCtx } from '../context.js';

/**
 * A card-verification mismatch in 3-D Secure (an AReq's cardExpiryDate other than the card's)
 * counted toward the card's failures (decisions §12.13: 5 within 24 hours freeze the card with
 * source `security`), by the one counter the link and the sandbox use (src/cards/verification.ts),
 * `via` 3ds. In the authentication's transaction, after the card's 3-D Secure row is locked: the
 * counter then locks the card's row (`FOR UPDATE`). That order, the 3-D Secure row before its card,
 * cannot cross another: nothing that holds a card's lock takes its 3-D Secure row (docs/architecture.md,
 * Concurrency, lock order). The refusal itself (N/01) is recorded by the caller, and listed by
 * threeDsList, whatever this does.
 */
export async function countVerificationFailure(ctx: VerbCtx, card: { id: string }, kind: 'expiry'): Promise<void> {
  // Who presented it: the DS (the listener's typed actor) or the sandbox's merchant.
  const by = ctx.by ?? { kind: 'network' as const, peer: ctx.actor };
  await recordVerificationFailure(ctx, card.id, { kind, via: '3ds' }, by);
}
