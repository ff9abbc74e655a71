import { Type } from 'typebox';
import { DomainError } from '../errors.js';
import { signingString } from './signing.js';

/**
 * What a sandbox 1006 answers besides the bare message, as test-mode APIs do: the string the
 * service computed and the fields in it, so a merchant sees its real mistake (an empty field
 * dropped, a field it forgot, different escaping) instead of guessing. Never the secret, and only
 * in the sandbox: in production a signature failure tells nothing about what would have verified.
 */
export const SignatureDetailSchema = Type.Object(
  {
    signingString: Type.String({
      description: 'the string the service signed from this body (cardNo masked to its last 4 digits)',
    }),
    signedFields: Type.Array(Type.String(), { description: 'the fields in it, in order' }),
    unsignedFields: Type.Array(Type.String(), { description: 'fields sent but not signed: sign itself, and null or empty values' }),
    signType: Type.String({ description: "the merchant's signing method: HMAC-SHA256 or RSA-SHA256" }),
  },
  { description: 'sandbox only, on a 1006: what the service signed (never the secret); absent in production' },
);

/** A card number is never returned whole, not even echoed back from the request (cardNo carries one). */
function maskCardNo(body: Record<string, unknown>): Record<string, unknown> {
  const pan = body.cardNo;
  if (typeof pan !== 'string' || pan.length <= 4) return body;
  return { ...body, cardNo: `${'*'.repeat(pan.length - 4)}${pan.slice(-4)}` };
}

export function signatureError(body: Record<string, unknown>, signType: string, explain: boolean): DomainError {
  const err = new DomainError('signature');
  if (!explain) return err;
  // Which fields are in the string is decided by signingString itself, one field at a time, so
  // this can never disagree with what was verified.
  const keys = Object.keys(body);
  const signedFields = keys.filter((k) => k !== 'sign' && signingString({ [k]: body[k] }) !== '').sort();
  err.detail = {
    signingString: signingString(maskCardNo(body)),
    signedFields,
    unsignedFields: keys.filter((k) => !signedFields.includes(k)).sort(),
    signType,
  };
  return err;
}
