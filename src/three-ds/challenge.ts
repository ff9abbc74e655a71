import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import { notifyMerchant } from '../callbacks/merchant-event.js';
import type { Services, VerbCtx } from '../context.js';
import { forUpdate } from '../db/locks.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { lockCardState } from './card-state.js';
import type { CReq, CRes, TransStatusReason } from './emv-messages.js';
import { finishChallenge } from './finish.js';
import { cardCodesExhausted, hashOtp, newOtp, OTP_MAX_FAILURES, OTP_MAX_SENT, OTP_TTL_MS, otpMatches } from './otp.js';
import type { AuthenticationRow } from './store.js';

/**
 * The challenge itself (decisions §14.4): the browser's CReq opens it, the cardholder enters the
 * code (or the merchant's app answers), asks for a new code or cancels; each ends through
 * finishChallenge (./finish.ts). Every verb here locks as an AReq does, the card's 3-D Secure row
 * first, then the authentication, so that finishChallenge (which takes the same two) never waits
 * on a lock taken in the other order.
 */

/** What the page shows after an action: the challenge goes on (with a notice), or it is over (the CRes goes back). */
export type ChallengeStep =
  | { kind: 'open'; row: AuthenticationRow; notice?: 'wrong' | 'codeExpired' | 'resent' | 'noMoreCodes' | 'waiting' }
  | { kind: 'done'; row: AuthenticationRow };

/** The authentication, locked in the order of an AReq; 2750 when it is not there (or, for a merchant, not its). */
async function lockChallenge(ctx: VerbCtx, acsTransId: string): Promise<AuthenticationRow> {
  const seen = await ctx.tx
    .selectFrom('three_ds_authentications')
    .select(['card_id', 'merchant_id'])
    .where('acs_trans_id', '=', acsTransId)
    .executeTakeFirst();
  if (!seen?.card_id || (ctx.merchantId !== undefined && seen.merchant_id !== ctx.merchantId)) {
    throw new DomainError('authenticationNotFound', 'acsTransID: authentication not found');
  }
  await lockCardState(ctx, seen.card_id);
  return forUpdate(
    ctx.tx,
    ctx.tx.selectFrom('three_ds_authentications').selectAll().where('acs_trans_id', '=', acsTransId),
  ).executeTakeFirstOrThrow();
}

const running = (row: AuthenticationRow) =>
  row.trans_status === 'C' && (row.challenge_state === 'pending' || row.challenge_state === 'open');

function notRunning(row: AuthenticationRow): DomainError {
  return new DomainError('authenticationState', `acsTransID: the authentication is ${row.trans_status}, not a challenge under way`);
}

/** Ends a challenge whose 5 minutes are over: N/14. */
async function timeOut(ctx: VerbCtx, row: AuthenticationRow): Promise<ChallengeStep> {
  return { kind: 'done', row: await finishChallenge({ ctx, input: { acsTransID: row.acs_trans_id, transStatus: 'N', reason: '14' } }) };
}

const expired = (ctx: VerbCtx, row: AuthenticationRow) => row.challenge_expires_at !== null && ctx.now >= Number(row.challenge_expires_at);

export interface OpenChallengeInput {
  creq: CReq;
  /** The form's threeDSSessionData, posted back with the CRes. */
  sessionData: string | null;
}

/**
 * A CReq opens its challenge, once (decisions §14.4): the ARes's C, not opened before, within its 5
 * minutes, and the CReq's threeDSServerTransID and messageVersion those of the AReq. A spent,
 * unknown or expired one is 2750/2751 and changes nothing.
 */
export async function openChallenge({ ctx, input }: { ctx: VerbCtx; input: OpenChallengeInput }): Promise<AuthenticationRow> {
  const row = await lockChallenge(ctx, input.creq.acsTransID);
  if (
    row.three_ds_server_trans_id.toLowerCase() !== input.creq.threeDSServerTransID.toLowerCase() ||
    row.message_version !== input.creq.messageVersion ||
    row.device_channel !== '02'
  ) {
    throw new DomainError('authenticationNotFound', 'creq: no challenge has these identifiers');
  }
  if (row.trans_status !== 'C' || row.challenge_state !== 'pending' || expired(ctx, row)) throw notRunning(row);
  const changes = {
    challenge_state: 'open' as const,
    challenge_window_size: input.creq.challengeWindowSize,
    session_data: input.sessionData,
    updated_at: ctx.now,
  };
  await ctx.tx.updateTable('three_ds_authentications').set(changes).where('acs_trans_id', '=', row.acs_trans_id).execute();
  return { ...row, ...changes };
}

/**
 * A code entered (the page, or the sandbox's complete): the right one ends the challenge Y; a wrong
 * one counts, the third ends it N/19 (decisions §14.4). A code past its 5 minutes is not counted:
 * the cardholder asks for a new one. Wrong codes are not card verification failures of §12.13
 * (which counts CVV2 and expiry mismatches only).
 */
