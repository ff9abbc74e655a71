import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import { notifyMerchant } from '../callbacks/merchant-event.js';
import type { VerbCtx } from '../context.js';
import { forUpdate } from '../db/locks.js';
import type { DB } from '../db/schema.js';
import { newOtp } from '../three-ds/otp.js';
import type { PanVault } from '../vault/pan-vault.js';
import { changeTokenStatus } from './lifecycle.js';
import { TspRefusal } from './refusal.js';
import type { TspActivationCodeAnswer, TspActivationCodeRequest, TspVerifyAnswer, TspVerifyRequest } from './schemas.js';
import { authMethodsOf, lockToken, type TokenRow, tokenByReference } from './store.js';

/** An activation code is valid this long (decisions §15.2). */
export const ACTIVATION_CODE_TTL_MS = 10 * 60_000;
/** Wrong codes that end the step-up: the token deleted, the TSP told (decisions §15.2). */
export const ACTIVATION_MAX_FAILURES = 3;
/**
 * Wrong codes a card's tokens may have within 24 hours, all its step-ups together: beyond, a code is
 * not compared and the step-up ends (the token deleted, the TSP told). Each token allows 3, but a
 * guesser who provisions again (20 requests a day) would otherwise get 3 more each time (as 3-D
 * Secure counts a card's challenges together).
 */
export const ACTIVATION_MAX_CARD_FAILURES = 9;
const DAY_MS = 24 * 3_600_000;

/** Codes a pending token may be sent, all its methods together: beyond, 429 (a cardholder's phone is not a spam target). */
export const ACTIVATION_MAX_CODES = 5;

const digest = (key: Buffer, tokenId: string, code: string) =>
  createHmac('sha256', key).update(`cardprogram-token-otp\n${tokenId}\n${code}`, 'utf8').digest();

/**
 * A code as stored: its HMAC under the key of the one-time codes (data_keys purpose `3ds`, as
 * src/three-ds/otp.ts), bound to its token, with the key's version. Never the code: six digits'
 * plain hash would be reversed by trying the million codes.
 */
async function hashCode(vault: PanVault, db: Kysely<DB>, tokenId: string, code: string) {
  const { version, key } = await vault.versionedKey(db, '3ds');
  return { hash: digest(key, tokenId, code).toString('hex'), version };
}

