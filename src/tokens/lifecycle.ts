import { notifyMerchant } from '../callbacks/merchant-event.js';
import type { TxCtx } from '../context.js';
import { newId } from '../db/ids.js';
import type { TokenSource, TokenStatus, TspAction } from '../db/schema.js';
import { DomainError } from '../errors.js';
import type { Token } from './schemas.js';
import { appendHistory, historyOf, lockToken, type TokenRow, toToken } from './store.js';

/**
 * The life of a token (decisions §15.4): pending → active ⇄ suspended → deleted (final); a pending
 * token may also end deleted (a step-up failed or abandoned). Each allowed move, with what the TSP
 * is told when the service (not the TSP) made it.
 */
const MOVES: Readonly<Record<TokenStatus, Partial<Record<TokenStatus, TspAction>>>> = {
  pending: { active: 'activate', deleted: 'delete' },
  active: { suspended: 'suspend', deleted: 'delete' },
  suspended: { active: 'resume', deleted: 'delete' },
  deleted: {},
};

/** Whether a token may move from one status to another. */
export const canMove = (from: TokenStatus, to: TokenStatus): boolean => MOVES[from][to] !== undefined;

/** What the TSP is told of a move (`POST {TSP_URL}/tokens/{tokenReferenceId}/<action>`); undefined: not a move. */
export const tspActionOf = (from: TokenStatus, to: TokenStatus): TspAction | undefined => MOVES[from][to];

export interface TokenChange {
  /** The token, by the service's id or the TSP's. */
  token: { id: string } | { tokenReferenceId: string };
  to: TokenStatus;
  source: TokenSource;
  reason?: string | null;
  /**
   * Whether the TSP is told (a `tsp_calls` row, sent by the outbox's sender). Default: unless the TSP
   * made the change (source `tsp`). False where the TSP's own request carries the outcome (a code it
   * had verified: it activates the token itself).
   */
  tellTsp?: boolean;
  /** Refuses the change (2761) unless the token is now in one of these statuses. */
  from?: readonly TokenStatus[];
  /** Only for a token of this merchant (2760 otherwise, as for an unknown token). */
  merchantId?: string;
  /**
   * A token already suspended by another source becomes this source's suspension (its `suspended_by`,
   * a history entry, a `token.updated`; nothing for the TSP, which has it suspended already): the
   * caller decides who outranks whom (src/tokens/actions.ts), e.g. a merchant's suspension of a token
   * its card's freeze suspended, which the card's unfreeze must then not resume.
   */
  takeOver?: boolean;
}

export type TokenChangeResult =
  | { changed: true; from: TokenStatus; token: Token; row: TokenRow }
  | { changed: false; from: TokenStatus; token: Token; row: TokenRow };

/**
 * THE one function that changes a token's status, in the caller's transaction: it locks the token
 * (lock order: a card before its tokens), checks the move (§15.4: `deleted` is final; 2761 for a
 * move the table does not have), writes the history entry, the `token.updated` callback (the token
 * as tokenQuery gives it, to the merchant's notify URL, whoever made the change), and, when the TSP
 * is to be told, a `tsp_calls` row. A token already in the status asked for changes nothing (no
 * history, no callback, no call): `changed` false. Every part of the service (the TSP endpoint, the
 * card's freeze and close, the merchant's and the operator's actions, the step-up) calls it.
 */
export async function changeTokenStatus(ctx: TxCtx, change: TokenChange): Promise<TokenChangeResult> {
  const row = await lockToken(ctx.tx, change.token);
  if (!row || (change.merchantId !== undefined && row.merchant_id !== change.merchantId)) throw new DomainError('tokenNotFound');
  const from = row.status;
  if (change.from && !change.from.includes(from)) {
    throw new DomainError('tokenState', `tokenId: the token is ${from}`);
  }
  const takeOver = change.takeOver === true && from === 'suspended' && change.to === 'suspended' && row.suspended_by !== change.source;
  if (from === change.to && !takeOver) return { changed: false, from, token: toToken(row, await historyOf(ctx.tx, row.id)), row };
  const action = takeOver ? undefined : tspActionOf(from, change.to);
  if (action === undefined && !takeOver)
    throw new DomainError('tokenState', `tokenId: the token is ${from}; it cannot become ${change.to}`);
  const reason = change.reason ?? null;
  const suspendedBy = change.to === 'suspended' ? change.source : null;
  await ctx.tx
    .updateTable('tokens')
    .set({ status: change.to, suspended_by: suspendedBy, updated_at: ctx.now })
    .where('id', '=', row.id)
    .execute();
  const seq = await appendHistory(ctx.tx, { tokenId: row.id, status: change.to, source: change.source, at: ctx.now, reason });
  const after: TokenRow = { ...row, status: change.to, suspended_by: suspendedBy, updated_at: ctx.now };
  const token = toToken(after, await historyOf(ctx.tx, row.id));
  await notifyMerchant(ctx, { merchantId: row.merchant_id, type: 'token.updated', subject: `token:${row.id}`, body: { token } });
  if (action !== undefined && (change.tellTsp ?? change.source !== 'tsp')) {
    await ctx.tx
      .insertInto('tsp_calls')
      .values({
        id: newId('tspc'),
        token_id: row.id,
        token_reference_id: row.token_reference_id,
        // The change's place in the token's history: the sender tells the TSP a token's changes in this order.
        token_seq: seq,
        action,
        reason,
        status: 'pending',
        attempts: 0,
        next_at: ctx.now,
        last_error: null,
        lease_owner: null,
        lease_until: null,
        created_at: ctx.now,
        done_at: null,
      })
      .execute();
  }
  return { changed: true, from, token, row: after };
}
