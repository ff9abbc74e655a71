import type { Requester } from '../request.js';
import type { Card, CardWithSpending, Controls, ControlsModel, TradeRecord } from '../types.js';

export class Cards {
  constructor(private readonly client: Requester) {}

  /**
   * Issues a virtual card to an approved cardholder.
   *
   * @example
   * const card = await client.cards.apply({ holderId: 'hld_…', currency: 'EUR' });
   */
  apply(params: { holderId: string; currency: 'EUR' | 'USDT'; controls?: Controls; randomStr?: string }): Promise<Card> {
    return this.client.request<Card>('/api/network/cardApply.html', params, 'write');
  }

  /**
   * A card with its balances (masked number), its spending controls, and what each spending limit
   * that applies to it has left now. `availableBalance` is never below 0; `ledgerBalance` is the
   * card's net position (available + held − `debtBalance`), negative while it owes more than it has.
   *
   * @example
   * const { availableBalance, ledgerBalance, debtBalance, spending } = await client.cards.get('card_…');
   * if (debtBalance > 0) console.log(`owes ${debtBalance}; net ${ledgerBalance}`);
   * for (const l of spending) console.log(`${l.interval}: ${l.remaining} of ${l.amount} left`);
   */
  get(cardId: string): Promise<CardWithSpending> {
    return this.client.request<CardWithSpending>('/api/network/cardQuery.html', { cardId }, 'read');
  }

  /**
   * Replaces the spending controls of a card (`cardId`) or of a cardholder (`holderId`: they apply to
   * each of its cards that does not set the same rule). `{}` removes them. An authorization they
   * refuse throws a `ConflictError` with code `2728`; `error.decline.declineReason` says which rule.
   *
   * @example
   * await client.cards.updateControls({
   *   cardId: 'card_…',
   *   controls: { spendingLimits: [{ amount: 200, interval: 'daily' }], blockedMccs: ['7995'], channels: ['ecommerce', 'pos'] },
   * });
   */
  updateControls(
    params: ({ cardId: string; holderId?: never } | { holderId: string; cardId?: never }) & { controls: Controls; randomStr?: string },
  ): Promise<ControlsModel> {
    return this.client.request<ControlsModel>('/api/network/cardControlsUpdate.html', params, 'write');
  }

  /**
   * Adds money to a card, in major units of its currency; returns the top-up's transaction record
   * (100). Pass your own `randomStr` to make a top-up idempotent across your own restarts, not only
   * across the SDK's retries.
   *
   * @example
   * const { tradeId } = await client.cards.topUp({ cardId: 'card_…', amount: 50 });
   */
  topUp(params: { cardId: string; amount: number; randomStr?: string }): Promise<TradeRecord & { cardId: string }> {
    return this.client.request<TradeRecord & { cardId: string }>('/api/network/cardTopUp.html', params, 'write');
  }

  /**
   * Freezes a card: its authorizations decline until it is unfrozen (it can still be topped up). The
   * freeze is recorded as the merchant's, with your `reason` (at most 200 characters); it takes over
   * a freeze by the cardholder, and a card the operator froze is returned as it is.
   *
   * @example
   * const card = await client.cards.freeze({ cardId: 'card_…', reason: 'reported lost' });
   * // card.status === 'frozen', card.statusSource === 'merchant'
   */
  freeze(params: { cardId: string; reason?: string; randomStr?: string }): Promise<Card> {
    return this.client.request<Card>('/api/network/cardFreeze.html', params, 'write');
  }

  /**
   * Unfreezes a card that you or the cardholder froze. A card the operator froze throws a
   * `ConflictError` with code `2727` (only the operator can unfreeze it); a closed one `2724`.
   *
   * @example
   * const card = await client.cards.unfreeze({ cardId: 'card_…' });
   */
  unfreeze(params: { cardId: string; reason?: string; randomStr?: string }): Promise<Card> {
    return this.client.request<Card>('/api/network/cardUnfreeze.html', params, 'write');
  }

  /**
   * Closes a card for good. Its available balance returns to your funding account (a withdrawal
   * record, tradeType 110, remark "Card closed"); nothing can be authorized, topped up, withdrawn or
   * transferred on it afterwards. Closing a closed card returns it as it is.
   *
   * @example
   * const card = await client.cards.close({ cardId: 'card_…', reason: 'customer left' });
   * // card.status === 'closed', card.availableBalance === 0
   */
  close(params: { cardId: string; reason?: string; randomStr?: string }): Promise<Card> {
    return this.client.request<Card>('/api/network/cardClose.html', params, 'write');
  }
}
