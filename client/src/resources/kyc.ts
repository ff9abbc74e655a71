import type { Requester } from '../request.js';
import type { KycStatus } from '../types.js';

export interface KycShareParams {
  /** Your unique id of this request: retries reuse it, so one request is one submission. */
  requestNo: string;
  email: string;
  kycPlatform: string;
  holderType: '1';
  callbackUrl: string;
  individualInfo: {
    firstName: string;
    lastName: string;
    dob: string;
    country: string;
    gender: 1 | 2;
    idDocType: '1' | '2' | '3' | '4';
    number: string;
    validUntil: string;
    ipAddress: string;
    address?: { country: string; state: string; city: string; address: string; zipCode: string; ssn?: string };
  };
  /** The address may also be sent beside individualInfo. */
  address?: { country: string; state: string; city: string; address: string; zipCode: string; ssn?: string };
}

export class Kyc {
  constructor(private readonly client: Requester) {}

  /**
   * Submits KYC information already verified on your platform (interface 4.3). The result arrives
   * as a `kyc.result` callback at `callbackUrl`, and through `kyc.get`.
   *
   * @example
   * await client.kyc.share({ requestNo: 'REQ-1', email: 'bob@example.com', kycPlatform: 'SUMSUB', holderType: '1',
   *   callbackUrl: 'https://you.example/hooks', individualInfo: { … } });
   */
  async share(params: KycShareParams): Promise<void> {
    await this.client.request<null>('/open/api/kyc/share/information', { ...params }, 'keyed');
  }

  /**
   * The state of a KYC request.
   *
   * @example
   * const { kycStatus, holderId } = await client.kyc.get('REQ-1');
   */
  get(requestNo: string): Promise<KycStatus> {
    return this.client.request<KycStatus>('/open/api/kyc/share/query', { requestNo }, 'read');
  }
}
