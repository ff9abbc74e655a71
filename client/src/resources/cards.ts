import type { CardProgram } from '../client.js';
import type { Card, TradeRecord } from '../types.js';

export class Cards {
  constructor(private readonly client: CardProgram) {}

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
}
