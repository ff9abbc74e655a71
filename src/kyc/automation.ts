import { type MerchantCtx, type Services, system, type VerbCtx } from '../context.js';
import { DomainError } from '../errors.js';
import { runVerb } from '../runner.js';
import { decideKyc } from './decide.js';
import { kycEmail } from './email.js';

interface DueRequest {
  id: string;
  request_no: string;
  merchant_id: string;
  status: string;
  email: string;
  email_enc: string | null;
}

const KYC_AUTO_REVIEW = 'kyc_auto_review';
/** The sandbox's reviewer, as the reviews it makes name it. */
const SANDBOX_REVIEWER = system('sandbox-auto');
/** A request whose review failed is tried again this much later. */
const RETRY_FAILED_MS = 60_000;

/**
 * The sandbox's automatic KYC reviewer (decisions §2), with documented test values so a merchant can
 * exercise every outcome: a request is taken into review at once, then decided after
 * CARDPROGRAM_KYC_AUTO_DECISION_MS: rejected when the e-mail contains `+reject`, left for a manual
 * decision when it contains `+manual`, approved otherwise.
 */
export function kycAutomation(svc: Services): (now: number) => Promise<number> {
  return async (now) => {
    const due = await svc.database.read((db) =>
      db
        .selectFrom('kyc_requests')
        .select(['id', 'request_no', 'merchant_id', 'status', 'email', 'email_enc'])
        .where('auto_decide_at', '<=', now)
        .where('status', 'in', ['init', 'reviewing'])
        .orderBy('auto_decide_at')
        .limit(20)
        .execute(),
    );
    for (const kyc of due) {
      try {
        await runVerb(svc, autoReviewStep, { input: kyc, merchantId: kyc.merchant_id, actor: SANDBOX_REVIEWER, now });
      } catch (err) {
        // Another worker or a reviewer got there first: nothing to do.
        if (err instanceof DomainError && err.kind === 'kycState') continue;
        // Any other failure is this request's: recorded and put back by a minute, so that it does
        // not stay first in line and hold up every later request (issue 46).
        svc.metrics.sweepFailure(KYC_AUTO_REVIEW);
        svc.log.warn({ err, requestNo: kyc.request_no, merchantId: kyc.merchant_id }, 'sandbox KYC review failed; tried again in a minute');
        await runVerb(svc, putBack, { input: { id: kyc.id, at: now + RETRY_FAILED_MS }, actor: SANDBOX_REVIEWER, now }).catch((e) =>
          svc.log.warn({ err: e }, 'sandbox KYC review: the failed request could not be put back'),
        );
      }
    }
    return due.length;
  };
}

/** A request whose review failed, put back in line for later. */
async function putBack({ ctx, input }: { ctx: VerbCtx; input: { id: string; at: number } }): Promise<void> {
  await ctx.tx.updateTable('kyc_requests').set({ auto_decide_at: input.at }).where('id', '=', input.id).execute();
}

/** One step of the automatic review of one request: into review (and when to decide), or the decision. */
async function autoReviewStep({ ctx, input: kyc }: { ctx: MerchantCtx; input: DueRequest }): Promise<void> {
  const email = kycEmail(ctx.svc.box, kyc);
  if (kyc.status === 'init') {
    await decideKyc({ ctx, input: { requestNo: kyc.request_no, status: 'reviewing' } });
    const next = email.includes('+manual') ? null : ctx.now + ctx.svc.config.kyc.autoDecisionMs;
    await ctx.tx
      .updateTable('kyc_requests')
      .set({ auto_decide_at: next })
      .where('merchant_id', '=', kyc.merchant_id)
      .where('request_no', '=', kyc.request_no)
      .execute();
  } else {
    const reject = email.includes('+reject');
    await decideKyc({
      ctx,
      input: {
        requestNo: kyc.request_no,
        status: reject ? 'rejected' : 'approved',
        reason: reject ? 'Sandbox: rejected because the e-mail contains +reject' : '',
      },
    });
  }
}
