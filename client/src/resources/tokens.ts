import type { Requester } from '../request.js';
import type { TokenSettings, WalletToken, WalletTokenPage } from '../types.js';

export type WalletTokenStatus = WalletToken['status'];
export type TokenAuthMethod = 'otp_sms' | 'otp_email' | 'app';

export interface TokenListParams {
  cardId?: string;
  status?: WalletTokenStatus;
  /** Tokens per request, 1–100 (default 30). */
  pageSize?: number;
}

export interface TokenPageParams extends Omit<TokenListParams, 'pageSize'> {
  start: number;
  limit?: number;
}

export interface TokenActionParams {
  tokenId: string;
  /** Why (at most 200 characters): told to the TSP, kept in the token's history. */
  reason?: string;
}

export interface TokenSettingsParams {
  /** The token decision endpoint; null removes it (the built-in rules decide). */
  decisionUrl?: string | null;
  /** The step-up methods offered, in order; null: the default (otp_sms with a mobile number, and otp_email). */
  methods?: TokenAuthMethod[] | null;
}

/**
 * Wallet tokens of the merchant's cards (docs/tokens.md): Apple Pay, Google Pay, Samsung Pay and
 * cards on file. List them, suspend, resume or delete one, confirm a pending one in your app, and
 * set how provisioning is decided.
 */
export class Tokens {
  constructor(private readonly client: Requester) {}

  /**
   * One token, with its device and status history.
   *
   * @example
   * const { status, walletProvider, device } = await client.tokens.retrieve(tokenId);
   */
  retrieve(tokenId: string): Promise<WalletToken> {
    return this.client.request<WalletToken>('/api/network/tokenQuery.html', { tokenId }, 'read');
  }

  /**
   * One page of the merchant's tokens, newest first.
   *
   * @example
   * const { total, tokens } = await client.tokens.page({ cardId, start: 0 });
   */
  page(params: TokenPageParams): Promise<WalletTokenPage> {
    return this.client.request<WalletTokenPage>('/api/network/tokenList.html', { ...params }, 'read');
  }

  /**
   * Every token matching the filters, newest first: pages are fetched as you iterate.
   *
   * @example
   * for await (const t of client.tokens.list({ cardId, status: 'active' })) console.log(t.tokenId, t.walletProvider, t.device.name);
   */
  async *list(params: TokenListParams = {}): AsyncGenerator<WalletToken, void, undefined> {
    const { pageSize, ...filters } = params;
    const limit = Math.min(100, Math.max(1, pageSize ?? 30));
    for (let start = 0; ; start += limit) {
      const page = await this.page({ ...filters, start, limit });
      yield* page.tokens;
      if (page.tokens.length < limit || start + limit >= page.total) return;
    }
  }

  /**
   * Suspends an active token: payments with it are declined until it is resumed.
   *
   * @example
   * await client.tokens.suspend({ tokenId, reason: 'phone reported lost' });
   */
  suspend(params: TokenActionParams): Promise<WalletToken> {
    return this.client.request<WalletToken>('/api/network/tokenSuspend.html', { ...params }, 'write');
  }

  /**
   * Resumes a suspended token (its card must be active).
   *
   * @example
   * await client.tokens.resume({ tokenId, reason: 'phone found' });
   */
  resume(params: TokenActionParams): Promise<WalletToken> {
    return this.client.request<WalletToken>('/api/network/tokenResume.html', { ...params }, 'write');
  }

  /**
   * Deletes a token for good.
   *
   * @example
   * await client.tokens.delete({ tokenId, reason: 'cardholder removed the card from the wallet' });
   */
  delete(params: TokenActionParams): Promise<WalletToken> {
    return this.client.request<WalletToken>('/api/network/tokenDelete.html', { ...params }, 'write');
  }

  /**
   * Activates a pending token whose step-up offered `app`: the cardholder confirmed it in your app.
   *
   * @example
   * const token = await client.tokens.activate(tokenId); // token.status === 'active'
   */
  activate(tokenId: string): Promise<WalletToken> {
    return this.client.request<WalletToken>('/api/network/tokenActivate.html', { tokenId }, 'write');
  }

  /**
   * Sets the token decision endpoint and the step-up methods (the fields given; the others unchanged).
   *
   * @example
   * await client.tokens.updateSettings({ decisionUrl: 'https://merchant.example/token-decision', methods: ['app', 'otp_sms'] });
   */
  updateSettings(params: TokenSettingsParams): Promise<TokenSettings> {
    return this.client.request<TokenSettings>('/api/network/tokenSettingsUpdate.html', { ...params }, 'write');
  }

  /**
   * The token settings as they are.
   *
   * @example
   * const { decisionUrl, methods } = await client.tokens.settings();
   */
  settings(): Promise<TokenSettings> {
    return this.client.request<TokenSettings>('/api/network/tokenSettingsQuery.html', {}, 'read');
  }
}
