/**
 * Field 54, additional amounts (ISO 8583:1987): one amount of 20 characters, as a balance
 * inquiry's answer carries the card's available balance (docs/network.md, field 54).
 */

/** Field 54's balance: account type 00, amount type 02 (available), currency n3, sign (C or D), amount n12 in minor units. */
export function balanceField(minor: number, currencyCode: string): string {
  return `0002${currencyCode}${minor < 0 ? 'D' : 'C'}${String(Math.abs(minor)).padStart(12, '0')}`;
}
