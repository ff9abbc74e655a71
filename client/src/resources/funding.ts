import type { Requester } from '../request.js';
import type { FundingBalance } from '../types.js';

/** The merchant's funding accounts: top-ups draw from them; the program's operator credits them. */
export class Funding {
  constructor(private readonly client: Requester) {}

  /**
   * What each funding account holds, in major units: every card currency, or only `currency`. A
   * top-up larger than the card currency's balance fails with code `2726` (a `ConflictError`).
   *
   * @example
   * const [eur] = await client.funding.balance('EUR');
   * console.log(`${eur.available} ${eur.currency} left to put on cards`);
   */
  async balance(currency?: 'EUR' | 'USDT'): Promise<FundingBalance[]> {
    const model = await this.client.request<{ balances: FundingBalance[] }>(
      '/api/network/merchantBalance.html',
      currency === undefined ? {} : { currency },
      'read',
    );
    return model.balances;
  }
}
