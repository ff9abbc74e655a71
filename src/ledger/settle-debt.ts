import type { VerbCtx } from '../context.js';
import { newId } from '../db/ids.js';
import { DomainError } from '../errors.js';
import { toMajor } from '../money/currency.js';
import { book } from './book.js';
import { fundingBalances } from './funding.js';
import { Account } from './journal.js';
import { lockCard } from './locks.js';

/** What `cardprogram card settle-debt` answers (and the console shows). */
export interface DebtSettlement {
  /** The movement's id: the journal entry's trace and the funding statement line's reference. */
  settlementId: string;
  cardId: string;
  merchantId: string;
  currency: string;
  /** The debt settled, major units. */
  amount: number;
  /** The merchant's funding balance after it, major units. */
  fundingBalance: number;
}

/**
 * Settles a closed card's debt against its merchant's funding (decisions §12.13, docs/funding.md
 * "Card debt"): a closed card takes no top-up, so without this its debt had no exit. The whole debt,
 * in one journal entry (`merchant:<appId>:funding` → `card:<cardId>:debt`) and one line of the
 * funding statement (`debtSettlement`). Funding may not go below zero: a balance short of the debt is
 * refused (2726, naming what is available) and nothing moves; the operator credits the merchant
 * first. Exactly once: the card's lock is taken before its debt is read, so a second settlement at
 * the same moment waits, then finds nothing owed (2723). A card that is not closed pays its debt with
 * a top-up (2724).
 */
export async function settleCardDebt({ ctx, input }: { ctx: VerbCtx; input: { cardId: string } }): Promise<DebtSettlement> {
  const owner = await ctx.tx.selectFrom('cards').select('merchant_id').where('id', '=', input.cardId).executeTakeFirst();
  if (!owner || (ctx.merchantId !== undefined && ctx.merchantId !== owner.merchant_id)) throw new DomainError('cardNotFound');
  const lctx = { ...ctx, merchantId: owner.merchant_id };
  const card = await lockCard(lctx, input.cardId);
  if (card.status !== 'closed') {
    throw new DomainError(
      'cardStatus',
      `cardId: the card is ${card.status}; only a closed card's debt is settled so (a top-up pays an open card's debt)`,
    );
  }
  const debt = Number(card.debt);
  if (debt <= 0) throw new DomainError('incorrectAmount', 'cardId: the card owes nothing');
  const settlementId = newId('sdb');
  await book(
    lctx,
    card.currency,
    [
      { account: Account.merchantFunding(card.merchant_id), amount: -debt },
      { account: Account.debt(card.id), amount: debt },
    ],
    [],
    undefined,
    { id: settlementId, kind: 'debtSettlement', cardId: card.id, tradeId: null },
    card,
  );
  const [after] = await fundingBalances(ctx.tx, card.merchant_id, card.currency);
  return {
    settlementId,
    cardId: card.id,
    merchantId: card.merchant_id,
    currency: card.currency,
    amount: toMajor(debt, card.currency),
    fundingBalance: after?.available ?? 0,
  };
}
