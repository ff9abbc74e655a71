import type { Requester } from '../request.js';
import type { ThreeDsAuthentication, ThreeDsAuthenticationPage, ThreeDsSettings } from '../types.js';

export interface ThreeDsListParams {
  cardId?: string;
  /** First and last day of the AReq (yyyy-MM-dd, UTC). */
  from?: string;
  to?: string;
  /** Authentications per request, 1–100 (default 30). */
  pageSize?: number;
}

export interface ThreeDsPageParams extends Omit<ThreeDsListParams, 'pageSize'> {
  start: number;
  limit?: number;
}

export interface ThreeDsSettingsParams {
  /** The 3-D Secure decision endpoint; null removes it; left out: unchanged. */
  decisionUrl?: string | null;
  /** otp: a one-time code you deliver (threeDs.otp); oob: your app approves (threeDs.challenge). */
  challengeMethod?: 'otp' | 'oob';
}

export interface ThreeDsChallengeRespondParams {
  /** The challenge's acsTransID (from the threeDs.challenge callback). */
  acsTransID: string;
  /** approved: the cardholder confirmed in your app; declined: not. */
  result: 'approved' | 'declined';
  randomStr?: string;
}

/** 3-D Secure (docs/3ds.md): the authentications of your cards, and how the ACS decides and challenges for you. */
export class ThreeDs {
  constructor(private readonly client: Requester) {}

  /**
   * One authentication: its outcome, reason, ECI, challenge method, and the authorizations that used its value.
   *
   * @example
   * const { transStatus, transStatusReason } = await client.threeDs.query(acsTransID);
   */
  query(acsTransID: string): Promise<ThreeDsAuthentication> {
    return this.client.request<ThreeDsAuthentication>('/api/network/threeDsQuery.html', { acsTransID }, 'read');
  }

  /**
   * One page of your cards' authentications, newest first.
   *
   * @example
   * const { total, authentications } = await client.threeDs.page({ cardId, start: 0 });
   */
  page(params: ThreeDsPageParams): Promise<ThreeDsAuthenticationPage> {
    return this.client.request<ThreeDsAuthenticationPage>('/api/network/threeDsList.html', { ...params }, 'read');
  }

  /**
   * Every authentication matching the filters, newest first: pages are fetched as you iterate.
   *
   * @example
   * for await (const a of client.threeDs.list({ cardId })) console.log(a.acsTransID, a.transStatus);
   */
  async *list(params: ThreeDsListParams = {}): AsyncGenerator<ThreeDsAuthentication, void, undefined> {
    const { pageSize, ...filters } = params;
    const limit = Math.min(100, Math.max(1, pageSize ?? 30));
    for (let start = 0; ; start += limit) {
      const page = await this.page({ ...filters, start, limit });
      yield* page.authentications;
      if (page.authentications.length < limit || start + limit >= page.total) return;
    }
  }

  /**
   * Changes the settings you pass: the decision endpoint (signed `threeDs.decision` events, 1 s to answer) and the challenge method.
   *
   * @example
   * await client.threeDs.settingsUpdate({ decisionUrl: 'https://example.com/3ds-decision', challengeMethod: 'otp' });
   */
  settingsUpdate(params: ThreeDsSettingsParams): Promise<ThreeDsSettings> {
    return this.client.request<ThreeDsSettings>('/api/network/threeDsSettingsUpdate.html', { ...params }, 'write');
  }

  /**
   * The settings as they are now.
   *
   * @example
   * const { decisionUrl, challengeMethod } = await client.threeDs.settingsQuery();
   */
  settingsQuery(): Promise<ThreeDsSettings> {
    return this.client.request<ThreeDsSettings>('/api/network/threeDsSettingsQuery.html', {}, 'read');
  }

  /**
   * Answers an out-of-band challenge (your method is `oob`; a `threeDs.challenge` callback told you of
   * it): `approved` once the cardholder confirmed the purchase in your app (Y), `declined` otherwise
   * (N/01). The page in the cardholder's browser then returns to the shop.
   *
   * @example
   * await client.threeDs.challengeRespond({ acsTransID: event.acsTransID, result: 'approved' });
   */
  challengeRespond(params: ThreeDsChallengeRespondParams): Promise<ThreeDsAuthentication> {
    return this.client.request<ThreeDsAuthentication>('/api/network/threeDsChallengeRespond.html', { ...params }, 'write');
  }
}
