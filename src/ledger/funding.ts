import { type Kysely, type Selectable, sql } from 'kysely';
import type { Static } from 'typebox';
import type { VerbCtx } from '../context.js';
import { newId } from '../db/ids.js';
import type { DB, FundingCreditsTable } from '../db/schema.js';
import { DomainError, invalid } from '../errors.js';
import { CARD_CURRENCIES, exponent, isCardCurrency, toMajor, toMinor } from '../money/currency.js';
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
  /**
   * `credited`: this call moved the money. `replayed`: its idempotency key was already used, the
   * record is that first credit's and nothing moved. `refused`: a credit of the same amount and
   * reference was made within 24 h (the record is that one's) and `again` was not given; nothing moved.
   */
  outcome: 'credited' | 'replayed' | 'refused';
}

/** How long a credit of the same merchant, currency, amount and reference counts as a repeat. */
export const REPEAT_WINDOW_MS = 24 * 3_600_000;

export interface FundMerchantInput {
  appId: string;
  currency: string;
  /** A signed decimal amount as text: the CLI's argument. */
  amount: string;
  reference: string;
  /**
   * One credit per key and merchant: the console form's one-time token, the CLI's
   * `--idempotency-key`. A second call with the key answers the first credit (`replayed`).
   */
  idempotencyKey?: string | undefined;
  /**
   * Refuse a credit of the same merchant, currency, amount and reference as one in the last 24 h
   * (`refused`, naming that credit). The CLI asks for it unless `--again` is given; the console's
   * form does not need it (its one-time token tells a double post from a second transfer).
   */
  refuseRepeat?: boolean | undefined;
}

/**
 * A signed decimal amount as text (the CLI's, the console's), to minor units; zero is refused, and so
 * are more decimals than the currency has (`100.0000000000000001` EUR), as the API refuses them:
 * never rounded. The digits are checked as written, before any conversion to a number.
 */
export function parseSignedAmount(text: string, currency: string): number {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!m) throw invalid('amount', 'must be a decimal number such as 1000.00 or -50');
  const decimals = (m[3] ?? '').replace(/0+$/, '');
  const exp = exponent(currency);
  if (decimals.length > exp) {
    throw new DomainError('incorrectAmount', `amount: ${currency} has at most ${exp} decimal place${exp === 1 ? '' : 's'}`);
  }
  const minor = toMinor(Number(`${m[2]}${decimals ? `.${decimals}` : ''}`), currency);
  return m[1] === '-' ? -minor : minor;
}

const KEY_RULE = 'must be 1 to 80 characters: letters, digits, and . _ : -';

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
  const key = input.idempotencyKey;
  if (key !== undefined && !/^[A-Za-z0-9._:-]{1,80}$/.test(key)) throw invalid('idempotencyKey', KEY_RULE);
  const actor = ctx.actor.trim().slice(0, 64) || 'unknown';
  // The key is unique per merchant, whatever the currency: two credits with one key run one after
  // the other even in two currencies (the balance rows below are per currency, and a form's token
  // posted at once for EUR and USDT raced to the unique index, a 500). SQLite serialises every
  // write transaction; PostgreSQL takes an advisory lock on (merchant, key), before the balance row.
  if (key !== undefined && ctx.svc.database.dialect === 'postgres') {
    await sql`select pg_advisory_xact_lock(hashtext(${`funding-credit:${merchant.id}:${key}`}))`.execute(tx);
  }
  // The merchant's balance row in this currency, locked first (created at 0 if new): two credits
  // of one account run one after the other, so the checks below see every credit committed before.
  await lockFundingRow(tx, merchant.id, input.currency, now);
  if (key !== undefined) {
    const first = await tx
      .selectFrom('funding_credits')
      .selectAll()
      .where('merchant_id', '=', merchant.id)
      .where('idempotency_key', '=', key)
      .executeTakeFirst();
    if (first) {
      if (first.currency !== input.currency || first.amount !== amount || first.reference !== reference) {
        throw new DomainError('duplicateRequest', `idempotencyKey: already used for another credit (${first.id}: ${describe(first)})`);
      }
      return creditRecord(tx, first, 'replayed');
    }
  }
  if (input.refuseRepeat) {
    const repeat = await tx
      .selectFrom('funding_credits')
      .selectAll()
      .where('merchant_id', '=', merchant.id)
      .where('currency', '=', input.currency)
      .where('created_at', '>', now - REPEAT_WINDOW_MS)
      .where('amount', '=', amount)
      .where('reference', '=', reference)
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
    if (repeat) return creditRecord(tx, repeat, 'refused');
  }
  const creditId = newId('fnd');
  await moveMerchantFunding(tx, merchant.id, input.currency, amount, now, {
    kind: amount > 0 ? 'credit' : 'debit',
    reference,
    creditId,
  });
  const entryId = await postEntry(tx, {
    tradeId: null,
    currency: input.currency,
    now,
    legs: [
      { account: Account.capital, amount: -amount },
      { account: Account.merchantFunding(merchant.id), amount },
    ],
  });
  const row = {
    id: creditId,
    merchant_id: merchant.id,
    currency: input.currency,
    amount,
    actor,
    reference,
    entry_id: entryId ?? '',
    created_at: now,
    idempotency_key: key ?? null,
  };
  await tx.insertInto('funding_credits').values(row).execute();
  return creditRecord(tx, row, 'credited');
}

