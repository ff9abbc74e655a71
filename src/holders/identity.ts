import type { Kysely, Selectable } from 'kysely';
import type { AuditStatusValue } from '../codes/audit-status.js';
import { IDENTITY_FIELDS } from '../codes/sealed-fields.js';
import type { Services } from '../context.js';
import type { SecretBox } from '../crypto/secretbox.js';
import type { CardholdersTable, DB } from '../db/schema.js';
import type { PanVault } from '../vault/pan-vault.js';
import type { HolderRecord } from './record.js';

/**
 * A cardholder's identity data, sealed at rest in `cardholders.identity_enc` (AES-256-GCM under the
 * master key, bound to the holder id like KYC data). Why: a copy of the database (a backup, a stolen
 * SQLite file) without the master key must not yield who the cardholders are, how to reach them or
 * their documents. Names, nationality, country and sex stay plain: operators search by name.
 * Every reader of these fields goes through this module.
 */
export interface HolderIdentity {
  idno: string;
  dateOfBirth: string;
  address: string;
  town: string;
  postCode: string;
  mobile: string;
  email: string;
}

// Every field of a HolderIdentity is sealed at rest, so never in the audit trail either: the list is
// src/codes/sealed-fields.ts's (the trail reads it there). A field of it not in HolderIdentity, or a field
// added to HolderIdentity and not to the list, does not compile.
const listed: readonly (keyof HolderIdentity)[] = IDENTITY_FIELDS;
void listed;
// A field added to HolderIdentity and not to the list does not compile.
const everyField: Exclude<keyof HolderIdentity, (typeof IDENTITY_FIELDS)[number]> extends never ? true : never = true;
void everyField;

/** What sealing and finding identities needs: the master key's box and the lookup data key. */
export type IdentityKeys = Pick<Services, 'box' | 'vault'>;

/** The plaintext columns the sealed column replaces: stored empty once a row is sealed. */
const EMPTIED = { idno: '', date_of_birth: '', address: '', town: '', post_code: '', mobile: '', email: '' } as const;

const context = (holderId: string) => `holder-identity:${holderId}`;

/** The document number as the one-holder-per-document rule compares it. */
export function normaliseIdno(idno: string): string {
  return idno.toUpperCase().replace(/[\s-]/g, '');
}

/** Keyed hash of an e-mail (lower-cased): finds a holder by e-mail without storing it readable. */
export function emailHash(vault: PanVault, db: Kysely<DB>, email: string): Promise<string> {
  return vault.lookupHash(db, `email:${email.trim().toLowerCase()}`);
}

/**
 * `idno_key`: a keyed hash of the normalised document number, 40 hex characters (160 bits; the
 * column's width), for the one-holder-per-document rule and its unique index.
 */
export async function documentHash(vault: PanVault, db: Kysely<DB>, idno: string): Promise<string> {
  return (await vault.lookupHash(db, `idno:${normaliseIdno(idno)}`)).slice(0, 40);
}

/** The columns that store an identity for a holder row: sealed data, lookup hashes, plaintext emptied. */
export async function identityColumns(keys: IdentityKeys, db: Kysely<DB>, holderId: string, identity: HolderIdentity) {
  return {
    ...EMPTIED,
    identity_enc: keys.box.seal(JSON.stringify(identity), context(holderId)),
    email_hash: await emailHash(keys.vault, db, identity.email),
    idno_key: await documentHash(keys.vault, db, identity.idno),
  };
}

/** A holder's identity, opened. */
export function openIdentity(box: SecretBox, row: Pick<Selectable<CardholdersTable>, 'id' | 'identity_enc'>): HolderIdentity {
  if (row.identity_enc === null) throw new Error(`cardholder ${row.id} is not sealed yet (sealPlaintextHolders runs at start)`);
  return JSON.parse(box.open(row.identity_enc, context(row.id))) as HolderIdentity;
}

/** The cardholder record of interface §2.2 for a stored row. */
export function holderRecord(box: SecretBox, row: Selectable<CardholdersTable>): HolderRecord {
  const identity = openIdentity(box, row);
  return {
    holderId: row.id,
    // The column holds only the codes of src/codes/audit-status.ts: every writer takes them from that table.
    auditStatus: row.audit_status as AuditStatusValue,
    errMsg: row.err_msg,
    firstName: row.first_name,
    lastName: row.last_name,
    idno: identity.idno,
    idnoType: row.idno_type,
    mobile: identity.mobile,
  };
}

/**
 * Seals the rows written before identity data was encrypted (migration
 * 2026_11_23_0007_holder_identity_sealed): runs at start, after the migrations, with the secret box.
 * Idempotent (only rows without `identity_enc` are touched, each with a conditional update, so two
 * instances starting together do not seal a row twice). Returns how many rows it sealed.
 */
export async function sealPlaintextHolders(svc: IdentityKeys & Pick<Services, 'database'>): Promise<number> {
  return svc.database.withTx(async (tx) => {
    const rows = await tx.selectFrom('cardholders').selectAll().where('identity_enc', 'is', null).execute();
    let sealed = 0;
    for (const row of rows) {
      const identity: HolderIdentity = {
        idno: row.idno,
        dateOfBirth: row.date_of_birth,
        address: row.address,
        town: row.town,
        postCode: row.post_code,
        mobile: row.mobile,
        email: row.email,
      };
      const res = await tx
        .updateTable('cardholders')
        .set(await identityColumns(svc, tx, row.id, identity))
        .where('id', '=', row.id)
        .where('identity_enc', 'is', null)
        .executeTakeFirst();
      sealed += Number(res.numUpdatedRows);
    }
    return sealed;
  });
}
