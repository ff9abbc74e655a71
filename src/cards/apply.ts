import type { Static } from 'typebox';
import { AuditStatus } from '../codes/audit-status.js';
import type { MerchantCtx } from '../context.js';
import { rebuildCounters } from '../controls/spending.js';
import { checkControls, storedControls } from '../controls/update.js';
import { newId } from '../db/ids.js';
import { isUniqueViolation } from '../db/index.js';
import { forUpdate } from '../db/locks.js';
import { DomainError } from '../errors.js';
import { isCardCurrency } from '../money/currency.js';
import type { OperationInput } from '../operation-input.js';
import { generatePan } from './card-number.js';
import { type CardModel, toCardModel } from './model.js';
import type { CardApplyBody } from './schemas.js';

/** Cards are valid for three years, to the end of the month. */
const VALIDITY_MONTHS = 36;

/**
 * Issues a virtual card to one of the merchant's approved cardholders, with its own spending
 * controls when given (a new card has spent nothing: its limits' counters start at 0).
 */
export async function applyCard({
  ctx,
  input,
}: {
  ctx: MerchantCtx;
  input: OperationInput<Static<typeof CardApplyBody>>;
}): Promise<CardModel> {
  const { merchantId } = ctx;
  const { vault, config } = ctx.svc;
  // Locked before its status is read: a review that rejects the holder meanwhile either waits for
  // this card (and then freezes it) or commits first (and then this issue sees status 3).
  const holder = await forUpdate(
    ctx.tx,
    ctx.tx.selectFrom('cardholders').select(['id', 'audit_status']).where('id', '=', input.holderId).where('merchant_id', '=', merchantId),
  ).executeTakeFirst();
  if (!holder) throw new DomainError('holderNotFound');
  if (holder.audit_status !== AuditStatus.approved) {
    throw new DomainError(
      'holderNotApproved',
      `holderId: the cardholder's auditStatus is ${holder.audit_status}; cards are issued only at 2 (approved)`,
    );
  }
  if (!isCardCurrency(input.currency)) throw new DomainError('unsupportedCurrency', 'currency: must be EUR or USDT');
  const controls = checkControls(input.controls ?? {}, [input.currency]);

  const now = new Date(ctx.now);
  const expiry = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + VALIDITY_MONTHS, 1));
  const id = newId('card');
  // A collision of two random 9-digit account numbers in one BIN is rare; the unique hash decides.
  for (let attempt = 0; ; attempt++) {
    const pan = generatePan(config.program.bins[input.currency]);
    const panHash = await vault.hash(ctx.tx, pan);
    const taken = await ctx.tx.selectFrom('cards').select('id').where('pan_hash', '=', panHash).executeTakeFirst();
    if (taken) {
      if (attempt < 10) continue;
      throw new Error('card number range exhausted');
    }
    const { enc, keyId } = await vault.encrypt(ctx.tx, id, pan);
    const row = {
      id,
      merchant_id: merchantId,
      holder_id: holder.id,
      currency: input.currency,
      status: 'active' as const,
      pan_enc: enc,
      pan_key_id: keyId,
      pan_hash: panHash,
      pan_first6: pan.slice(0, 6),
      pan_last4: pan.slice(-4),
      pan_length: pan.length,
      expiry_month: expiry.getUTCMonth() + 1,
      expiry_year: expiry.getUTCFullYear(),
      available_balance: 0,
      ledger_balance: 0,
      debt: 0,
      created_at: ctx.now,
      updated_at: ctx.now,
      status_source: null,
      status_reason: null,
      controls: storedControls(controls),
      verification_failures: null,
    };
    try {
      await ctx.tx.insertInto('cards').values(row).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw new Error('card number collision under concurrency; retry the request');
      throw err;
    }
    await rebuildCounters(ctx, { id, cardIds: [id], currencies: [input.currency], controls }, ctx.svc.clock);
    return toCardModel(row);
  }
}
