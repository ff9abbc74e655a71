/** The card schemes this ACS answers for, by the first digits of the card number (decisions §14.3). */
export type Brand = 'visa' | 'mastercard';

/** A card number's (or BIN's) scheme: 4… Visa; 51–55 and 2221–2720 Mastercard; else none known. */
export function brandOf(pan: string): Brand | null {
  if (pan.startsWith('4')) return 'visa';
  const two = Number(pan.slice(0, 2));
  const four = Number(pan.slice(0, 4));
  if ((two >= 51 && two <= 55) || (four >= 2221 && four <= 2720)) return 'mastercard';
  return null;
}

/** The electronic commerce indicator of an outcome: Visa 05 authenticated, 07 not; Mastercard 02 and 00; null for another scheme. */
export function eciFor(brand: Brand | null, authenticated: boolean): string | null {
  if (brand === 'visa') return authenticated ? '05' : '07';
  if (brand === 'mastercard') return authenticated ? '02' : '00';
  return null;
}
