import { Type } from 'typebox';
import { CARD_CURRENCY_RULE } from '../money/currency.js';

/**
 * Field rules that more than one operation uses, each written once: the pattern (or length) here,
 * the sentence that states it from the caller. The description is the error message of a bad value
 * (src/http/errors.ts quotes it after the field's name) and the OpenAPI text, so it stays each
 * operation's own where the operations word it differently.
 */

/** A calendar date, `yyyy-MM-dd`; whether the day exists is checked by parseDate (src/dates.ts). */
export const DateText = (description: string) => Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description });

/**
 * An e-mail address: a dot-atom local part, then a host name of labels of at most 63 characters
 * (no IP literals, no quoted local parts: neither is a merchant's cardholder).
 */
export const EMAIL_PATTERN =
  "^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$";

export const Email = (opts: { maxLength: number; description: string; optionalEmpty?: boolean }) =>
  Type.String({
    maxLength: opts.maxLength,
    pattern: opts.optionalEmpty ? `^$|${EMAIL_PATTERN}` : EMAIL_PATTERN,
    description: opts.description,
  });

/** A two-letter code in capitals (ISO 3166-1 alpha-2); whether it is one is checked by the verb. */
export const CountryCode = (description: string) => Type.String({ pattern: '^[A-Z]{2}$', description });

/** A postal code: 2 to 12 letters, digits, spaces or hyphens, starting with a letter or digit. */
export const PostCode = Type.String({
  pattern: '^[A-Za-z0-9][A-Za-z0-9 -]{1,11}$',
  description: 'must be 2 to 12 letters, digits, spaces or hyphens',
});

/** An identity document's number: 3 to 40 letters, digits, spaces or hyphens. */
export const DocumentNumber = (description: string) => Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9 -]{2,39}$', description });

/**
 * An identifier the service issued (cardId, holderId, tradeId, requestNo): at most 64 characters.
 * `minLength` 0 where "" counts as not sent (the transaction list's filters).
 */
export const Id = (name: string, minLength: 0 | 1 = 1) =>
  Type.String({ ...(minLength ? { minLength } : {}), maxLength: 64, description: `must be a ${name}` });

export const CardId = Id('cardId');
export const HolderId = Id('holderId');
export const TradeId = Id('tradeId');

/** Any currency code, e.g. a transaction's own currency (currencyTxn). */
export const CurrencyCode = Type.String({ minLength: 1, maxLength: 8, description: 'must be a currency code, e.g. EUR' });

/**
 * A card currency as a filter: one of CARD_CURRENCIES (CARD_CURRENCY_RULE), checked by the verb (an unknown one is a
 * result code, not a schema error). `absent` says what leaving it out means.
 */
export const CardCurrencyFilter = (absent?: string) =>
  Type.String({ maxLength: 8, description: `${CARD_CURRENCY_RULE}${absent ? `; absent: ${absent}` : ''}` });

/** Free text that is at most `max` characters (a remark, a reviewer's reason). */
export const ShortText = (max: number) => Type.String({ maxLength: max, description: `must be at most ${max} characters` });