export async function enterOtp({ ctx, input }: { ctx: VerbCtx; input: { acsTransID: string; code: string } }): Promise<ChallengeStep> {
  const row = await lockChallenge(ctx, input.acsTransID);
  if (!running(row) || row.challenge_method !== 'otp') throw notRunning(row);
  if (expired(ctx, row)) return timeOut(ctx, row);
  const interaction = Number(row.interaction_counter) + 1;
  if (row.otp_expires_at !== null && ctx.now >= Number(row.otp_expires_at)) {
    await ctx.tx
      .updateTable('three_ds_authentications')
      .set({ interaction_counter: interaction, updated_at: ctx.now })
      .where('acs_trans_id', '=', row.acs_trans_id)
      .execute();
    return { kind: 'open', row: { ...row, interaction_counter: interaction }, notice: 'codeExpired' };
  }
  // The card's wrong codes of 24 hours, all its challenges together, used up: this entry would be one
  // more guess; the challenge ends N/19 without comparing it (not even a right code).
  if (row.card_id !== null && (await cardCodesExhausted(ctx, row.card_id))) {
    return { kind: 'done', row: await finishChallenge({ ctx, input: { acsTransID: row.acs_trans_id, transStatus: 'N', reason: '19' } }) };
  }
  const code = input.code.replace(/[\s-]/g, '');
  if (await otpMatches(ctx.svc.vault, ctx.tx, row, code)) {
    await ctx.tx
      .updateTable('three_ds_authentications')
      .set({ interaction_counter: interaction, updated_at: ctx.now })
      .where('acs_trans_id', '=', row.acs_trans_id)
      .execute();
    return { kind: 'done', row: await finishChallenge({ ctx, input: { acsTransID: row.acs_trans_id, transStatus: 'Y' } }) };
  }
  const failures = Number(row.otp_failures) + 1;
  await ctx.tx
    .updateTable('three_ds_authentications')
    .set({ otp_failures: failures, interaction_counter: interaction, updated_at: ctx.now })
    .where('acs_trans_id', '=', row.acs_trans_id)
    .execute();
  if (failures >= OTP_MAX_FAILURES) {
    return { kind: 'done', row: await finishChallenge({ ctx, input: { acsTransID: row.acs_trans_id, transStatus: 'N', reason: '19' } }) };
  }
  return { kind: 'open', row: { ...row, otp_failures: failures, interaction_counter: interaction }, notice: 'wrong' };
}

/** Wrong codes the cardholder may still enter. */
export const attemptsLeft = (row: AuthenticationRow) => Math.max(0, OTP_MAX_FAILURES - Number(row.otp_failures));
/** New codes the cardholder may still ask for. */
export const resendsLeft = (row: AuthenticationRow) => Math.max(0, OTP_MAX_SENT - Number(row.otp_sent));

/**
 * A new code on request (decisions §14.4: one): a new 6-digit code replaces the old one, valid 5
 * minutes, and a new sealed `threeDs.otp` callback takes it to the merchant. Beyond the limit the
 * page says so and nothing is sent. Wrong entries so far still count.
 */
export async function resendOtp({ ctx, input }: { ctx: VerbCtx; input: { acsTransID: string } }): Promise<ChallengeStep> {
  const row = await lockChallenge(ctx, input.acsTransID);
  if (!running(row) || row.challenge_method !== 'otp' || row.card_id === null || row.merchant_id === null) throw notRunning(row);
  if (expired(ctx, row)) return timeOut(ctx, row);
  if (resendsLeft(row) === 0) return { kind: 'open', row, notice: 'noMoreCodes' };
  // No new code to guess for a card whose wrong codes of 24 hours are used up (./otp.ts): it ends N/19, nothing sent.
  if (await cardCodesExhausted(ctx, row.card_id)) {
    return { kind: 'done', row: await finishChallenge({ ctx, input: { acsTransID: row.acs_trans_id, transStatus: 'N', reason: '19' } }) };
  }
  const code = newOtp();
  const otpExpiresAt = ctx.now + OTP_TTL_MS;
  const hashed = await hashOtp(ctx.svc.vault, ctx.tx, row.acs_trans_id, code);
  const changes = {
    otp_hash: hashed.hash,
    otp_key_version: hashed.version,
    otp_expires_at: otpExpiresAt,
    otp_sent: Number(row.otp_sent) + 1,
    interaction_counter: Number(row.interaction_counter) + 1,
    updated_at: ctx.now,
  };
  await ctx.tx.updateTable('three_ds_authentications').set(changes).where('acs_trans_id', '=', row.acs_trans_id).execute();
  await notifyMerchant(ctx, {
    merchantId: row.merchant_id,
    type: 'threeDs.otp',
    subject: `threeDs:${row.acs_trans_id}`,
    body: {
      acsTransID: row.acs_trans_id,
      cardId: row.card_id,
      holderId: row.holder_id,
      merchantName: row.merchant_name,
      amount: row.amount === null ? null : Number(row.amount) / 10 ** (row.exponent ?? 2),
      currency: row.currency,
      code,
      expiresAt: new Date(otpExpiresAt).toISOString(),
    },
    sealWith: ctx.svc.box,
  });
  return { kind: 'open', row: { ...row, ...changes }, notice: 'resent' };
}

