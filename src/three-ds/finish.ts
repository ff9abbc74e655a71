import { notifyMerchant } from '../callbacks/merchant-event.js';
import type { VerbCtx } from '../context.js';
import { forUpdate } from '../db/locks.js';
import { DomainError } from '../errors.js';
import { issueAuthenticationValue } from './av.js';
import { brandOf, eciFor } from './brand.js';
import { lockCardState, resetExemption } from './card-state.js';
import type { RReq, TransStatusReason } from './emv-messages.js';
import type { AuthenticationRow } from './store.js';

export interface FinishChallengeInput {
  acsTransID: string;
  /** Y: the cardholder authenticated (the code, the app's approval); N: not (with `reason`). */
  transStatus: 'Y' | 'N';
  /** For N: 01 wrong codes or declined in the app, 14 timed out, 19 too many codes, 26 not performed (cancelled). */
  reason?: TransStatusReason;
  /** The cardholder cancelled (EMVCo's challengeCancel: 01). */
  challengeCancel?: string;
}

/**
 * Ends a challenge (decisions §14.4), whatever ended it: the code entered, the merchant's app's
 * answer, a cancel, the expiry. Under the card's state lock and the authentication's row lock, once:
 * a challenge already ended is 2751. Y issues the authentication value and starts the card's
 * low-value exemption count again; N leaves it as it is (an unfinished or failed challenge resets
 * nothing). The result waits for the DS (`three_ds_results`, the RReq, sent and retried by the
 * results sender) and the merchant gets a `threeDs.result` callback, both in this transaction.
 */
export async function finishChallenge({ ctx, input }: { ctx: VerbCtx; input: FinishChallengeInput }): Promise<AuthenticationRow> {
  const seen = await ctx.tx
    .selectFrom('three_ds_authentications')
    .select(['card_id', 'merchant_id'])
    .where('acs_trans_id', '=', input.acsTransID)
    .executeTakeFirst();
  if (!seen?.card_id || (ctx.merchantId !== undefined && seen.merchant_id !== ctx.merchantId)) {
    throw new DomainError('authenticationNotFound', 'acsTransID: authentication not found');
  }
  // The lock order of an AReq: the card's state row, then the authentication.
  await lockCardState(ctx, seen.card_id);
  const row = await forUpdate(
    ctx.tx,
    ctx.tx.selectFrom('three_ds_authentications').selectAll().where('acs_trans_id', '=', input.acsTransID),
  ).executeTakeFirstOrThrow();
  if (row.trans_status !== 'C' || row.challenge_state === 'done' || row.card_id === null || row.merchant_id === null) {
    throw new DomainError('authenticationState', `acsTransID: the authentication is ${row.trans_status}, not a challenge under way`);
  }
  const cardId = row.card_id;
  const authenticated = input.transStatus === 'Y';
  const eci = eciFor(brandOf(row.pan_masked), authenticated);
  const changes: Partial<AuthenticationRow> = {
    trans_status: input.transStatus,
    trans_status_reason: authenticated ? null : (input.reason ?? '01'),
    eci,
    challenge_state: 'done',
    challenge_cancel: input.challengeCancel ?? null,
    interaction_counter: Math.max(1, Number(row.interaction_counter)),
    completed_at: ctx.now,
    updated_at: ctx.now,
  };
  let authenticationValue: string | null = null;
  if (authenticated) {
    const av = await issueAuthenticationValue(ctx.svc, ctx.tx, {
      acsTransId: row.acs_trans_id,
      cardId,
      amount: row.amount === null ? null : Number(row.amount),
      currency: row.currency,
      eci,
      issuedAt: ctx.now,
    });
    authenticationValue = av.value;
    Object.assign(changes, av.columns);
    await resetExemption(ctx, cardId);
  }
  await ctx.tx.updateTable('three_ds_authentications').set(changes).where('acs_trans_id', '=', row.acs_trans_id).execute();
  const done = { ...row, ...changes } as AuthenticationRow;
  const rreq: RReq = {
    messageType: 'RReq',
    messageVersion: row.message_version,
    threeDSServerTransID: row.three_ds_server_trans_id,
    dsTransID: row.ds_trans_id,
    acsTransID: row.acs_trans_id,
    messageCategory: row.message_category,
    transStatus: input.transStatus,
    ...(done.trans_status_reason ? { transStatusReason: done.trans_status_reason } : {}),
    ...(eci ? { eci } : {}),
    ...(authenticationValue ? { authenticationValue } : {}),
    ...(row.authentication_type ? { authenticationType: row.authentication_type } : {}),
    interactionCounter: String(done.interaction_counter).padStart(2, '0'),
    ...(input.challengeCancel ? { challengeCancel: input.challengeCancel } : {}),
  };
  // The RReq waits here until the DS answers; the value is in it for the DS alone (the row keeps its hash).
  await ctx.tx
    .insertInto('three_ds_results')
    .values({
      acs_trans_id: row.acs_trans_id,
      rreq_enc: ctx.svc.box.seal(JSON.stringify(rreq), `three-ds-rreq:${row.acs_trans_id}`),
      status: 'pending',
      attempts: 0,
      next_attempt_at: ctx.now,
      lease_owner: null,
      lease_until: null,
      last_error: null,
      rres: null,
      sent_at: null,
      created_at: ctx.now,
    })
    .execute();
  await notifyMerchant(ctx, {
    merchantId: row.merchant_id,
    type: 'threeDs.result',
    subject: `threeDs:${row.acs_trans_id}`,
    body: {
      acsTransID: row.acs_trans_id,
      cardId,
      holderId: row.holder_id,
      transStatus: input.transStatus,
      transStatusReason: done.trans_status_reason,
      eci,
      authenticationType: row.authentication_type,
      challengeMethod: row.challenge_method,
    },
  });
  const seconds = (ctx.now - Number(row.created_at)) / 1000;
  ctx.afterCommit(() => ctx.svc.metrics.threeDsChallenge(input.transStatus, seconds));
  return done;
}
