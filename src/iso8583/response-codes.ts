/**
 * The card network link's response codes (field 39, decisions §12.5): one table, each code named
 * once, with its meaning in words. The link's verbs answer by these names; the simulator
 * (`cardprogram network send`), the clearing file's report and the console's link panel read the
 * meanings.
 */

/** Each response code the link answers, by name. */
export const ResponseCode = {
  approved: '00',
  doNotHonor: '05',
  invalidTransaction: '12',
  invalidAmount: '13',
  noSuchCard: '14',
  originalNotFound: '25',
  formatError: '30',
  insufficientFunds: '51',
  expiredCard: '54',
  notPermitted: '57',
  exceedsAmountLimit: '61',
  restrictedCard: '62',
  cardClosed: '78',
  cvv2Mismatch: '82',
  notInTime: '91',
  duplicate: '94',
  systemError: '96',
  /** Additional customer authentication required (decisions §14.5): no meaning in words below yet. */
  authenticationRequired: '1A',
} as const;

const C = ResponseCode;

/** The meaning of each response code (decisions §12.5). */
export const RESPONSE_CODES: Readonly<Record<string, string>> = {
  [C.approved]: 'approved',
  [C.doNotHonor]: 'do not honor',
  [C.invalidTransaction]: 'invalid transaction',
  [C.invalidAmount]: 'invalid amount',
  [C.noSuchCard]: 'no such card',
  [C.originalNotFound]: 'original not found',
  [C.formatError]: 'format error',
  [C.insufficientFunds]: 'insufficient funds',
  [C.expiredCard]: 'expired card (or expiry mismatch)',
  [C.notPermitted]: 'not permitted to the cardholder',
  [C.exceedsAmountLimit]: 'exceeds an amount limit',
  [C.restrictedCard]: 'restricted card',
  [C.cardClosed]: 'card closed',
  [C.cvv2Mismatch]: 'CVV2 mismatch',
  [C.notInTime]: 'the service could not decide in time',
  [C.duplicate]: 'duplicate',
  [C.systemError]: 'system error',
  [C.authenticationRequired]: 'additional customer authentication required (3-D Secure)',
};

export const codeMeaning = (code: string | undefined): string =>
  code === undefined ? 'no response code' : (RESPONSE_CODES[code] ?? 'unknown response code');