/** Whether `code` is the stored one, compared in constant time (decisions §15.7). */
async function codeMatches(
  vault: PanVault,
  db: Kysely<DB>,
  stored: { token_id: string; code_hash: string; key_version: number },
  code: string,
) {
  const { key } = await vault.versionedKey(db, '3ds', stored.key_version);
  const expected = Buffer.from(stored.code_hash, 'hex');
  const given = digest(key, stored.token_id, code);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * The pending token named, locked after its card (the lock order: a card before its tokens), whose
 * card must be active: the step-up of a token whose card is frozen cannot finish (docs/tokens.md,
 * a freeze leaves a pending token pending), so no code is sent or compared for it (409) until the
 * unfreeze; a closed card's tokens are deleted.
 */
async function pendingToken(ctx: VerbCtx, tokenReferenceId: string): Promise<TokenRow> {
  const seen = await tokenByReference(ctx.tx, tokenReferenceId);
  if (!seen) throw new TspRefusal(404, 'not_found', 'tokenReferenceId: no such token');
  const card = await forUpdate(ctx.tx, ctx.tx.selectFrom('cards').select('status').where('id', '=', seen.card_id)).executeTakeFirst();
  const row = await lockToken(ctx.tx, { tokenReferenceId });
  if (!row) throw new TspRefusal(404, 'not_found', 'tokenReferenceId: no such token');
  if (row.status !== 'pending') throw new TspRefusal(409, 'conflict', `tokenReferenceId: the token is ${row.status}, not pending`);
  if (card?.status !== 'active') {
    throw new TspRefusal(
      409,
      'conflict',
      `tokenReferenceId: the token’s card is ${card?.status ?? 'gone'}; its step-up can finish once the card is active again`,
    );
  }
  return row;
}

/**
 * `POST /tsp/activation-code` (decisions §15.2): a new 6-digit code for one of the pending token's
 * code methods, valid 10 minutes, replacing any earlier one (wrong codes so far still count), sent
 * to the merchant in a sealed `token.otp` callback to deliver; stored only as a keyed hash.
 */
export async function requestActivationCode({
  ctx,
  input,
}: {
  ctx: VerbCtx;
  input: TspActivationCodeRequest;
}): Promise<TspActivationCodeAnswer> {
  const row = await pendingToken(ctx, input.tokenReferenceId);
  const method = authMethodsOf(row).find((m) => m.id === input.methodId);
  if (!method) throw new TspRefusal(400, 'invalid_request', 'methodId: is not one of the token’s authenticationMethods');
  if (method.type === 'app')
    throw new TspRefusal(400, 'invalid_request', 'methodId: the app method has no code (the merchant’s app confirms)');
  const url = (await ctx.tx.selectFrom('merchants').select('notify_url').where('id', '=', row.merchant_id).executeTakeFirst())?.notify_url;
  if (!url) throw new TspRefusal(409, 'conflict', 'methodId: the code cannot be delivered now (the program has no notify URL)');
  const current = await ctx.tx.selectFrom('token_activation_codes').selectAll().where('token_id', '=', row.id).executeTakeFirst();
  const sent = Number(current?.sent ?? 0);
  if (sent >= ACTIVATION_MAX_CODES)
    throw new TspRefusal(429, 'too_many_codes', `methodId: ${ACTIVATION_MAX_CODES} codes were sent for this token`);
  const code = newOtp();
  const expiresAt = ctx.now + ACTIVATION_CODE_TTL_MS;
  const hashed = await hashCode(ctx.svc.vault, ctx.tx, row.id, code);
  const values = {
    method_id: method.id,
    method_type: method.type,
    code_hash: hashed.hash,
    key_version: hashed.version,
    expires_at: expiresAt,
    sent: sent + 1,
    updated_at: ctx.now,
  };
  if (current) await ctx.tx.updateTable('token_activation_codes').set(values).where('token_id', '=', row.id).execute();
  else
    await ctx.tx
      .insertInto('token_activation_codes')
      .values({ token_id: row.id, attempts: 0, created_at: ctx.now, ...values })
      .execute();
  await notifyMerchant(ctx, {
    merchantId: row.merchant_id,
    type: 'token.otp',
    subject: `token:${row.id}`,
    url,
    body: {
      tokenId: row.id,
      cardId: row.card_id,
      holderId: row.holder_id,
      code,
      method: method.type,
      walletProvider: row.wallet_provider,
      expiresAt: new Date(expiresAt).toISOString(),
    },
    sealWith: ctx.svc.box,
  });
  return { methodId: method.id, expiresAt: new Date(expiresAt).toISOString() };
}

/**
 * `POST /tsp/activation-code/verify` (decisions §15.2): the code compared in constant time with the
 * token's newest one. Right: the token active (source `service`; the TSP is not called, its own
 * request carries the outcome). Wrong: counted; the third wrong code of the token deletes it and the
 * TSP is told (changeTokenStatus). An expired code, or none sent yet, is not valid and not counted.
 */
export async function verifyActivationCode({ ctx, input }: { ctx: VerbCtx; input: TspVerifyRequest }): Promise<TspVerifyAnswer> {
  const row = await pendingToken(ctx, input.tokenReferenceId);
  const stored = await ctx.tx.selectFrom('token_activation_codes').selectAll().where('token_id', '=', row.id).executeTakeFirst();
  const failures = Number(stored?.attempts ?? 0);
  const left = Math.max(0, ACTIVATION_MAX_FAILURES - failures);
  if (!stored) return { valid: false, attemptsLeft: left, reason: 'no_code' };
  if (Number(stored.expires_at) <= ctx.now) return { valid: false, attemptsLeft: left, reason: 'expired' };
  // The card's wrong codes of the last 24 hours, all its tokens together (the card's lock is held: exact).
  const ofCard = await ctx.tx
    .selectFrom('token_activation_codes')
    .innerJoin('tokens', 'tokens.id', 'token_activation_codes.token_id')
    .select((eb) => eb.fn.sum<number>('token_activation_codes.attempts').as('n'))
    .where('tokens.card_id', '=', row.card_id)
    .where('token_activation_codes.updated_at', '>', ctx.now - DAY_MS)
    .executeTakeFirst();
  if (Number(ofCard?.n ?? 0) >= ACTIVATION_MAX_CARD_FAILURES) {
    await changeTokenStatus(ctx, {
      token: { id: row.id },
      to: 'deleted',
      source: 'service',
      reason: `${ACTIVATION_MAX_CARD_FAILURES} wrong activation codes on the card within 24 hours`,
    });
    return { valid: false, attemptsLeft: 0, reason: 'too_many_failures' };
  }
  if (await codeMatches(ctx.svc.vault, ctx.tx, stored, input.code)) {
    await ctx.tx.deleteFrom('token_activation_codes').where('token_id', '=', row.id).execute();
    await changeTokenStatus(ctx, {
      token: { id: row.id },
      to: 'active',
      source: 'service',
      reason: 'activation code verified',
      tellTsp: false,
    });
    return { valid: true, attemptsLeft: left };
  }
  const attempts = failures + 1;
  await ctx.tx.updateTable('token_activation_codes').set({ attempts, updated_at: ctx.now }).where('token_id', '=', row.id).execute();
  if (attempts >= ACTIVATION_MAX_FAILURES) {
    await changeTokenStatus(ctx, {
      token: { id: row.id },
      to: 'deleted',
      source: 'service',
      reason: `${ACTIVATION_MAX_FAILURES} wrong activation codes`,
    });
  }
  return { valid: false, attemptsLeft: Math.max(0, ACTIVATION_MAX_FAILURES - attempts), reason: 'wrong' };
}