type CreditRow = Selectable<FundingCreditsTable>;

function describe(c: CreditRow): string {
  return `${toMajor(c.amount, c.currency)} ${c.currency}, "${c.reference}", by ${c.actor} at ${new Date(c.created_at).toISOString()}`;
}

/** The operator's message for a refused repeat: which credit it would repeat, and how to credit anyway. */
export function repeatRefusal(c: FundingCredit): string {
  return `refused: this would repeat ${c.creditId} (${c.amount} ${c.currency}, "${c.reference}", by ${c.actor} at ${c.createdAt}) of the last 24 hours; give --again to credit it a second time, or --idempotency-key to name one transfer`;
}

async function creditRecord(tx: Kysely<DB>, c: CreditRow, outcome: FundingCredit['outcome']): Promise<FundingCredit> {
  const [balance] = await fundingBalances(tx, c.merchant_id, c.currency);
  return {
    creditId: c.id,
    appId: c.merchant_id,
    currency: c.currency,
    amount: toMajor(c.amount, c.currency),
    balance: balance?.available ?? 0,
    reference: c.reference,
    actor: c.actor,
    createdAt: new Date(c.created_at).toISOString(),
    outcome,
  };
}

/** Locks a merchant's balance row in one currency, creating it at zero on first use. */
async function lockFundingRow(tx: Kysely<DB>, merchantId: string, currency: string, now: number): Promise<void> {
  await tx
    .insertInto('merchant_balances')
    .values({ merchant_id: merchantId, currency, available: 0, updated_at: now })
    .onConflict((oc) => oc.columns(['merchant_id', 'currency']).doUpdateSet({ updated_at: sql<number>`merchant_balances.updated_at` }))
    .execute();
}

/** A merchant's funding balances, each with its cards' debt (decisions §12.13): every card currency, or the one asked for (2720 for another). */
export async function fundingBalances(db: Kysely<DB>, merchantId: string, currency?: string): Promise<FundingBalance[]> {
  if (currency !== undefined && !isCardCurrency(currency)) throw new DomainError('unsupportedCurrency', 'currency: must be EUR or USDT');
  const rows = await db.selectFrom('merchant_balances').select(['currency', 'available']).where('merchant_id', '=', merchantId).execute();
  const held = new Map(rows.map((r) => [r.currency, r.available]));
  // The cards in debt only: the predicate of the partial index cards_in_debt (migration 0024) word for
  // word, a literal, so SQLite uses it.
  const debts = await db
    .selectFrom('cards')
    .select(['currency', (eb) => eb.fn.sum<number>('debt').as('debt')])
    .where('merchant_id', '=', merchantId)
    .where(sql<boolean>`debt > 0`)
    .groupBy('currency')
    .execute();
  const owed = new Map(debts.map((r) => [r.currency, Number(r.debt ?? 0)]));
  return (currency === undefined ? [...CARD_CURRENCIES] : [currency]).map((c) => ({
    currency: c,
    available: toMajor(held.get(c) ?? 0, c),
    cardDebt: toMajor(owed.get(c) ?? 0, c),
  }));
}
