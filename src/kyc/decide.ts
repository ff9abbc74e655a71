import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { notifyMerchant } from '../callbacks/merchant-event.js';
import { AuditStatus, canTransition } from '../codes/audit-status.js';
import type { VerbCtx } from '../context.js';
import type { SecretBox } from '../crypto/secretbox.js';
import { newId } from '../db/ids.js';
import type { DB, KycRequestsTable, KycStatus } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { documentHash, emailHash, identityColumns, openIdentity } from '../holders/identity.js';
import { reviewHolder } from '../holders/review.js';
import { kycEmail } from './email.js';
import type { KycStatusSchema } from './schemas.js';
import type { KycData } from './submit.js';

export type KycStatusModel = Static<typeof KycStatusSchema>;

const NEXT: Record<KycStatus, readonly KycStatus[]> = {
  init: ['reviewing', 'approved', 'rejected'],
  reviewing: ['approved', 'rejected'],
  approved: [],
  rejected: [],
};

export interface DecideKycInput {
  requestNo: string;
  status: 'reviewing' | 'approved' | 'rejected';
  reason?: string | undefined;
}

export function toKycModel(
  box: SecretBox,
  row: Pick<KycRequestsTable, 'id' | 'request_no' | 'email' | 'email_enc' | 'status' | 'reason' | 'holder_id'>,
): KycStatusModel {
  return { requestNo: row.request_no, email: kycEmail(box, row), kycStatus: row.status, reason: row.reason, holderId: row.holder_id };
}

export async function loadKyc(db: Kysely<DB>, merchantId: string | null, requestNo: string) {
  let q = db.selectFrom('kyc_requests').selectAll().where('request_no', '=', requestNo);
  if (merchantId !== null) q = q.where('merchant_id', '=', merchantId);
  const rows = await q.limit(2).execute();
  if (rows.length === 0) throw new DomainError('kycNotFound');
  if (rows.length > 1) throw new DomainError('validation', `requestNo: ${requestNo} exists for several merchants; name the merchant`);
  return rows[0] as NonNullable<(typeof rows)[0]>;
}

const sameName = (a: string, b: string) =>
  a.normalize('NFC').trim().replace(/\s+/g, ' ').toLowerCase() === b.normalize('NFC').trim().replace(/\s+/g, ' ').toLowerCase();

/**
 * The approved person's cardholder. The merchant's live cardholder with this e-mail (or, failing
 * that, with this document) is approved only if it is the same person: same first and last name
 * and date of birth. A KYC pass for one person must never approve another person's record; a
 * mismatch approves nobody and says so in the reason. When there is no such cardholder, one is
 * created from the KYC data, approved (interface 4.3 → cards and the login-free page).
 */
async function approveHolder(ctx: VerbCtx, kyc: KycRequestsTable, email: string): Promise<{ holderId: string | null; note: string }> {
  const { box, vault } = ctx.svc;
  // The holder's review is the merchant's, whoever decides the request.
  const asMerchant = { ...ctx, merchantId: kyc.merchant_id };
  const data = JSON.parse(box.open(kyc.data_enc, `kyc:${kyc.id}`)) as KycData;
  const live = () =>
    ctx.tx
      .selectFrom('cardholders')
      .select(['id', 'audit_status', 'first_name', 'last_name', 'identity_enc'])
      .where('merchant_id', '=', kyc.merchant_id)
      .where('audit_status', '<>', AuditStatus.rejected)
      .orderBy('created_at', 'desc');
  // Found by keyed hashes: the e-mail and document number are stored sealed (src/holders/identity.ts).
  const holder =
    (await live()
      .where('email_hash', '=', kyc.email_hash ?? (await emailHash(vault, ctx.tx, email)))
      .executeTakeFirst()) ??
    (await live()
      .where('idno_type', '=', data.idDocType)
      .where('idno_key', '=', await documentHash(vault, ctx.tx, data.number))
      .executeTakeFirst());
  if (holder) {
    const dob = openIdentity(box, holder).dateOfBirth;
    if (!sameName(holder.first_name, data.firstName) || !sameName(holder.last_name, data.lastName) || dob !== data.dob) {
      return { holderId: null, note: `cardholder ${holder.id} was not approved: its name or date of birth differs from the KYC data` };
    }
    if (holder.audit_status !== AuditStatus.approved && canTransition(holder.audit_status, AuditStatus.approved)) {
      await reviewHolder({ ctx: asMerchant, input: { holderId: holder.id, auditStatus: AuditStatus.approved } });
    }
    return { holderId: holder.id, note: '' };
  }
  const id = newId('hld');
  await ctx.tx
    .insertInto('cardholders')
    .values({
      id,
      merchant_id: kyc.merchant_id,
      first_name: data.firstName,
      last_name: data.lastName,
      nationality: data.country,
      sex: data.gender,
      country_code: data.address.country,
      idno_type: data.idDocType,
      ...(await identityColumns(ctx.svc, ctx.tx, id, {
        idno: data.number,
        dateOfBirth: data.dob,
        address: data.address.address,
        town: data.address.city,
        postCode: data.address.zipCode,
        mobile: '',
        email,
      })),
      audit_status: AuditStatus.pending,
      err_msg: '',
      created_at: ctx.now,
      updated_at: ctx.now,
    })
    .execute();
  await reviewHolder({ ctx: asMerchant, input: { holderId: id, auditStatus: AuditStatus.approved } });
  return { holderId: id, note: '' };
}

/**
 * Moves a KYC request init → reviewing → approved | rejected, in the caller's transaction, and
 * writes the `kyc.result` callback to the request's callbackUrl with it. Without `ctx.merchantId`
 * (the operator's CLI, the sandbox's automatic reviewer) any merchant's request may be decided.
 */
export async function decideKyc({ ctx, input }: { ctx: VerbCtx; input: DecideKycInput }): Promise<KycStatusModel> {
  const kyc = await loadKyc(ctx.tx, ctx.merchantId ?? null, input.requestNo);
  if (!NEXT[kyc.status].includes(input.status)) {
    throw new DomainError(
      'kycState',
      `requestNo: the request is ${kyc.status}; it can become ${NEXT[kyc.status].join(' or ') || 'nothing else'}`,
    );
  }
  let reason = (input.reason ?? '').trim().slice(0, 500);
  let holderId = kyc.holder_id;
  const email = kycEmail(ctx.svc.box, kyc);
  if (input.status === 'approved') {
    const linked = await approveHolder(ctx, kyc, email);
    holderId = linked.holderId;
    if (linked.note) reason = reason ? `${reason}; ${linked.note}` : linked.note;
  }
  const res = await ctx.tx
    .updateTable('kyc_requests')
    .set({ status: input.status, reason, holder_id: holderId, auto_decide_at: null, updated_at: ctx.now })
    .where('id', '=', kyc.id)
    .where('status', '=', kyc.status)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) throw new DomainError('kycState', 'requestNo: the request changed concurrently, try again');
  // To the request's own callbackUrl (required, never empty), not the merchant's notify URL.
  await notifyMerchant(ctx, {
    merchantId: kyc.merchant_id,
    type: 'kyc.result',
    subject: `kyc:${kyc.id}`,
    url: kyc.callback_url,
    body: { requestNo: kyc.request_no, email, kycStatus: input.status, reason, holderId },
    // The payload holds the e-mail: stored sealed, opened only to be sent (issue 26.9).
    sealWith: ctx.svc.box,
  });
  return toKycModel(ctx.svc.box, { ...kyc, status: input.status, reason, holder_id: holderId });
}
