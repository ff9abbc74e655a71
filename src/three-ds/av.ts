import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Services, TxCtx } from '../context.js';
import type { DB } from '../db/schema.js';
import { convert } from '../money/fx.js';

/**
 * The authentication value (decisions §14.2, §14.5): 20 bytes, 28 Base64 characters. Bytes 0–1 are
 * the version of the ACS's key it was made with (data_keys, purpose 3ds, sealed under the master
 * key, renewed by `cardprogram keys rotate --purpose 3ds`), bytes 2–19 the first 18 bytes of an
 * HMAC-SHA256 under that key over what was authenticated: the authentication, the card, the amount
 * and currency, the ECI and the moment. Stored as its SHA-256 only (to find it); checked by
 * recomputing the HMAC from the stored facts, so a row altered in the database does not verify.
 */
const AV_BYTES = 20;
/** A value is good for an authorization this long after it was issued. */
export const AV_LIFETIME_MS = 30 * 86_400_000;

export interface AvFacts {
  acsTransId: string;
  cardId: string;
  amount: number | null;
  currency: string | null;
  eci: string | null;
  issuedAt: number;
}

const mac = (key: Buffer, f: AvFacts) =>
  createHmac('sha256', key)
    .update(
      `cardprogram-3ds-av\n${f.acsTransId}\n${f.cardId}\n${f.amount ?? ''}\n${f.currency ?? ''}\n${f.eci ?? ''}\n${f.issuedAt}`,
      'utf8',
    )
    .digest()
    .subarray(0, AV_BYTES - 2);

/** How a value is found: its SHA-256 (the value has 144 bits of a keyed MAC: nothing to search back to). */
export const avHash = (raw: Buffer) => createHash('sha256').update(raw).digest('hex');

/** A new authentication value for these facts, and what the authentication's row keeps of it. */
export async function issueAuthenticationValue(
  svc: Pick<Services, 'vault'>,
  db: Kysely<DB>,
  facts: AvFacts,
): Promise<{ value: string; columns: { av_hash: string; av_key_version: number; av_issued_at: number } }> {
  const { version, key } = await svc.vault.versionedKey(db, '3ds');
  const raw = Buffer.alloc(AV_BYTES);
  raw.writeUInt16BE(version, 0);
  mac(key, facts).copy(raw, 2);
  return { value: raw.toString('base64'), columns: { av_hash: avHash(raw), av_key_version: version, av_issued_at: facts.issuedAt } };
}

/** Why a value is refused (decline reason `authentication_failed` for each, on the link and in the sandbox). */
export type AvRefusal = 'malformed' | 'unknown' | 'forged' | 'other_card' | 'not_authenticated' | 'used' | 'expired' | 'amount';

export type AvCheck =
  | { ok: true; acsTransId: string; eci: string | null; amount: number; currency: string }
  /** `acsTransId`: the authentication, when the value is this card's (its declined authorization is listed with it). */
  | { ok: false; reason: AvRefusal; acsTransId?: string };

const STRICT_BASE64_28 = /^[A-Za-z0-9+/]{27}=$/;

/**
 * Checks an authentication value an authorization carries (decisions §14.5): one this ACS issued
 * (found by its hash, its HMAC recomputed from the stored facts), for this card, of a successful
 * authentication, not used by an approved authorization, at most 30 days old, for at least the
 * authorization's amount in the authentication's currency (converted at the program's rates when
 * the authorization is in another). A read: the caller marks the value used in its own
 * transaction with `useAuthenticationValue`, whose conditional update settles a race between two
 * authorizations carrying the same value.
 */
export async function verifyAuthenticationValue(
  db: Kysely<DB>,
  svc: Pick<Services, 'vault' | 'config'>,
  q: { value: string; cardId: string; amount: number; currency: string; now: number },
): Promise<AvCheck> {
  if (!STRICT_BASE64_28.test(q.value)) return { ok: false, reason: 'malformed' };
  const raw = Buffer.from(q.value, 'base64');
  if (raw.length !== AV_BYTES) return { ok: false, reason: 'malformed' };
  const row = await db
    .selectFrom('three_ds_authentications')
    .select(['acs_trans_id', 'card_id', 'trans_status', 'amount', 'currency', 'eci', 'av_key_version', 'av_issued_at', 'used_trade_id'])
    .where('av_hash', '=', avHash(raw))
    .executeTakeFirst();
  if (!row || row.card_id === null || row.av_key_version === null || row.av_issued_at === null) return { ok: false, reason: 'unknown' };
  const facts: AvFacts = {
    acsTransId: row.acs_trans_id,
    cardId: row.card_id,
    amount: row.amount === null ? null : Number(row.amount),
    currency: row.currency,
    eci: row.eci,
    issuedAt: Number(row.av_issued_at),
  };
  const { key } = await svc.vault.versionedKey(db, '3ds', row.av_key_version);
  const expected = mac(key, facts);
  if (raw.readUInt16BE(0) !== row.av_key_version || !timingSafeEqual(expected, raw.subarray(2))) return { ok: false, reason: 'forged' };
  if (row.card_id !== q.cardId) return { ok: false, reason: 'other_card' };
  const acsTransId = row.acs_trans_id;
  if (row.trans_status !== 'Y') return { ok: false, reason: 'not_authenticated', acsTransId };
  if (row.used_trade_id !== null) return { ok: false, reason: 'used', acsTransId };
  if (q.now - facts.issuedAt > AV_LIFETIME_MS) return { ok: false, reason: 'expired', acsTransId };
  if (facts.amount === null || facts.currency === null) return { ok: false, reason: 'amount', acsTransId };
  let wanted: number;
  try {
    wanted = convert(q.amount, q.currency, facts.currency, svc.config.program.fxRates);
  } catch {
    return { ok: false, reason: 'amount', acsTransId };
  }
  if (facts.amount < wanted) return { ok: false, reason: 'amount', acsTransId };
  return { ok: true, acsTransId: row.acs_trans_id, eci: row.eci, amount: facts.amount, currency: facts.currency };
}

/**
 * Records that an authorization carried an authentication's value (its `tradeIds`); an approved
 * one also takes the value (`used_trade_id`), by an update conditional on its being free: of two
 * approvals carrying one value at once only one takes it, and the other must be declined (false).
 */
export async function useAuthenticationValue(
  ctx: TxCtx,
  use: { acsTransId: string; tradeId: string; approved: boolean },
): Promise<boolean> {
  if (use.approved) {
    const taken = await ctx.tx
      .updateTable('three_ds_authentications')
      .set({ used_trade_id: use.tradeId, updated_at: ctx.now })
      .where('acs_trans_id', '=', use.acsTransId)
      .where('used_trade_id', 'is', null)
      .executeTakeFirst();
    if (Number(taken.numUpdatedRows) === 0) return false;
  }
  await ctx.tx
    .insertInto('three_ds_uses')
    .values({ acs_trans_id: use.acsTransId, trade_id: use.tradeId, approved: use.approved ? 1 : 0, created_at: ctx.now })
    .onConflict((oc) => oc.doNothing())
    .execute();
  return true;
}
