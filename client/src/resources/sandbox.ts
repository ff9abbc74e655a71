import type { Requester } from '../request.js';
import type {
  AuditStatusValue,
  CardDetails,
  Cardholder,
  ChannelValue,
  Dispute,
  KycStatus,
  SandboxThreeDsAuthentication,
  SandboxThreeDsCompletion,
  SandboxTokenProvisioning,
  SandboxTokenVerification,
  TradeRecord,
} from '../types.js';

type Dated = { businessDate?: string; randomStr?: string };
export type SandboxTrade = TradeRecord & { cardId?: string };

/**
 * The sandbox's simulation of the card network and of the reviewers (404 in production): what a
 * card scheme or a compliance team would do, on demand, for tests and demos.
 */
export class Sandbox {
  constructor(private readonly client: Requester) {}

  private write<T>(name: string, body: object): Promise<T> {
    return this.client.request<T>(name, { ...body }, 'write');
  }

  /**
   * Sets a cardholder's audit status as a reviewer would.
   *
   * @example
   * await client.sandbox.reviewHolder({ holderId, auditStatus: 2 });
   */
  reviewHolder(p: { holderId: string; auditStatus: AuditStatusValue; errMsg?: string } & Dated): Promise<Cardholder> {
    return this.write('/sandbox/holder/review', p);
  }

  /**
   * Decides a KYC request as a reviewer would.
   *
   * @example
   * await client.sandbox.reviewKyc({ requestNo: 'REQ-1', kycStatus: 'approved' });
   */
  reviewKyc(p: { requestNo: string; kycStatus: 'approved' | 'rejected'; reason?: string } & Dated): Promise<KycStatus> {
    return this.write('/sandbox/kyc/review', p);
  }

  /**
   * A card payment's authorization (150): holds the amount.
   *
   * @example
   * const { tradeId } = await client.sandbox.authorize({ cardId, amount: 12.5, remark: 'Coffee', mcc: '5814', channel: 'pos' });
   * // With the card data an online shop takes (cardDetails gives the card's):
   * await client.sandbox.authorize({ cardId, amount: 30, channel: 'ecommerce', cvv2: '123', expiry: '2911' });
   * // With a wallet token (Apple Pay, Google Pay, a card on file):
   * await client.sandbox.authorize({ cardId, amount: 8.4, channel: 'pos', tokenId });
   */
  authorize(
    p: {
      cardId: string;
      amount: number;
      currencyTxn?: string;
      txnAmount?: number;
      remark?: string;
      /** The acceptor, as a network sends it (read back with `trades.get`). */
      mcc?: string;
      merchantName?: string;
      merchantCity?: string;
      /** ISO 3166-1 alpha-2. */
      merchantCountry?: string;
      channel?: ChannelValue;
      /**
       * The card data as the cardholder typed it, each checked when sent: one that is not the card's
       * is declined (`2731`, `cvv2_mismatch` / `expiry_mismatch`) and counted; 5 within 24 hours
       * freeze the card (`statusSource: 'security'`). `cvv2`: 3 or 4 digits; `expiry`: YYMM.
       */
      cvv2?: string;
      expiry?: string;
      /**
       * A wallet token the payment is made with (`sandbox.provisionToken`): this card's active token,
       * else declined `2734` (`token_unknown`, `token_inactive`); its wallet must be in the controls'
       * `allowedWallets` when they set it (`2728`, `wallet_not_allowed`).
       */
      tokenId?: string;
    } & Dated,
  ): Promise<SandboxTrade> {
    return this.write('/sandbox/network/authorize', p);
  }

  /**
   * Decides a submitted dispute at once, as the network would: `won` pays back `amount` (default all).
   *
   * @example
   * await client.sandbox.decideDispute({ disputeId, outcome: 'won' });
   */
  decideDispute(p: { disputeId: string; outcome: 'won' | 'lost'; amount?: number; randomStr?: string }): Promise<Dispute> {
    return this.write('/sandbox/dispute/decide', p);
  }
  /**
   * Authenticates a purchase with 3-D Secure as a directory server would: the ARes, and for a
   * challenge the form (acsURL, creq) that opens it in a browser.
   *
   * @example
   * const { ares, challenge } = await client.sandbox.authenticate({ cardId, amount: 12.5, challengeInd: '04' });
   */
  authenticate(p: {
    cardId: string;
    amount: number;
    currency?: string;
    merchantName?: string;
    /** threeDSRequestorChallengeInd, 01–09 (04: challenge mandated). */
    challengeInd?: string;
    randomStr?: string;
  }): Promise<SandboxThreeDsAuthentication> {
    return this.write('/sandbox/3ds/authenticate', p);
  }

