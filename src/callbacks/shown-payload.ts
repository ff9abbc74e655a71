/**
 * A callback's payload as an operator's tools show it (`cardprogram callbacks list --json`, the
 * console's callback page): what the merchant was sent, less what an operator's screen or a shell's
 * history should not hold (issue 43.15).
 *
 * - One-time codes and secrets, wherever they are: a field named `code` (the OTP of a 3-D Secure or
 *   wallet-token event), `otp`, `secret`, `password`, `passcode`, `cvv`, `cvv2`, `cvc`, `pin`.
 * - Anything shaped like a full card number (13 to 19 digits, spaced or not), in any text: no
 *   payload carries one (card numbers go out masked), but one must never be shown if it did.
 * - A `kyc.result`'s e-mail: sealed at rest, it is read on the KYC request's page, where the
 *   opening is recorded.
 */

const SECRET_FIELDS = new Set(['code', 'otp', 'secret', 'password', 'passcode', 'cvv', 'cvv2', 'cvc', 'pin']);

/** Where a field with a secret's name is not one: a declined authorization's reason code (2725 …, docs/callbacks.md). */
const PUBLIC_FIELDS = new Set(['authorization.decision.code']);

export const REDACTED = '[redacted]';
export const SEALED_EMAIL = '[sealed: see the KYC request]';

/** 13 to 19 digits in a row, or as written on a card: 4-4-4-4(+3) or 4-6-5, split by spaces or hyphens (not a date's 4-2-2). */
const CARD_NUMBER = /\b(?:\d{13,19}|\d{4}(?:[ -]\d{4}){2}[ -]\d{1,7}|\d{4}[ -]\d{6}[ -]\d{4,5})\b/g;

/** Card numbers in a text masked as the service writes them: the first six and the last four digits. */
export function maskCardNumbers(text: string): string {
  return text.replace(CARD_NUMBER, (shape) => {
    const digits = shape.replace(/\D/g, '');
    return `${digits.slice(0, 6)}${'*'.repeat(digits.length - 10)}${digits.slice(-4)}`;
  });
}

function redact(value: unknown, path: string): unknown {
  if (typeof value === 'string') return maskCardNumbers(value);
  if (Array.isArray(value)) return value.map((v) => redact(v, path));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => {
      const at = path ? `${path}.${key}` : key;
      return [key, SECRET_FIELDS.has(key.toLowerCase()) && !PUBLIC_FIELDS.has(at) && v !== null ? REDACTED : redact(v, at)];
    }),
  );
}

/** A stored payload (opened when sealed) as shown: parsed and redacted; text that is not JSON, masked. */
export function shownPayload(payload: string): unknown {
  let body: unknown;
  try {
    body = JSON.parse(payload);
  } catch {
    return maskCardNumbers(payload);
  }
  const shown = redact(body, '');
  if (shown && typeof shown === 'object' && !Array.isArray(shown) && typeof (shown as Record<string, unknown>).email === 'string') {
    return { ...shown, email: SEALED_EMAIL };
  }
  return shown;
}
