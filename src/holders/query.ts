import type { Kysely } from 'kysely';
import type { SecretBox } from '../crypto/secretbox.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { holderRecord } from './identity.js';
import type { HolderRecord } from './record.js';

/**
 * One merchant's cardholder. Another merchant's holder is answered exactly as an unknown one:
 * tenants must not learn each other's ids exist.
 */
export async function getHolder({
  db,
  box,
  merchantId,
  holderId,
}: {
  db: Kysely<DB>;
  box: SecretBox;
  merchantId: string;
  holderId: string;
}): Promise<HolderRecord> {
  const row = await db
    .selectFrom('cardholders')
    .selectAll()
    .where('id', '=', holderId)
    .where('merchant_id', '=', merchantId)
    .executeTakeFirst();
  if (!row) throw new DomainError('holderNotFound');
  return holderRecord(box, row);
}
