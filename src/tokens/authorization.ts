import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { DeclineReason, type DeclineReasonValue } from '../trades/types.js';

/**
 * The wallet token an authorization is made with (decisions §15.5), checked in one place for the
 * card network link (field 48 subelements 33 and 34) and the sandbox (`tokenId`): the ledger's
 * authorization decision asks it under the card's lock (src/ledger/authorize.ts).
 */

/** How an authorization names its token: the sandbox by the service's id, the link as the TSP named it. */
export type TokenReference =
  | { tokenId: string }
  | {
      tokenReferenceId: string;
      /** The token requestor (11 digits), when the network sent it: it must be the token's. */
      tokenRequestorId?: string | undefined;
    };

/** The token as an authorization records it (its id) and the controls read it (its wallet). */
export interface AuthorizationToken {
  id: string;
  walletProvider: string;
}

/** What the token check came to: the token (null when none was named, or one not this card's) and a decline, if any. */
export interface TokenCheck {
  token: AuthorizationToken | null;
  decline: { reason: DeclineReasonValue; error: DomainError } | null;
}

const NONE: TokenCheck = { token: null, decline: null };

const unknown = (field: string): TokenCheck => ({
  token: null,
  decline: {
    reason: DeclineReason.tokenUnknown,
    error: new DomainError('tokenDeclined', `${field}: not a wallet token of this card`),
  },
});

/**
 * The token named, checked against the card: it must be one of the card's tokens (another card's,
 * or another merchant's, is answered exactly as one that does not exist, and not recorded) and
 * `active` (a pending, suspended or deleted token declines, and is recorded with the decline). The
 * token's status is read, not locked: a suspension that commits while the authorization is decided
 * comes after it, as if it had arrived a moment later.
 */
export async function checkAuthorizationToken(tx: Kysely<DB>, cardId: string, ref: TokenReference | undefined): Promise<TokenCheck> {
  if (ref === undefined) return NONE;
  const byId = 'tokenId' in ref;
  const field = byId ? 'tokenId' : 'tokenReferenceId';
  const row = await tx
    .selectFrom('tokens')
    .select(['id', 'card_id', 'status', 'wallet_provider', 'token_requestor_id'])
    .where(byId ? 'id' : 'token_reference_id', '=', byId ? ref.tokenId : ref.tokenReferenceId)
    .executeTakeFirst();
  if (!row || row.card_id !== cardId) return unknown(field);
  if (!byId && ref.tokenRequestorId !== undefined && ref.tokenRequestorId !== row.token_requestor_id) return unknown('tokenRequestorId');
  const token = { id: row.id, walletProvider: row.wallet_provider };
  if (row.status !== 'active')
    return {
      token,
      decline: {
        reason: DeclineReason.tokenInactive,
        error: new DomainError('tokenDeclined', `${field}: the token is ${row.status}, not active`),
      },
    };
  return { token, decline: null };
}
