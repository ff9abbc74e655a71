import type { Requester } from '../request.js';
import type { Dispute, DisputePage } from '../types.js';

/** Why a cardholder disputes (decisions §13.1). */
export type DisputeReason = Dispute['reason'];
export type DisputeStatus = Dispute['status'];

/** An evidence file: PDF, PNG or JPEG (recognised by its bytes), at most 5 MB; `data` as bytes or Base64. */
export interface DisputeEvidenceFile {
  fileName: string;
  contentType: 'application/pdf' | 'image/png' | 'image/jpeg';
  data: string | Uint8Array;
}

export interface CreateDisputeParams {
  tradeId: string;
  reason: DisputeReason;
  /** Major units; default: all that can be disputed (cleared, less refunds and earlier disputes). */
  amount?: number;
  explanation?: string;
  /** At most 10 files; a request carries at most 8 MiB, so add large files one by one with `update`. */
  evidence?: DisputeEvidenceFile[];
}

export interface UpdateDisputeParams {
  disputeId: string;
  reason?: DisputeReason;
  amount?: number;
  explanation?: string;
  /** Files added (after those removed). */
  evidence?: DisputeEvidenceFile[];
  /** File names removed. */
  removeEvidence?: string[];
}

export interface DisputeListParams {
  cardId?: string;
  status?: DisputeStatus;
  /** First and last day of creation (yyyy-MM-dd, UTC). */
  from?: string;
  to?: string;
  /** Disputes per request, 1–100 (default 30). */
  pageSize?: number;
}

export interface DisputePageParams extends Omit<DisputeListParams, 'pageSize'> {
  start: number;
  limit?: number;
}

const base64 = (data: string | Uint8Array) => (typeof data === 'string' ? data : Buffer.from(data).toString('base64'));
const files = (evidence: DisputeEvidenceFile[] | undefined) =>
  evidence === undefined
    ? {}
    : { evidence: evidence.map((f) => ({ fileName: f.fileName, contentType: f.contentType, data: base64(f.data) })) };

/** Disputes and chargebacks (docs/disputes.md): open one on a cleared purchase, add evidence, submit it before its deadline. */
export class Disputes {
  constructor(private readonly client: Requester) {}

  /**
   * Opens a dispute (status `unsubmitted`) on a cleared purchase.
   *
   * @example
   * const dispute = await client.disputes.create({ tradeId, reason: 'fraudulent', explanation: 'I never made this purchase',
   *   evidence: [{ fileName: 'statement.pdf', contentType: 'application/pdf', data: await readFile('statement.pdf') }] });
   */
  create(params: CreateDisputeParams): Promise<Dispute> {
    return this.client.request<Dispute>('/api/network/disputeCreate.html', { ...params, ...files(params.evidence) }, 'write');
  }

  /**
   * Changes an unsubmitted dispute: reason, amount, explanation; removes and adds evidence files.
   *
   * @example
   * await client.disputes.update({ disputeId, explanation: 'The parcel never arrived', removeEvidence: ['old.png'] });
   */
  update(params: UpdateDisputeParams): Promise<Dispute> {
    return this.client.request<Dispute>('/api/network/disputeUpdate.html', { ...params, ...files(params.evidence) }, 'write');
  }

  /**
   * Submits a dispute to the network (before its `deadline`); with the merchant's provisional credit
   * on, the card is credited at once.
   *
   * @example
   * const submitted = await client.disputes.submit(dispute.disputeId);
   */
  submit(disputeId: string): Promise<Dispute> {
    return this.client.request<Dispute>('/api/network/disputeSubmit.html', { disputeId }, 'write');
  }

  /**
   * Withdraws a dispute; a submitted one as if lost (its provisional credit taken back).
   *
   * @example
   * await client.disputes.withdraw(dispute.disputeId);
   */
  withdraw(disputeId: string): Promise<Dispute> {
    return this.client.request<Dispute>('/api/network/disputeWithdraw.html', { disputeId }, 'write');
  }

  /**
   * One dispute.
   *
   * @example
   * const { status, deadline } = await client.disputes.retrieve(disputeId);
   */
  retrieve(disputeId: string): Promise<Dispute> {
    return this.client.request<Dispute>('/api/network/disputeQuery.html', { disputeId }, 'read');
  }

  /**
   * One page of the merchant's disputes, newest first.
   *
   * @example
   * const { total, disputes } = await client.disputes.page({ status: 'submitted', start: 0 });
   */
  page(params: DisputePageParams): Promise<DisputePage> {
    return this.client.request<DisputePage>('/api/network/disputeList.html', { ...params }, 'read');
  }

  /**
   * Every dispute matching the filters, newest first: pages are fetched as you iterate.
   *
   * @example
   * for await (const d of client.disputes.list({ status: 'submitted' })) console.log(d.disputeId, d.deadline);
   */
  async *list(params: DisputeListParams = {}): AsyncGenerator<Dispute, void, undefined> {
    const { pageSize, ...filters } = params;
    const limit = Math.min(100, Math.max(1, pageSize ?? 30));
    for (let start = 0; ; start += limit) {
      const page = await this.page({ ...filters, start, limit });
      yield* page.disputes;
      if (page.disputes.length < limit || start + limit >= page.total) return;
    }
  }
}
