import type { Requester } from '../request.js';
import type { AuthorizationEndpoint, FundingBalance } from '../types.js';

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

/** The merchant's real-time authorization endpoint (docs/transactions.md, "Authorization decisions"). */
export class AuthorizationEndpointSettings {
  constructor(private readonly client: Requester) {}

  /**
   * The endpoint's settings as they are now.
   *
   * @example
   * const { authorizationUrl, timeoutMs, defaultDecision } = await client.authorizationEndpoint.get();
   */
  get(): Promise<AuthorizationEndpoint> {
    return this.client.request<AuthorizationEndpoint>('/api/network/authorizationEndpointQuery.html', {}, 'read');
  }

  /**
   * Sets where each authorization the program approves is sent for your decision, how long your
   * endpoint may take (100 to 5000 ms, default 2000) and what applies when it does not answer in
   * time or readably (default `decline`). `authorizationUrl: null` removes it; a setting left out keeps its value. Answer the requests
   * with `client.webhooks.authorizationRequest` and `Webhooks.decide`.
   *
   * @example
   * await client.authorizationEndpoint.update({ authorizationUrl: 'https://acme.example/authorize', timeoutMs: 1500 });
   */
  update(params: {
    authorizationUrl: string | null;
    timeoutMs?: number;
    defaultDecision?: 'approve' | 'decline';
    randomStr?: string;
  }): Promise<AuthorizationEndpoint> {
    return this.client.request<AuthorizationEndpoint>('/api/network/authorizationEndpointUpdate.html', params, 'write');
  }
}
