import type { Requester } from '../request.js';
import type { Cardholder } from '../types.js';

export interface CreateHolderParams {
  /** Country code and number, starting with +. */
  mobile: string;
  /** Plain text: the SDK Base64-encodes it as the interface requires. */
  firstName: string;
  /** Plain text (Base64-encoded for you). */
  lastName?: string;
  email: string;
  /** yyyy-MM-dd */
  dateOfBirth: string;
  nationality: string;
  /** 1 male, 2 female. */
  sex: 1 | 2;
  countryCode: string;
  /** Plain text (Base64-encoded for you). */
  town: string;
  /** Plain text (Base64-encoded for you). */
  address: string;
  postCode: string;
  /** 1 European ID card, 2 passport. */
  idnoType: 1 | 2;
  idno: string;
  /** Your idempotency key for this creation; generated when absent. */
  randomStr?: string;
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

export class Holders {
  constructor(private readonly client: Requester) {}

  /**
   * Creates a cardholder (interface 4.2). Retried safely: one cardholder however many attempts.
   *
   * @example
   * const holder = await client.holders.create({
   *   mobile: '+4915112345678', firstName: 'Alice', lastName: 'Schmidt', email: 'alice@example.com',
   *   dateOfBirth: '1990-04-12', nationality: 'DE', sex: 2, countryCode: 'DE', town: 'Berlin',
   *   address: 'Unter den Linden 1', postCode: '10117', idnoType: 2, idno: 'C01X00T47',
   * });
   * holder.auditStatus; // 0, pending review
   */
  create(params: CreateHolderParams): Promise<Cardholder> {
    const { firstName, lastName, town, address, ...rest } = params;
    return this.client.request<Cardholder>(
      '/api/network/holderCreate.html',
      {
        ...rest,
        firstName: b64(firstName),
        ...(lastName === undefined ? {} : { lastName: b64(lastName) }),
        town: b64(town),
        address: b64(address),
      },
      'write',
    );
  }

  /**
   * A cardholder and its current audit status.
   *
   * @example
   * const { auditStatus } = await client.holders.get('hld_…');
   */
  get(holderId: string): Promise<Cardholder> {
    return this.client.request<Cardholder>('/api/network/holderQuery.html', { holderId }, 'read');
  }
}
