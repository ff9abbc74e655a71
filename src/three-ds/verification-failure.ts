import type { VerbCtx } from '../context.js';

/**
 * The seam where a card-verification mismatch in 3-D Secure (an AReq's cardExpiryDate other than
 * the card's) is counted toward the card's failures (decisions §12.13: 5 within 24 hours freeze the
 * card with source `security`). Called in the authentication's transaction, after the card's state
 * row is locked; the refusal itself (N/01) is recorded by the caller whatever this does.
 *
 * TODO(§12.13): call the cards domain's failure counter here once it is merged (branch issue-39v);
 * until then nothing is counted.
 */
export async function countVerificationFailure(_ctx: VerbCtx, _card: { id: string }, _what: 'expiry'): Promise<void> {}
