import type { Kysely } from 'kysely';
import type { VerbCtx } from '../context.js';
import type { DB } from '../db/schema.js';
import type { RotatablePurpose } from '../vault/pan-vault.js';

// The keys at rest, an operator's jobs (`cardprogram keys rotate|reseal`, docs/operations.md): each a
// verb the runner runs, its audit record (`keys.rotate`, `keys.reseal`) the runner's `audit` option.

/** A data key's new version: new values are sealed under it, existing ones keep theirs. Its id is the record's target. */
export async function rotateDataKey({
  ctx,
  input,
}: {
  ctx: VerbCtx;
  input: { purpose: RotatablePurpose };
}): Promise<{ purpose: RotatablePurpose; keyId: string }> {
  return { purpose: input.purpose, keyId: await ctx.svc.vault.rotate(ctx.tx, input.purpose) };
}

/**
 * Every sealed column, with the associated data its values are bound to. A new sealed column must
 * be listed here, or a master-key rotation leaves it behind (the reseal test checks every `_enc` column).
 */
const SEALED: Array<{ table: keyof DB; key: string | string[]; column: string; context: (row: Record<string, any>) => string }> = [
  { table: 'merchants', key: 'id', column: 'secret_enc', context: (r) => `merchant-secret:${r.id}` },
  { table: 'merchants', key: 'id', column: 'webhook_secret_enc', context: (r) => `webhook-secret:${r.id}` },
  { table: 'data_keys', key: 'id', column: 'key_enc', context: (r) => `data-key:${r.id}` },
  { table: 'kyc_requests', key: 'id', column: 'data_enc', context: (r) => `kyc:${r.id}` },
  { table: 'merchant_domains', key: 'host', column: 'key_enc', context: (r) => `domain-key:${r.host}` },
  { table: 'cardholders', key: 'id', column: 'identity_enc', context: (r) => `holder-identity:${r.id}` },
  { table: 'operators', key: 'id', column: 'totp_enc', context: (r) => `operator-totp:${r.id}` },
  { table: 'kyc_requests', key: 'id', column: 'email_enc', context: (r) => `kyc-email:${r.id}` },
  // A dispute's explanation and its evidence files (src/disputes/store.ts).
  { table: 'disputes', key: 'id', column: 'explanation_enc', context: (r) => `dispute-explanation:${r.id}` },
  {
    table: 'dispute_evidence',
    key: ['id', 'dispute_id'],
    column: 'data_enc',
    context: (r) => `dispute-evidence:${r.dispute_id}:${r.id}`,
  },
  // A 3-D Secure result waiting for the DS: the RReq carries the authentication value (src/three-ds/finish.ts).
  { table: 'three_ds_results', key: 'acs_trans_id', column: 'rreq_enc', context: (r) => `three-ds-rreq:${r.acs_trans_id}` },
  // Only kyc.result and threeDs.otp payloads are sealed (callbacks/outbox.ts); the others are JSON, left alone below.
  { table: 'callback_events', key: 'id', column: 'payload', context: (r) => `callback-payload:${r.id}` },
  {
    table: 'idempotency_keys',
    key: ['merchant_id', 'random_str'],
    column: 'response_body',
    context: (r) => `idempotency:${r.merchant_id}:${r.random_str}`,
  },
];

export const SEALED_COLUMNS = SEALED.map((s) => `${s.table}.${s.column}`);

/** What a reseal did: the master keys, and how many values of each sealed column moved. */
export interface Resealed {
  masterKeyId: string;
  previousMasterKeyIds: string[];
  /** As pairs: a column's own name (…_enc) would be redacted as a key of the audit record. */
  moved: Array<{ column: string; values: number }>;
}

/**
 * Moves every sealed value under the current master key (the last step of a rotation: see
 * docs/operations.md). One transaction, the run's: either every value moves or none does, and its
 * audit record with them. Values already under the current key are left alone, so running it twice
 * is harmless.
 */
export async function resealAll({ ctx }: { ctx: VerbCtx; input: Record<string, never> }): Promise<Resealed> {
  const { svc } = ctx;
  const moved: Resealed['moved'] = [];
  const db = ctx.tx as unknown as Kysely<any>;
  for (const s of SEALED) {
    const keys = typeof s.key === 'string' ? [s.key] : s.key;
    const rows = await db
      .selectFrom(s.table)
      .select([...keys, s.column])
      .where(s.column, 'is not', null)
      .execute();
    let n = 0;
    for (const row of rows) {
      const sealed = row[s.column] as string;
      // Not sealed at all: an idempotency answer stored before answers were sealed, a plain event payload (JSON).
      if (!sealed.startsWith('v1.') || svc.box.isCurrent(sealed)) continue;
      const context = s.context(row);
      const value = svc.box.seal(svc.box.open(sealed, context), context);
      let update = db.updateTable(s.table).set({ [s.column]: value });
      for (const k of keys) update = update.where(k, '=', row[k]);
      await update.execute();
      n++;
    }
    moved.push({ column: `${s.table}.${s.column}`, values: n });
  }
  return { masterKeyId: svc.box.keyId, previousMasterKeyIds: svc.box.previousKeyIds, moved };
}
