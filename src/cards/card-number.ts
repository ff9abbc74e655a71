import { randomInt } from 'node:crypto';

/** A card number's digits: the Luhn check, a new number in a BIN's range, the masked form. */

/** Luhn check digit for the digits given. */
export function luhnCheckDigit(payload: string): number {
  let sum = 0;
  for (let i = 0; i < payload.length; i++) {
    let d = Number(payload[payload.length - 1 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return (10 - (sum % 10)) % 10;
}

export function isLuhnValid(pan: string): boolean {
  return /^\d{12,19}$/.test(pan) && luhnCheckDigit(pan.slice(0, -1)) === Number(pan.at(-1));
}

/** A random 16-digit PAN in the BIN's range, Luhn-valid. */
export function generatePan(bin: string): string {
  let body = bin;
  while (body.length < 15) body += String(randomInt(10));
  return body + String(luhnCheckDigit(body));
}

/** First 6 and last 4 digits, the middle replaced by `*` (interface 4.1 rule 3). */
export function maskPan(first6: string, last4: string, length: number): string {
  return `${first6}${'*'.repeat(length - 10)}${last4}`;
}
