import type { Kysely } from 'kysely';
import { sealPayload } from '../callbacks/outbox.js';
import type { Services } from '../context.js';
import type { SecretBox } from '../crypto/secretbox.js';
import type { DB, KycRequestsTable } from '../db/schema.js';
import { emailHash, type IdentityKeys } from '../holders/identity.js';

/**
 * A KYC request's e-mail, sealed at rest as a cardholder's is (issue 26.9): the same person's
 * address must not be readable in `kyc_requests`, in the stored `kyc.result` event, or in the audit
 * trail, when it is sealed everywhere else. Sealed under the master key, bound to the request; the
 * one-request-per-e-mail rule and the console's search use its keyed hash, the one cardholders'
 * e-mails are found by. Every reader of the e-mail goes through this module.
 */
const context = (kycId: string) => `kyc-email:${kycId}`;

/** The columns that store a request's e-mail: sealed, its keyed hash, the plain column emptied. */
export async function kycEmailColumns(keys: IdentityKeys, db: Kysely<DB>, kycId: string, email: string) {
  const normalised = email.trim().toLowerCase();
  return { email: '', email_enc: keys.box.seal(normalised, context(kycId)), email_hash: await emailHash(keys.vault, db, normalised) };
}

/** A request's e-mail, opened (a row not sealed yet still holds it plain, until the start-up step runs). */
export function kycEmail(box: SecretBox, row: Pick<KycRequestsTable, 'id' | 'email' | 'email_enc'>): string {
  return row.email_enc === null ? row.email : box.open(row.email_enc, context(row.id));
}

/**
 * Seals what was stored before the KYC e-mail was (migration 2026_11_25_0015): each request's
 * e-mail, and each stored `kyc.result` event's payload. Runs at start, after the migrations, with
 * the master key, as sealPlaintextHolders does; idempotent, each row by a conditional update.
 * Returns how many rows it sealed.
 */
export async function sealPlaintextKyc(svc: IdentityKeys & Pick<Services, 'database'>): Promise<number> {
  return svc.database.withTx(async (tx) => {
    let sealed = 0;
    const rows = await tx.selectFrom('kyc_requests').select(['id', 'email']).where('email_enc', 'is', null).execute();
    for (const row of rows) {
      const res = await tx
        .updateTable('kyc_requests')
        .set(await kycEmailColumns(svc, tx, row.id, row.email))
        .where('id', '=', row.id)
        .where('email_enc', 'is', null)
        .executeTakeFirst();
      sealed += Number(res.numUpdatedRows);
    }
    // The stored kyc.result events of those requests: only while requests are left to seal (the
    // first start after the migration), so later starts do not read the whole outbox. Events written
    // since are sealed when written.
    if (rows.length === 0) return sealed;
    const events = await tx
      .selectFrom('callback_events')
      .select(['id', 'payload'])
      .where('type', '=', 'kyc.result')
      .where('payload', 'not like', 'v1.%')
      .execute();
    for (const event of events) {
      const res = await tx
        .updateTable('callback_events')
        .set({ payload: sealPayload(svc.box, event.id, event.payload) })
        .where('id', '=', event.id)
        .where('payload', '=', event.payload)
        .executeTakeFirst();
      sealed += Number(res.numUpdatedRows);
    }
    return sealed;
  });
}
