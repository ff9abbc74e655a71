import { type Kysely, sql } from 'kysely';
import { AuditStatus } from '../codes/audit-status.js';
import { EUROPEAN_COUNTRIES, ISO_COUNTRIES } from '../codes/countries.js';
import type { MerchantCtx } from '../context.js';
import { parseDate } from '../dates.js';
import { newId } from '../db/ids.js';
import { isUniqueViolation } from '../db/index.js';
import { hasRowLocks } from '../db/locks.js';
import { runParts } from '../db/one-statement.js';
import { DomainError, invalid } from '../errors.js';
import { claimsItsKey } from '../idempotency/keys.js';
import { documentHash, type HolderIdentity, holderRecord, type IdentityKeys, identityColumns, normaliseIdno } from './identity.js';
import type { HolderRecord } from './record.js';

/** Plain-text input (the HTTP route has already decoded the interface's Base64 fields). */
export interface CreateHolderInput {
  mobile: string;
  firstName: string;
  lastName?: string | undefined;
  email: string;
  dateOfBirth: string;
  nationality: string;
  sex: number;
  countryCode: string;
  town: string;
  address: string;
  postCode: string;
  idnoType: number;
  idno: string;
}

/** A person's name as every path into the service accepts it (normalised, letters and name punctuation). */
export function checkName(field: string, value: string): string {
  return text(field, value, 50, NAME, 'must contain only letters, spaces, apostrophes, dots and hyphens');
}

// Letters of any script with their marks, spaces, and the punctuation names carry (O'Neil, Jean-Luc, St.).
const NAME = /^[\p{L}\p{M}][\p{L}\p{M} '.-]*$/u;
// "In English": Latin script, digits, spaces and ordinary address punctuation.
const LATIN_TEXT = /^[\p{Script=Latin}\p{M}0-9][\p{Script=Latin}\p{M}0-9 ,.'/#&()-]*$/u;

function text(field: string, value: string, max: number, pattern: RegExp, rule: string, form: 'NFC' | 'NFKC' = 'NFC'): string {
  // Normalised so that one name has one representation (composed accents; for addresses also
  // full-width and compatibility forms folded to their plain letters).
  const v = value.normalize(form).trim().replace(/\s+/g, ' ');
  if (v === '') throw invalid(field, 'must not be empty');
  if ([...v].length > max) throw invalid(field, `must be at most ${max} characters`);
  if (!pattern.test(v)) throw invalid(field, rule);
  return v;
}

/** The document number as the one-holder-per-document rule compares it (before its keyed hash). */
export const idnoKey = normaliseIdno;

/**
 * Creates one of the merchant's cardholders (interface 4.2), pending review. Issue 31: on PostgreSQL
 * BEGIN, one statement with the key's claim and the duplicate check, one with the holder and the
 * stored answer, COMMIT (src/db/one-statement.ts). On SQLite, where no round trip is saved, the key
 * is claimed first and the answer stored by the runner, with their precompiled statements.
 */
export const createHolder = claimsItsKey(async function createHolder({
  ctx,
  input,
}: {
  ctx: MerchantCtx;
  input: CreateHolderInput;
}): Promise<HolderRecord> {
  const { merchantId } = ctx;
  // Seals the identity data and hashes its lookups (src/holders/identity.ts).
  const keys: IdentityKeys = ctx.svc;
  const firstName = text('firstName', input.firstName, 50, NAME, 'must contain only letters, spaces, apostrophes, dots and hyphens');
  const lastName =
    input.lastName === undefined || input.lastName.trim() === ''
      ? ''
      : text('lastName', input.lastName, 50, NAME, 'must contain only letters, spaces, apostrophes, dots and hyphens');
  const inEnglish = 'must be written in English (Latin letters, digits, spaces, punctuation)';
  const town = text('town', input.town, 64, LATIN_TEXT, inEnglish, 'NFKC');
  const address = text('address', input.address, 200, LATIN_TEXT, inEnglish, 'NFKC');

  const dob = parseDate(input.dateOfBirth);
  if (!dob) throw invalid('dateOfBirth', 'must be a real date written yyyy-MM-dd');
  const today = new Date(ctx.now).toISOString().slice(0, 10);
  if (input.dateOfBirth >= today) throw invalid('dateOfBirth', 'must be in the past');
  if (input.dateOfBirth < '1900-01-01') throw invalid('dateOfBirth', 'must not be before 1900-01-01');

  if (!ISO_COUNTRIES.has(input.nationality)) throw invalid('nationality', 'must be an ISO 3166-1 alpha-2 country code, e.g. DE');
  if (!EUROPEAN_COUNTRIES.has(input.countryCode)) {
    throw invalid('countryCode', 'must be the two-letter code of a European country, e.g. FR');
  }
  if (input.idnoType === 1 && !EUROPEAN_COUNTRIES.has(input.nationality)) {
    throw invalid('idnoType', 'must be 2 (passport): a European ID card (1) is only accepted for a European nationality');
  }

  const key = await documentHash(keys.vault, ctx.tx, input.idno);
  const clashing = ctx.tx
    .selectFrom('cardholders')
    .select('id')
    .where('merchant_id', '=', merchantId)
    .where('idno_type', '=', input.idnoType)
    .where('idno_key', '=', key)
    // A literal, not a parameter: the statement is prepared, and a generic plan can use the partial
    // unique index (where audit_status <> 3) only if it sees the 3 (a parameter meant a scan of every
    // cardholder: measured 403 → 296 cardholders/s on PostgreSQL).
    .where('audit_status', '<>', sql.lit(AuditStatus.rejected))
    .limit(1);
  // PostgreSQL: the key's claim in the same statement (issue 31). SQLite: the key claimed first and the
  // answer stored by the runner, with their precompiled statements (no round trip to save there).
  const once = hasRowLocks(ctx.tx as Kysely<unknown>) ? ctx.once : undefined;
  if (!once) await ctx.once?.claim(ctx.tx);
  const first = await runParts(ctx.tx, [...(once ? [once.claimPart(ctx.tx)] : []), { name: 'clash', rows: true, query: clashing }]);
  once?.check(first);
  const [clash] = first.clash ?? [];
  if (clash) throw new DomainError('holderDuplicateId', `A cardholder with this idnoType and idno already exists: ${String(clash.id)}`);

  const id = newId('hld');
  const identity: HolderIdentity = {
    idno: input.idno.trim(),
    dateOfBirth: input.dateOfBirth,
    address,
    town,
    postCode: input.postCode.trim().toUpperCase(),
    mobile: input.mobile,
    email: input.email.toLowerCase(),
  };
  const row = {
    id,
    merchant_id: merchantId,
    first_name: firstName,
    last_name: lastName,
    nationality: input.nationality,
    sex: input.sex,
    country_code: input.countryCode,
    idno_type: input.idnoType,
    ...(await identityColumns(keys, ctx.tx, id, identity)),
    audit_status: AuditStatus.pending,
    err_msg: '',
    created_at: ctx.now,
    updated_at: ctx.now,
    controls: null,
  };
  const record = holderRecord(keys.box, row);
  try {
    await runParts(ctx.tx, [
      { name: 'holder', query: ctx.tx.insertInto('cardholders').values(row) },
      ...(once ? [once.answerPart(ctx.tx, record)] : []),
    ]);
  } catch (err) {
    // Two different requests racing with one document: the constraint decides, the loser gets 2611.
    if (isUniqueViolation(err)) throw new DomainError('holderDuplicateId');
    throw err;
  }
  return record;
});
