/**
 * The card network link's response codes (field 39) in words: one table for the simulator
 * (`cardprogram network send`), the clearing file's report and the console's link panel.
 */

/** The meaning of each response code (decisions §12.5). */
export const RESPONSE_CODES: Readonly<Record<string, string>> = {
  '00': 'approved',
  '05': 'do not honor',
  '12': 'invalid transaction',
  '13': 'invalid amount',
  '14': 'no such card',
  '25': 'original not found',
  '30': 'format error',
  '51': 'insufficient funds',
  '54': 'expired card (or expiry mismatch)',
  '57': 'not permitted to the cardholder',
  '61': 'exceeds an amount limit',
  '62': 'restricted card',
  '78': 'card closed',
  '82': 'CVV2 mismatch',
  '91': 'the service could not decide in time',
  '94': 'duplicate',
  '96': 'system error',
};

export const codeMeaning = (code: string | undefined): string =>
  code === undefined ? 'no response code' : (RESPONSE_CODES[code] ?? 'unknown response code');