  /**
   * Finishes a 3-D Secure challenge without a browser: `otp` as the cardholder would type it (the
   * code is in your `threeDs.otp` callback), or `result` as your app would answer an oob challenge.
   * Once it is over: the `cres`, and `eci` and (for `Y`) `authenticationValue` as the DS hands them
   * on from the RReq, for the authorization (sandbox only).
   *
   * @example
   * const { authentication, eci, authenticationValue } = await client.sandbox.completeChallenge({ acsTransID, otp: event.code });
   */
  completeChallenge(p: {
    acsTransID: string;
    otp?: string;
    result?: 'approved' | 'declined';
    randomStr?: string;
  }): Promise<SandboxThreeDsCompletion> {
    return this.write('/sandbox/3ds/complete', p);
  }

  /**
   * Provisions a wallet token for one of your cards as the wallet's token service provider would
   * (the same decision as `POST /tsp/provision`): `approve` (active), `require_authentication`
   * (pending; a one-time code for the first code method is in your `token.otp` callback at once) or
   * `decline`. The answer carries the `tokenReferenceId` and `tokenRequestorId` the card network
   * link's field 48 subelements 33 and 34 name (docs/tokens.md).
   *
   * @example
   * const { tokenId, decision } = await client.sandbox.provisionToken({ cardId, walletProvider: 'apple_pay', device: { type: 'phone', name: 'Ana’s iPhone' } });
   */
  provisionToken(p: {
    cardId: string;
    walletProvider: 'apple_pay' | 'google_pay' | 'samsung_pay' | 'card_on_file';
    /** 0–9, higher is riskier (default 0): 4 or more asks for a step-up, 7 or more declines (without your token decision endpoint). */
    walletRiskScore?: number;
    device?: { type: 'phone' | 'watch' | 'tablet' | 'wearable' | 'other'; name?: string };
    randomStr?: string;
  }): Promise<SandboxTokenProvisioning> {
    return this.write('/sandbox/tokens/provision', p);
  }

  /**
   * Finishes a wallet token's step-up with the code from your `token.otp` callback, as the TSP
   * would pass it on: right, the token turns active; the third wrong code deletes it.
   *
   * @example
   * const { valid, token } = await client.sandbox.verifyToken({ tokenId, code: event.code });
   */
  verifyToken(p: { tokenId: string; code: string; randomStr?: string }): Promise<SandboxTokenVerification> {
    return this.write('/sandbox/tokens/verify', p);
  }

  /** @example await client.sandbox.clear({ tradeId }); // the payment (151) takes the held amount */
  clear(p: { tradeId: string; amount?: number } & Dated): Promise<SandboxTrade> {
    return this.write('/sandbox/network/clear', p);
  }

  /** @example await client.sandbox.reverse({ tradeId }); // releases the hold */
  reverse(p: { tradeId: string; amount?: number } & Dated): Promise<SandboxTrade> {
    return this.write('/sandbox/network/reverse', p);
  }

  /** @example await client.sandbox.void({ tradeId }); */
  void(p: { tradeId: string } & Dated): Promise<SandboxTrade> {
    return this.write('/sandbox/network/void', p);
  }

  /** @example await client.sandbox.refund({ tradeId, amount: 5 }); */
  refund(p: { tradeId: string; amount: number } & Dated): Promise<SandboxTrade> {
    return this.write('/sandbox/network/refund', p);
  }

  /** @example await client.sandbox.withdraw({ cardId, amount: 20 }); */
  withdraw(p: { cardId: string; amount: number; currencyTxn?: string; remark?: string } & Dated): Promise<SandboxTrade> {
    return this.write('/sandbox/network/withdraw', p);
  }

  /** @example await client.sandbox.transfer({ cardId, toCardId, amount: 10 }); */
  transfer(p: { cardId: string; toCardId: string; amount: number; remark?: string } & Dated): Promise<SandboxTrade> {
    return this.write('/sandbox/network/transfer', p);
  }

  /** @example await client.sandbox.adjust({ cardId, amount: 1, direction: 'credit' }); */
  adjust(p: { cardId: string; amount: number; direction: 'credit' | 'debit'; remark?: string } & Dated): Promise<SandboxTrade> {
    return this.write('/sandbox/network/adjust', p);
  }

  /** @example await client.sandbox.balanceInquiry({ cardId }); */
  balanceInquiry(p: { cardId: string } & Dated): Promise<SandboxTrade> {
    return this.write('/sandbox/network/balanceInquiry', p);
  }

  /** @example await client.sandbox.fee({ cardId, amount: 1.5, remark: 'Card fee' }); */
  fee(p: { cardId: string; amount: number; remark?: string } & Dated): Promise<SandboxTrade> {
    return this.write('/sandbox/network/fee', p);
  }

  /**
   * The full number, expiry and CVV (sandbox only; in production only the cardholder sees them, on the card page).
   *
   * @example
   * const { cardNo, expiry, cvv } = await client.sandbox.cardDetails(cardId);
   */
  cardDetails(cardId: string): Promise<CardDetails> {
    return this.client.request<CardDetails>('/sandbox/network/cardDetails', { cardId }, 'read');
  }
}
