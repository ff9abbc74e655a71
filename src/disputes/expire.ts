import { type Services, system, type VerbCtx } from '../context.js';
import { sweep } from '../db/sweep.js';
import { runVerb } from '../runner.js';
import { expireLocked, isPastDeadline, lockedDispute } from './store.js';

/** Expires one dispute if it is still unsubmitted past its deadline (the card, then the dispute, locked). */
export async function expireDispute({ ctx, input }: { ctx: VerbCtx; input: { disputeId: string } }): Promise<boolean> {
  const { dispute } = await lockedDispute(ctx, input.disputeId);
  if (dispute.status !== 'unsubmitted' || !isPastDeadline(dispute, ctx.now)) return false;
  await expireLocked(ctx, dispute);
  return true;
}

/** The pass's name in the log, the metrics and `sweep_failures`. */
export const DISPUTE_EXPIRY = 'dispute_expiry';

/**
 * The sweep (decisions §13.2): every unsubmitted dispute past its deadline becomes `expired`, with
 * its `dispute.updated` callback. Run hourly by the service beside hold expiry and by `cardprogram
 * disputes expire`; safe on every instance at once (each dispute moves once, under its locks). In
 * pages, each dispute its own unit of work: one that throws is recorded and skipped, the others go
 * on, and the next pass tries it again (src/db/sweep.ts).
 */
export async function expireDisputes(
  svc: Services,
  now: number,
): Promise<{ expired: number; failed: Array<{ disputeId: string; error: string; failures: number }> }> {
  type Due = { id: string; deadline_at: number };
  const { done, failed } = await sweep<Due, string>(svc, DISPUTE_EXPIRY, {
    page: (after, limit) =>
      svc.database.read(async (db) => {
        let q = db
          .selectFrom('disputes')
          .select(['id', 'deadline_at'])
          .where('status', '=', 'unsubmitted')
          .where('deadline_at', '<=', now)
          .orderBy('deadline_at')
          .orderBy('id')
          .limit(limit);
        if (after)
          q = q.where((eb) =>
            eb.or([
              eb('deadline_at', '>', after.deadline_at),
              eb.and([eb('deadline_at', '=', after.deadline_at), eb('id', '>', after.id)]),
            ]),
          );
        return (await q.execute()).map((d) => ({ id: d.id, deadline_at: Number(d.deadline_at) }));
      }),
    id: (d) => d.id,
    each: async (d) =>
      (await runVerb(svc, expireDispute, { input: { disputeId: d.id }, actor: system('dispute-expiry'), now })) ? d.id : null,
  });
  return { expired: done.length, failed: failed.map((f) => ({ disputeId: f.id, error: f.error, failures: f.failures })) };
}
