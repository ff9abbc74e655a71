import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import type { Static } from 'typebox';
import { checkCallbackUrl } from '../callbacks/url-guard.js';
import { canonicalJson } from '../canonical-json.js';
import { ISO_COUNTRIES } from '../codes/countries.js';
import { KYC_SEALED_FIELDS } from '../codes/sealed-fields.js';
import type { MerchantCtx } from '../context.js';
import { parseDate } from '../dates.js';
import { newId } from '../db/ids.js';
import { DomainError, invalid } from '../errors.js';
import { checkName, idnoKey } from '../holders/create.js';
import { emailHash } from '../holders/identity.js';
import type { OperationInput } from '../operation-input.js';
import { kycEmailColumns } from './email.js';
import type { KycAddress, KycShareBody } from './schemas.js';

/** A KYC request's address, as its schema says. */
export type KycAddressInput = Static<typeof KycAddress>;

/** What kycShare's verb is given: its body (KycShareBody) without the signed envelope. */
export type KycShareInput = OperationInput<Static<typeof KycShareBody>>;

/** The personal data kept (sealed) with a KYC request, normalised. */
export interface KycData {
  firstName: string;
  lastName: string;
  dob: string;
  country: string;
  gender: 1 | 2;
  idDocType: 1 | 2 | 3 | 4;
  number: string;
  validUntil: string;
  ipAddress: string;
  address: KycAddressInput;
}

// A KYC request's sealed fields (src/codes/sealed-fields.ts) are its own: one that is not does not compile.
const sealedHere: readonly (keyof KycData | keyof KycAddressInput)[] = KYC_SEALED_FIELDS;
void sealedHere;

function checkAddress(prefix: string, a: KycAddressInput): KycAddressInput {
  if (!ISO_COUNTRIES.has(a.country)) throw invalid(`${prefix}.country`, 'must be an ISO 3166-1 alpha-2 country code');
  if (a.country === 'US' && !a.ssn) throw invalid(`${prefix}.ssn`, 'is required when the country is US');
  // A social security number is collected only where it is needed.
  if (a.country !== 'US' && a.ssn) throw invalid(`${prefix}.ssn`, 'must be sent only when the country is US');
  return {
    ...a,
    state: a.state.trim(),
    city: a.city.trim(),
    address: a.address.trim(),
    zipCode: a.zipCode.trim().toUpperCase(),
    ...(a.ssn ? { ssn: a.ssn.replace(/-/g, '') } : {}),
  };
}

/** Every rule of interface 4.3 beyond the schema's shapes; returns the normalised data. */
export function validateKyc(input: KycShareInput, now: number, platforms: readonly string[]): KycData {
  if (!platforms.includes(input.kycPlatform)) throw invalid('kycPlatform', `must be one of ${platforms.join(', ')}`);
  const info = input.individualInfo;
  if (info.address && input.address) throw invalid('address', 'send it once: inside individualInfo or beside it, not both');
  const rawAddress = info.address ?? input.address;
  if (!rawAddress) throw invalid('individualInfo.address', 'is required');
  const address = checkAddress(info.address ? 'individualInfo.address' : 'address', rawAddress);
  const today = new Date(now).toISOString().slice(0, 10);
  if (!parseDate(info.dob)) throw invalid('individualInfo.dob', 'must be a real date written YYYY-MM-DD');
  if (info.dob >= today) throw invalid('individualInfo.dob', 'must be in the past');
  if (info.dob < '1900-01-01') throw invalid('individualInfo.dob', 'must not be before 1900-01-01');
  if (!parseDate(info.validUntil)) throw invalid('individualInfo.validUntil', 'must be a real date written YYYY-MM-DD');
  if (info.validUntil < today) throw invalid('individualInfo.validUntil', 'must not be in the past (the document has expired)');
  if (!ISO_COUNTRIES.has(info.country)) throw invalid('individualInfo.country', 'must be an ISO 3166-1 alpha-2 country code');
  if (isIP(info.ipAddress) === 0) throw invalid('individualInfo.ipAddress', 'must be an IPv4 or IPv6 address');
  return {
    firstName: checkName('individualInfo.firstName', info.firstName),
    lastName: checkName('individualInfo.lastName', info.lastName),
    dob: info.dob,
    country: info.country,
    gender: Number(info.gender) as 1 | 2,
    idDocType: Number(info.idDocType) as 1 | 2 | 3 | 4,
    number: info.number.trim(),
    validUntil: info.validUntil,
    ipAddress: info.ipAddress,
    address,
  };
}

