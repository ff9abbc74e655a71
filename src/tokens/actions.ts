import type { Static } from 'typebox';
import type { VerbCtx } from '../context.js';
import { forUpdate } from '../db/locks.js';
import type { TokenSource } from '../db/schema.js';
import { DomainError } from '../errors.js';
import type { OperationInput } from '../operation-input.js';
import { changeTokenStatus } from './lifecycle.js';
import type { Token, TokenActionBody, TokenRefBody } from './schemas.js';
import { authMethodsOf, lockToken, type TokenRow, tokenById } from './store.js';

/*
 * The merchant's and the operator's actions on a token (decisions §15.6): tokenSuspend, tokenResume,
 * tokenDelete and tokenActivate, and `cardprogram tokens suspend|resume|delete`. With
 * `ctx.merchantId` (a signed request) the merchant acts on its own cards' tokens only (another's is
 * 2760, as an unknown one); without it, the operator (the CLI, the console) on any. Every change
 * goes through changeTokenStatus: the history, the `token.updated` callback, the call to the TSP.
 */

export type TokenActionInput = OperationInput<Static<typeof TokenActionBody>>;
export type TokenRefInput = OperationInput<Static<typeof TokenRefBody>>;

/** Who a suspension belongs to: a higher party's takes over a lower one's, and only it (or the operator) lifts it. */
const RANK: Record<TokenSource, number> = { card: 1, tsp: 1, service: 1, merchant: 2, operator: 3 };

const sourceOf = (ctx: VerbCtx): 'merchant' | 'operator' => (ctx.merchantId === undefined ? 'operator' : 'merchant');
const reasonOf = (reason: string | null | undefined): string | null => (reason ? reason.slice(0, 200) : null);

/** The token as the caller may see it: the merchant's own, else 2760 (unknown and another's alike). */
async function visibleToken(ctx: VerbCtx, tokenId: string): Promise<TokenRow> {
  const row = await tokenById(ctx.tx, tokenId);
  if (!row || (ctx.merchantId !== undefined && row.merchant_id !== ctx.merchantId)) throw new DomainError('tokenNotFound');
  return row;
}

/**
 * The token's card, locked (the lock order: a card before its tokens), for the moves that need an
 * active card: a token is resumed or activated only while its card can pay (2724 otherwise).
 */
async function requireActiveCard(ctx: VerbCtx, row: TokenRow, what: string): Promise<void> {
  const card = await forUpdate(ctx.tx, ctx.tx.selectFrom('cards').select(['status']).where('id', '=', row.card_id)).executeTakeFirst();
  if (!card) throw new DomainError('tokenNotFound');
  if (card.status !== 'active') {
    throw new DomainError(
      'cardStatus',
      card.status === 'frozen'
        ? `tokenId: the token’s card is frozen; ${what} once the card is unfrozen`
        : `tokenId: the token’s card is closed; its tokens are deleted`,
    );
  }
}

/**
 * Suspends an active token: authorizations with it are declined until it is resumed. A suspended
 * token is answered as it is, unless the suspension was a lower party's (the card's freeze, the
 * TSP's): then it becomes the caller's, so that the card's unfreeze no longer resumes it. Pending or
 * deleted: 2761.
 */
export async function suspendToken({ ctx, input }: { ctx: VerbCtx; input: TokenActionInput }): Promise<Token> {
  const row = await visibleToken(ctx, input.tokenId);
  const source = sourceOf(ctx);
  const takeOver = row.status === 'suspended' && RANK[source] > RANK[row.suspended_by ?? 'service'];
  const { token } = await changeTokenStatus(ctx, {
    token: { id: row.id },
    to: 'suspended',
    source,
    reason: reasonOf(input.reason),
    from: ['active', 'suspended'],
    takeOver,
    ...(ctx.merchantId === undefined ? {} : { merchantId: ctx.merchantId }),
  });
  return token;
}

/**
 * Resumes a suspended token (an active one is answered as it is). Its card must be active (2724:
 * a token its card's freeze suspended comes back with the unfreeze); a suspension by the operator
 * is lifted only by the operator (2761). Pending or deleted: 2761.
 */
export async function resumeToken({ ctx, input }: { ctx: VerbCtx; input: TokenActionInput }): Promise<Token> {
  const row = await visibleToken(ctx, input.tokenId);
  const source = sourceOf(ctx);
  if (row.status === 'suspended') {
    await requireActiveCard(ctx, row, 'resume it');
    // Read again under its lock (after the card's): who suspended it may have changed meanwhile.
    const locked = await lockToken(ctx.tx, { id: row.id });
    if (locked?.suspended_by === 'operator' && source !== 'operator') {
      throw new DomainError('tokenState', 'tokenId: the token was suspended by the operator; only the operator can resume it');
    }
  }
  const { token } = await changeTokenStatus(ctx, {
    token: { id: row.id },
    to: 'active',
    source,
    reason: reasonOf(input.reason),
    from: ['suspended', 'active'],
    ...(ctx.merchantId === undefined ? {} : { merchantId: ctx.merchantId }),
  });
  return token;
}

/** Deletes a token for good (pending, active or suspended); a deleted one is answered as it is. */
export async function deleteToken({ ctx, input }: { ctx: VerbCtx; input: TokenActionInput }): Promise<Token> {
  const row = await visibleToken(ctx, input.tokenId);
  const { token } = await changeTokenStatus(ctx, {
    token: { id: row.id },
    to: 'deleted',
    source: sourceOf(ctx),
    reason: reasonOf(input.reason),
    ...(ctx.merchantId === undefined ? {} : { merchantId: ctx.merchantId }),
  });
  return token;
}

/**
 * The cardholder confirmed the token in the merchant's app (app-to-app activation, decisions §15.3,
 * §15.6): a pending token whose step-up offered `app` becomes active, and the TSP is told
 * (`activate`). An active token is answered as it is; one offered no `app` method, or suspended or
 * deleted, is 2761; its card must be active (2724).
 */
export async function activateToken({ ctx, input }: { ctx: VerbCtx; input: TokenRefInput }): Promise<Token> {
  const row = await visibleToken(ctx, input.tokenId);
  if (row.status === 'pending') {
    if (!authMethodsOf(row).some((m) => m.type === 'app')) {
      throw new DomainError('tokenState', 'tokenId: the token’s step-up offered no app method; the cardholder confirms it with a code');
    }
    await requireActiveCard(ctx, row, 'activate it');
  }
  const { token } = await changeTokenStatus(ctx, {
    token: { id: row.id },
    to: 'active',
    source: sourceOf(ctx),
    reason: 'app_confirmed',
    from: ['pending', 'active'],
    ...(ctx.merchantId === undefined ? {} : { merchantId: ctx.merchantId }),
  });
  return token;
}
