import type { CardRow } from '../cards/model.js';
import { book } from './book.js';
import type { LedgerCtx } from './context.js';
import { spendLegs } from './forced.js';
import { Account } from './journal.js';

/**
 * A dispute's money (decisions §13.3, docs/disputes.md "Money"): each movement one journal entry
 * traced by the dispute's id (`ledger_postings.trade_id`), between the card, the merchant's funding
 * account and the network's side (`network:disputes`). The caller holds the card's lock (lockCard)
 * and has moved the dispute's row under it. Each answers the journal entry's id.
 */
export interface DisputeMoney {
  id: string;
  trade_id: string;
  merchant_id: string;
}

const origin = (card: CardRow, d: DisputeMoney, kind: 'disputeCredit' | 'disputeReturn') => ({
  id: d.id,
  kind,
  cardId: card.id,
  tradeId: d.trade_id,
});

/**
 * Provisional credit at submission: the merchant's funding account advances the amount to the card
 * (its debt first, as any money coming to a card). A funding balance too low refuses the submission (2726).
 */
export async function bookProvisionalCredit(ctx: LedgerCtx, card: CardRow, d: DisputeMoney, amount: number): Promise<string | null> {
  return book(
    ctx,
    card.currency,
    [
      { account: Account.merchantFunding(d.merchant_id), amount: -amount },
      { account: Account.available(card.id), amount },
    ],
    [],
    undefined,
    origin(card, d, 'disputeCredit'),
  );
}

/**
 * A won dispute: the network pays `amount` back. Without provisional credit it goes to the card (a
 * closed card's on to the merchant's funding, as book() does); with it, the card already has it, so it
 * goes back to the merchant's funding account, which advanced it.
 */
export async function bookDisputeWon(
  ctx: LedgerCtx,
  card: CardRow,
  d: DisputeMoney,
  amount: number,
  provisional: boolean,
): Promise<string | null> {
  const to = provisional ? Account.merchantFunding(d.merchant_id) : Account.available(card.id);
  return book(
    ctx,
    card.currency,
    [
      { account: Account.disputes, amount: -amount },
      { account: to, amount },
    ],
    [],
    undefined,
    origin(card, d, 'disputeReturn'),
  );
}

/**
 * Provisional credit taken back (a lost dispute, or one withdrawn after its submission): from the
 * card's available balance as far as it goes, the rest its debt (as a forced post, §12.7), back to
 * the merchant's funding account.
 */
export async function bookCreditReversed(ctx: LedgerCtx, card: CardRow, d: DisputeMoney, amount: number): Promise<string | null> {
  return book(
    ctx,
    card.currency,
    [...spendLegs(card, amount), { account: Account.merchantFunding(d.merchant_id), amount }],
    [],
    undefined,
    origin(card, d, 'disputeReturn'),
  );
}
