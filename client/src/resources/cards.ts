import type { Requester } from '../request.js';
import type { Card, TradeRecord } from '../types.js';

export class Cards {
  constructor(private readonly client: Requester) {}

  /**
   * Issues a virtual card to an approved cardholder.
   *
   * @example
   * const card = await client.cards.apply({ holderId: 'hld_…', currency: 'EUR' });
   */
  apply(params: { holderId: string; currency: 'EUR' | 'USDT'; randomStr?: string }): Promise<Card> {
    return this.client.request<Card>('/api/network/cardApply.html', params, 'write');
  }

  /**
   * A card with its balances (masked number).
   *
   * @example
   * const { availableBalance } = await client.cards.get('card_…');
   */
  get(cardId: string): Promise<Card> {
    return this.client.request<Card>('/api/network/cardQuery.html', { cardId }, 'read');
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
