import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { isCardCurrency, toMajor } from '../money/currency.js';
import type { FundingMovementSchema, MerchantFundingListModel } from './schemas.js';

/** One line of a merchant's funding statement (docs/funding.md, "The statement"). */
export type FundingStatementLine = Static<typeof FundingMovementSchema>;
export type FundingStatementPage = Static<typeof MerchantFundingListModel>;

export const STATEMENT_PAGE = 50;

/**
 * A page of a merchant's funding statement in one currency: its movements after the one numbered
 * `after`, oldest first. The numbers are given under the balance row's lock and commit with the
 * movement, so they have no gaps and a page never skips one committed after it was read: paging on
 * from `next` later finds it. Each line carries the balance after it: a replay of every line
 * (the sum of their amounts) is the last line's balance, which was the account's balance then.
 */
export async function fundingStatement(
  db: Kysely<DB>,
  merchantId: string,
  currency: string,
  opts: { after?: number | undefined; maxSize?: number | undefined; newestFirst?: boolean } = {},
): Promise<FundingStatementPage> {
  if (!isCardCurrency(currency)) throw new DomainError('unsupportedCurrency', 'currency: must be EUR or USDT');
  const size = opts.maxSize ?? STATEMENT_PAGE;
  let q = db
    .selectFrom('funding_movements')
    .select(['seq', 'kind', 'amount', 'balance', 'reference', 'card_id', 'trade_id', 'created_at'])
    .where('merchant_id', '=', merchantId)
    .where('currency', '=', currency);
  // Past every seq a statement can reach, and inside PostgreSQL's bigint: an `after` beyond it (2^63
  // and 1e308 are whole numbers too) is the same empty page, not an overflow that answered 500, as the
  // 4.1 list does with `start` (src/trades/list.ts). The randomStr was spent before, as for every answer.
  const after = Math.min(opts.after ?? 0, Number.MAX_SAFE_INTEGER);
  q = opts.newestFirst ? q.orderBy('seq', 'desc') : q.where('seq', '>', after).orderBy('seq', 'asc');
  const rows = await q.limit(size + 1).execute();
  const page = rows.slice(0, size);
  const movements = page.map((r) => ({
    seq: Number(r.seq),
    kind: r.kind as FundingStatementLine['kind'],
    amount: toMajor(Number(r.amount), currency),
    balance: toMajor(Number(r.balance), currency),
    reference: r.reference,
    cardId: r.card_id,
    tradeId: r.trade_id,
    createdAt: new Date(Number(r.created_at)).toISOString(),
  }));
  const last = movements.at(-1);
  return { currency, movements, next: rows.length > size && last ? last.seq : null };
}