/** The cardholder cancels: N with challengeCancel 01 (EMVCo: the cardholder selected Cancel). */
export async function cancelChallenge({ ctx, input }: { ctx: VerbCtx; input: { acsTransID: string } }): Promise<ChallengeStep> {
  const row = await lockChallenge(ctx, input.acsTransID);
  if (!running(row)) throw notRunning(row);
  if (expired(ctx, row)) return timeOut(ctx, row);
  const reason: TransStatusReason = '26';
  return {
    kind: 'done',
    row: await finishChallenge({ ctx, input: { acsTransID: row.acs_trans_id, transStatus: 'N', reason, challengeCancel: '01' } }),
  };
}

/**
 * The merchant's answer to an out-of-band challenge (`threeDsChallengeRespond.html`, decisions
 * §14.4): approved ends it Y, declined N/01. Only its own cards' challenges of method oob, once; a
 * challenge already past its 5 minutes ends N/14 instead (and the answer says so).
 */
export async function respondChallenge({
  ctx,
  input,
}: {
  ctx: VerbCtx;
  input: { acsTransID: string; result: 'approved' | 'declined' };
}): Promise<AuthenticationRow> {
  const row = await lockChallenge(ctx, input.acsTransID);
  if (!running(row) || row.challenge_method !== 'oob') throw notRunning(row);
  if (expired(ctx, row)) return (await timeOut(ctx, row)).row;
  await ctx.tx
    .updateTable('three_ds_authentications')
    .set({ oob_result: input.result, interaction_counter: Number(row.interaction_counter) + 1, updated_at: ctx.now })
    .where('acs_trans_id', '=', row.acs_trans_id)
    .execute();
  const approved = input.result === 'approved';
  return finishChallenge({
    ctx,
    input: { acsTransID: row.acs_trans_id, transStatus: approved ? 'Y' : 'N', ...(approved ? {} : { reason: '01' as const }) },
  });
}

/** The page's poll of an out-of-band challenge: over, still waiting, or over now (its 5 minutes passed). */
export async function pollChallenge({ ctx, input }: { ctx: VerbCtx; input: { acsTransID: string } }): Promise<ChallengeStep> {
  const row = await lockChallenge(ctx, input.acsTransID);
  if (row.challenge_state === 'done') return { kind: 'done', row };
  if (!running(row)) throw notRunning(row);
  if (expired(ctx, row)) return timeOut(ctx, row);
  return { kind: 'open', row, notice: 'waiting' };
}

/** A challenge past its 5 minutes ends N/14 (the periodic pass, ./expire.ts); one already over is left as it is. */
export async function expireChallenge({ ctx, input }: { ctx: VerbCtx; input: { acsTransID: string } }): Promise<boolean> {
  const row = await lockChallenge(ctx, input.acsTransID);
  if (!running(row) || !expired(ctx, row)) return false;
  await timeOut(ctx, row);
  return true;
}

/** The authentication as the page reads it (outside any transaction). */
export function challengeRow(db: Kysely<DB>, acsTransId: string): Promise<AuthenticationRow | undefined> {
  return db.selectFrom('three_ds_authentications').selectAll().where('acs_trans_id', '=', acsTransId).executeTakeFirst();
}

/**
 * The page's token: what its forms carry after the CReq opened the challenge, so that only the
 * browser holding the page acts on it (the 3DS Server and the DS know the acsTransID; they do not
 * know this). An HMAC under the ACS's key (data_keys, purpose 3ds), with the key's version.
 */
export async function pageToken(svc: Services, db: Kysely<DB>, acsTransId: string): Promise<string> {
  const { version, key } = await svc.vault.versionedKey(db, '3ds');
  return `${version}.${tokenMac(key, acsTransId)}`;
}

const tokenMac = (key: Buffer, acsTransId: string) =>
  createHmac('sha256', key).update(`cardprogram-3ds-page\n${acsTransId.toLowerCase()}`, 'utf8').digest('base64url');

/** Whether a posted token is the page's, compared in constant time. */
export async function pageTokenMatches(svc: Services, db: Kysely<DB>, acsTransId: string, sent: unknown): Promise<boolean> {
  if (typeof sent !== 'string') return false;
  const m = /^([1-9][0-9]{0,5})\.([A-Za-z0-9_-]{43})$/.exec(sent);
  if (!m) return false;
  let key: Buffer;
  try {
    ({ key } = await svc.vault.versionedKey(db, '3ds', Number(m[1])));
  } catch {
    return false;
  }
  const a = Buffer.from(tokenMac(key, acsTransId));
  const b = Buffer.from(m[2] as string);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The final CRes of a challenge that is over (decisions §14.4), as the form field `cres`: Base64url JSON. */
export function cresOf(row: AuthenticationRow): string {
  const cres: CRes = {
    threeDSServerTransID: row.three_ds_server_trans_id,
    acsTransID: row.acs_trans_id,
    messageType: 'CRes',
    messageVersion: row.message_version,
    transStatus: row.trans_status,
    challengeCompletionInd: 'Y',
  };
  return Buffer.from(JSON.stringify(cres), 'utf8').toString('base64url');
}
