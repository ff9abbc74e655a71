import type { Requester } from '../request.js';
import type { AuthorizationEndpoint, FundingBalance, FundingMovement, FundingStatementPage } from '../types.js';

/** The merchant's funding accounts: top-ups draw from them; the program's operator credits them. */
export class Funding {
  constructor(private readonly client: Requester) {}

  /**
   * What each funding account holds, in major units: every card currency, or only `currency`. A
   * top-up larger than the card currency's balance fails with code `2726` (a `ConflictError`).
   * `cardDebt` is what your cards in that currency owe after forced posts of the card network (your
   * exposure): a top-up pays a card's debt first, and the operator settles a closed card's from this
   * account.
   *
   * @example
   * const [eur] = await client.funding.balance('EUR');
   * console.log(`${eur.available} ${eur.currency} left to put on cards; cards owe ${eur.cardDebt}`);
   */
  async balance(currency?: 'EUR' | 'USDT'): Promise<FundingBalance[]> {
    const model = await this.client.request<{ balances: FundingBalance[] }>(
      '/api/network/merchantBalance.html',
      currency === undefined ? {} : { currency },
      'read',
    );
    return model.balances;
  }

  /**
   * One page of the funding statement in `currency`: the movements after the one numbered `after`
   * (0: from the first), oldest first, each with the balance after it; `next` is the `after` of the
   * next page, `null` at the last movement so far.
   *
   * @example
   * const { movements, next } = await client.funding.statementPage({ currency: 'EUR', after: 0, maxSize: 100 });
   */
  statementPage(params: { currency: 'EUR' | 'USDT'; after?: number; maxSize?: number }): Promise<FundingStatementPage> {
    return this.client.request<FundingStatementPage>('/api/network/merchantFundingList.html', { ...params }, 'read');
  }

  /**
   * Every movement of the funding account in `currency`, oldest first, fetched a page at a time as
   * you iterate: the operator's credits and debits, top-ups, cards closed and what closed cards
   * released later. Each carries the balance after it; their amounts add up to the last one's.
   * Start from `after` (a movement's `seq`) to read only what came since.
   *
   * @example
   * for await (const m of client.funding.statement({ currency: 'EUR' })) {
   *   console.log(m.seq, m.kind, m.amount, m.reference, m.balance);
   * }
   */
  async *statement(params: {
    currency: 'EUR' | 'USDT';
    after?: number;
    pageSize?: number;
  }): AsyncGenerator<FundingMovement, void, undefined> {
    let after: number | null = params.after ?? 0;
    const maxSize = Math.min(100, Math.max(1, params.pageSize ?? 100));
    while (after !== null) {
      const page: FundingStatementPage = await this.statementPage({ currency: params.currency, after, maxSize });
      yield* page.movements;
      after = page.next;
    }
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
