import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import type { VerbCtx } from '../context.js';
import { newId } from '../db/ids.js';
import type { DB } from '../db/schema.js';
import { DomainError, invalid } from '../errors.js';
import { CARD_CURRENCIES, isCardCurrency, toMajor, toMinor } from '../money/currency.js';
import { Account, moveMerchantFunding, postEntry } from './journal.js';
import type { FundingBalanceSchema } from './schemas.js';

/** What the merchant can still put on its cards in one currency, in major units. */
export type FundingBalance = Static<typeof FundingBalanceSchema>;

export interface FundingCredit {
  creditId: string;
  appId: string;
  currency: string;
  /** Major units; negative for a debit. */
  amount: number;
  /** The funding balance after it, in major units. */
  balance: number;
  reference: string;
  actor: string;
  createdAt: string;
}

export interface FundMerchantInput {
  appId: string;
  currency: string;
  /** A signed decimal amount as text: the CLI's argument. */
  amount: string;
  reference: string;
}

/** A signed decimal amount as text (the CLI's), to minor units; zero is refused. */
export function parseSignedAmount(text: string, currency: string): number {
  if (!/^-?\d+(\.\d+)?$/.test(text)) throw invalid('amount', 'must be a decimal number such as 1000.00 or -50');
  const minor = toMinor(Number(text.replace(/^-/, '')), currency);
  return text.startsWith('-') ? -minor : minor;
}

/**
 * The operator credits (or, with a negative amount, debits) a merchant's funding account: one
 * journal entry from the program's capital account, the balance row in the same transaction, and a
 * record of who did it (`ctx.actor`), when and why. A debit may take the balance down to zero, not
 * below (2726).
 */
export async function fundMerchant({ ctx, input }: { ctx: VerbCtx; input: FundMerchantInput }): Promise<FundingCredit> {
  const { tx, now } = ctx;
  const merchant = await tx.selectFrom('merchants').select('id').where('id', '=', input.appId).executeTakeFirst();
  if (!merchant) throw new DomainError('merchantNotFound', `appId: no merchant ${input.appId}`);
  if (!isCardCurrency(input.currency)) throw new DomainError('unsupportedCurrency', 'currency: must be EUR or USDT');
  const amount = parseSignedAmount(input.amount, input.currency);
  const reference = input.reference.trim();
  if (!reference || reference.length > 200 || /\p{Cc}/u.test(reference)) {
    throw invalid('reference', 'must be 1 to 200 characters of text saying what the money is (a transfer reference, a contract)');
  }
  const actor = ctx.actor.trim().slice(0, 64) || 'unknown';
  await moveMerchantFunding(tx, merchant.id, input.currency, amount, now);
  const entryId = await postEntry(tx, {
    tradeId: null,
    currency: input.currency,
    now,
    legs: [
      { account: Account.capital, amount: -amount },
      { account: Account.merchantFunding(merchant.id), amount },
    ],
  });
  const creditId = newId('fnd');
  await tx
    .insertInto('funding_credits')
    .values({
      id: creditId,
      merchant_id: merchant.id,
      currency: input.currency,
      amount,
      actor,
      reference,
      entry_id: entryId ?? '',
      created_at: now,
    })
    .execute();
  const [balance] = await fundingBalances(tx, merchant.id, input.currency);
  return {
    creditId,
    appId: merchant.id,
    currency: input.currency,
    amount: toMajor(amount, input.currency),
    balance: balance?.available ?? 0,
    reference,
    actor,
    createdAt: new Date(now).toISOString(),
  };
}

/** A merchant's funding balances: every card currency, or the one asked for (2720 for another). */
export async function fundingBalances(db: Kysely<DB>, merchantId: string, currency?: string): Promise<FundingBalance[]> {
  if (currency !== undefined && !isCardCurrency(currency)) throw new DomainError('unsupportedCurrency', 'currency: must be EUR or USDT');
  const rows = await db.selectFrom('merchant_balances').select(['currency', 'available']).where('merchant_id', '=', merchantId).execute();
  const held = new Map(rows.map((r) => [r.currency, r.available]));
  return (currency === undefined ? [...CARD_CURRENCIES] : [currency]).map((c) => ({
    currency: c,
    available: toMajor(held.get(c) ?? 0, c),
  }));
}
