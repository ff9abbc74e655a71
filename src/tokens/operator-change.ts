import type { VerbCtx } from '../context.js';
import type { TokenStatus } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { changeTokenStatus } from './lifecycle.js';
import type { Token } from './schemas.js';

/** What an operator may do to a token (the console, decisions §15.6): suspend, resume, delete. */
export const OPERATOR_TOKEN_ACTIONS = ['suspend', 'resume', 'delete'] as const;
export type OperatorTokenAction = (typeof OPERATOR_TOKEN_ACTIONS)[number];

/** Each action's move: the status it leads to, and the statuses it may start from. */
const MOVE: Record<OperatorTokenAction, { to: TokenStatus; from: readonly TokenStatus[] }> = {
  suspend: { to: 'suspended', from: ['active'] },
  resume: { to: 'active', from: ['suspended'] },
  delete: { to: 'deleted', from: ['pending', 'active', 'suspended'] },
};

export interface OperatorTokenInput {
  tokenId: string;
  action: OperatorTokenAction;
  reason?: string | undefined;
}

/**
 * An operator's change of any merchant's token (source `operator`), through the one function that
 * changes a token (changeTokenStatus: the history, `token.updated` to the merchant, the TSP told).
 * A resume is refused while the token's card is not active: its payments would decline anyway, and
 * the card's unfreeze resumes what its freeze suspended.
 */
export async function changeTokenByOperator({ ctx, input }: { ctx: VerbCtx; input: OperatorTokenInput }): Promise<Token> {
  const move = MOVE[input.action];
  if (input.action === 'resume') {
    const card = await ctx.tx
      .selectFrom('tokens')
      .innerJoin('cards', 'cards.id', 'tokens.card_id')
      .select('cards.status')
      .where('tokens.id', '=', input.tokenId)
      .executeTakeFirst();
    if (card && card.status !== 'active')
      throw new DomainError('tokenState', `tokenId: its card is ${card.status}; its tokens resume when the card is active again`);
  }
  const result = await changeTokenStatus(ctx, {
    token: { id: input.tokenId },
    to: move.to,
    from: move.from,
    source: 'operator',
    reason: input.reason ?? null,
  });
  return result.token;
}
