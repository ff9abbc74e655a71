import type { Services } from '../context.js';
import { DomainError } from '../errors.js';
import { decideKyc } from './decide.js';

/**
 * The sandbox's automatic KYC reviewer (decisions §2), with documented test values so a merchant can
 * exercise every outcome: a request is taken into review at once, then decided after
 * CARDPROGRAM_KYC_AUTO_DECISION_MS: rejected when the e-mail contains `+reject`, left for a manual
 * decision when it contains `+manual`, approved otherwise.
 */
export function kycAutomation(svc: Services): (now: number) => Promise<number> {
  return async (now) => {
    const due = await svc.database.db
      .selectFrom('kyc_requests')
      .select(['request_no', 'merchant_id', 'status', 'email'])
      .where('auto_decide_at', '<=', now)
      .where('status', 'in', ['init', 'reviewing'])
      .orderBy('auto_decide_at')
      .limit(20)
      .execute();
    for (const kyc of due) {
      try {
        await svc.database.withTx(async (tx) => {
          const ctx = { tx, now };
          if (kyc.status === 'init') {
            await decideKyc({
              ctx,
              box: svc.box,
              merchantId: kyc.merchant_id,
              input: { requestNo: kyc.request_no, status: 'reviewing', actor: 'sandbox-auto' },
            });
            const next = kyc.email.includes('+manual') ? null : now + svc.config.kyc.autoDecisionMs;
            await tx
              .updateTable('kyc_requests')
              .set({ auto_decide_at: next })
              .where('merchant_id', '=', kyc.merchant_id)
              .where('request_no', '=', kyc.request_no)
              .execute();
          } else {
            const reject = kyc.email.includes('+reject');
            await decideKyc({
              ctx,
              box: svc.box,
              merchantId: kyc.merchant_id,
              input: {
                requestNo: kyc.request_no,
                status: reject ? 'rejected' : 'approved',
                reason: reject ? 'Sandbox: rejected because the e-mail contains +reject' : '',
                actor: 'sandbox-auto',
              },
            });
          }
        });
      } catch (err) {
        // Another worker or a reviewer got there first: nothing to do.
        if (!(err instanceof DomainError && err.kind === 'kycState')) throw err;
      }
    }
    return due.length;
  };
}