/**
 * What makes two share requests "the same" for requestNo's idempotency: the request's fields, as
 * canonical JSON with its merchant (what a signed body holds besides sign and timestamp).
 */
export function kycFingerprint(merchantId: string, input: KycShareInput): string {
  return createHash('sha256')
    .update(`kycShare\n${canonicalJson({ appId: merchantId, ...input })}`)
    .digest('hex');
}

async function answerExisting(ctx: MerchantCtx, input: KycShareInput, fingerprint: string): Promise<'replay' | null> {
  // One read for both rules, so a concurrent twin is seen the same way by each. The e-mail is
  // compared by its keyed hash (it is stored sealed: kyc/email.ts).
  const hash = await emailHash(ctx.svc.vault, ctx.tx, input.email);
  const rows = await ctx.tx
    .selectFrom('kyc_requests')
    .select(['request_no', 'fingerprint'])
    .where('merchant_id', '=', ctx.merchantId)
    .where((eb) => eb.or([eb('request_no', '=', input.requestNo), eb('email_hash', '=', hash)]))
    .execute();
  const same = rows.find((r) => r.request_no === input.requestNo);
  if (same) {
    if (same.fingerprint === fingerprint) return 'replay';
    throw new DomainError('duplicateRequest', 'requestNo: already used for a different request');
  }
  if (rows.length > 0) throw new DomainError('kycEmailUsed');
  return null;
}

/**
 * Accepts a KYC share request (interface 4.3). `requestNo` is its idempotency key for ever: the same
 * request again answers as the first time, another request with it is 1008. An e-mail already used
 * by another of the merchant's requests is 2610. Returns true when this call created the request.
 */
export async function submitKyc({ ctx, input }: { ctx: MerchantCtx; input: KycShareInput }): Promise<boolean> {
  const { svc, merchantId, now } = ctx;
  const fingerprint = kycFingerprint(merchantId, input);
  if ((await answerExisting(ctx, input, fingerprint)) === 'replay') return false;
  const data = validateKyc(input, now, svc.config.kyc.platforms);
  const callbackUrl = checkCallbackUrl('callbackUrl', input.callbackUrl, svc.config.env);
  const id = newId('kyc');
  const inserted = await ctx.tx
    .insertInto('kyc_requests')
    .values({
      id,
      merchant_id: merchantId,
      request_no: input.requestNo,
      ...(await kycEmailColumns(svc, ctx.tx, id, input.email)),
      fingerprint,
      platform: input.kycPlatform,
      callback_url: callbackUrl,
      data_enc: svc.box.seal(JSON.stringify(data), `kyc:${id}`),
      status: 'init',
      reason: '',
      holder_id: null,
      // The sandbox's automatic reviewer picks it up at once (decisions §2).
      auto_decide_at: svc.config.kyc.autoDecisionMs > 0 ? now : null,
      created_at: now,
      updated_at: now,
    })
    // A concurrent request with the same requestNo or e-mail won the race (the insert waited for its
    // commit): answer as it decides. Nothing is inserted, and the transaction stays usable.
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) {
    if ((await answerExisting(ctx, input, fingerprint)) === 'replay') return false;
    throw new DomainError('duplicateRequest', 'requestNo: already used');
  }
  // The sandbox's reviewer is a job of the worker: it takes the request into review on its next pass.
  if (svc.config.kyc.autoDecisionMs > 0) ctx.wake.worker = true;
  return true;
}

export function documentKey(data: KycData): string {
  return idnoKey(data.number);
}
