import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import type { VerbCtx } from '../context.js';
import type { DB } from '../db/schema.js';
import { convert } from '../money/fx.js';
import { type AvRefusal, useAuthenticationValue, verifyAuthenticationValue } from './av.js';
import { type CardState, countExemption, exemptionFits, lockCardState } from './card-state.js';

/**
 * 3-D Secure in an authorization (decisions §14.5): the authentication value it carries (the
 * link's field 48 subelements 42/43, the sandbox's `eci`/`authenticationValue`) checked once, for
 * its card and amount; and, with `CARDPROGRAM_3DS_REQUIRED` on, an e-commerce authorization
 * without one declined `authentication_required` (the link's `1A`) unless the low-value exemption
 * of §14.3.5 covers it (then it counts against the card's exemption, as an exempted AReq does).
 * Called by the authorization verb (src/ledger/authorize.ts) in its transaction.
 */

/** What an authorization carries of 3-D Secure, and what decides whether it needs it. */
export interface AuthorizationAuthentication {
  /** The ECI (2 digits) the acquirer sends with the value; when sent, it must be the authentication's. */
  eci?: string | undefined;
  /** The authentication value (28 Base64 characters). */
  authenticationValue?: string | undefined;
  channel?: string | undefined;
  /** The link's credential-on-file entry mode (field 22 `10x`): exempt (§14.5). */
  credentialOnFile?: boolean | undefined;
  /**
   * Made with a wallet token (decisions §15.5): exempt. The wallet authenticated the cardholder on
   * the device, and the network checked the token's cryptogram when it detokenized.
   */
  tokenized?: boolean | undefined;
}

/** Why a value carried is refused: av.ts's reasons, and an ECI that is not the authentication's. */
export type AuthenticationRefusal = AvRefusal | 'eci';

export type AuthenticationOutcome =
  /** Nothing carried and nothing required. */
  | { kind: 'none' }
  /** A value of this card's successful authentication, free, recent, for enough. */
  | { kind: 'authenticated'; acsTransId: string }
  /** Nothing carried, required, but the low-value exemption covers it: counted on approval. */
  | { kind: 'exempt'; eur: number; state: CardState }
  /** A value carried and refused (`authentication_failed`); the authentication when it is this card's. */
  | { kind: 'refused'; reason: AuthenticationRefusal; acsTransId: string | null }
  /** Nothing carried, required, not exempt (`authentication_required`, the link's 1A). */
  | { kind: 'required' };

/**
 * Whether an authorization without a value would need authentication: 3-D Secure required, an
 * e-commerce authorization (channel `ecommerce`: the link's field 22 `01x` and `81x`), not
 * credential on file (`10x`), not made with a wallet token, an amount above 0.
 */
export function needsAuthentication(config: Pick<Config, 'threeDs'>, a: AuthorizationAuthentication, amount: number): boolean {
  return config.threeDs.required && a.channel === 'ecommerce' && a.credentialOnFile !== true && a.tokenized !== true && amount > 0;
}

/**
 * The verb's first lock, when the low-value exemption may decide (nothing carried, authentication
 * needed): the card's 3-D Secure row, before the card's (the lock order of docs/architecture.md: the
 * 3-D Secure row comes before its card, as in an AReq), so that an authorization and the card's
 * AReqs count the exemption one after the other. Null when it cannot decide.
 */
export async function lockExemption(
  ctx: VerbCtx,
  cardId: string,
  a: AuthorizationAuthentication,
  amount: number,
): Promise<CardState | null> {
  if (a.authenticationValue !== undefined || !needsAuthentication(ctx.svc.config, a, amount)) return null;
  return lockCardState(ctx, cardId);
}

/** The card's 3-D Secure counters without a lock (a decision checked before the verb: the merchant's endpoint's pre-check). */
export async function readExemption(db: Kysely<DB>, cardId: string): Promise<CardState> {
  const row = await db
    .selectFrom('three_ds_card_state')
    .select(['exempt_count', 'exempt_eur', 'last_challenge_at'])
    .where('card_id', '=', cardId)
    .executeTakeFirst();
  return {
    exemptCount: Number(row?.exempt_count ?? 0),
    exemptEur: Number(row?.exempt_eur ?? 0),
    lastChallengeAt: row?.last_challenge_at == null ? null : Number(row.last_challenge_at),
  };
}

/**
 * What 3-D Secure says of an authorization: `txnAmount` in `currencyTxn` (minor units) is what the
 * authentication's amount must cover (the purchase as authenticated); `state` the card's exemption
 * counters (locked by lockExemption in the verb), or null when the exemption cannot apply.
 */
export async function authenticationOutcome(
  ctx: VerbCtx,
  q: { cardId: string; txnAmount: number; currencyTxn: string; amount: number; state: CardState | null } & AuthorizationAuthentication,
): Promise<AuthenticationOutcome> {
  const value = q.authenticationValue;
  if (value !== undefined) {
    const check = await verifyAuthenticationValue(ctx.tx, ctx.svc, {
      value,
      cardId: q.cardId,
      amount: q.txnAmount,
      currency: q.currencyTxn,
      now: ctx.now,
    });
    if (!check.ok) return { kind: 'refused', reason: check.reason, acsTransId: check.acsTransId ?? null };
    if (q.eci !== undefined && q.eci !== check.eci) return { kind: 'refused', reason: 'eci', acsTransId: check.acsTransId };
    return { kind: 'authenticated', acsTransId: check.acsTransId };
  }
  if (!needsAuthentication(ctx.svc.config, q, q.amount)) return { kind: 'none' };
  let eur: number | null = null;
  try {
    eur = convert(q.txnAmount, q.currencyTxn, 'EUR', ctx.svc.config.program.fxRates);
  } catch {
    eur = null;
  }
  if (q.state && eur !== null && exemptionFits(q.state, eur)) return { kind: 'exempt', eur, state: q.state };
  return { kind: 'required' };
}

/** The refusal in words, for the declined authorization's message (a forged value reads as one never issued). */
export function refusalWords(reason: AuthenticationRefusal): string {
  switch (reason) {
    case 'malformed':
      return 'not 28 Base64 characters of 20 bytes';
    case 'unknown':
    case 'forged':
      return 'not a value this ACS issued';
    case 'other_card':
      return 'issued for another card';
    case 'not_authenticated':
      return 'its authentication did not succeed';
    case 'used':
      return 'already used by an approved authorization';
    case 'expired':
      return 'more than 30 days old';
    case 'amount':
      return 'the authenticated amount is less than this authorization’s';
    case 'eci':
      return 'the ECI is not the authentication’s';
  }
}

/**
 * After the decision, in the verb's transaction: an approval takes the value (false when another
 * approval took it first: the caller declines), or counts the exemption; a decline that carried this
 * card's value is listed with its authentication (its `tradeIds`).
 */
export async function recordAuthentication(
  ctx: VerbCtx,
  outcome: AuthenticationOutcome,
  use: { cardId: string; tradeId: string; approved: boolean },
): Promise<boolean> {
  if (outcome.kind === 'authenticated' || (outcome.kind === 'refused' && outcome.acsTransId !== null)) {
    const acsTransId = outcome.acsTransId as string;
    return useAuthenticationValue(ctx, { acsTransId, tradeId: use.tradeId, approved: use.approved && outcome.kind === 'authenticated' });
  }
  if (outcome.kind === 'exempt' && use.approved) await countExemption(ctx, use.cardId, outcome.state, outcome.eur);
  return true;
}
