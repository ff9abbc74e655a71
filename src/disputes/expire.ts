import type { Services, VerbCtx } from '../context.js';
import { runVerb } from '../runner.js';
import { expireLocked, isPastDeadline, lockedDispute } from './store.js';

/** Expires one dispute if it is still unsubmitted past its deadline (the card, then the dispute, locked). */
export async function expireDispute({ ctx, input }: { ctx: VerbCtx; input: { disputeId: string } }): Promise<boolean> {
  const { dispute } = await lockedDispute(ctx, input.disputeId);
  if (dispute.status !== 'unsubmitted' || !isPastDeadline(dispute, ctx.now)) return false;
  await expireLocked(ctx, dispute);
  return true;
}

/**
 * The sweep (decisions §13.2): every unsubmitted dispute past its deadline becomes `expired`, with
 * its `dispute.updated` callback. Run hourly by the service beside hold expiry and by `cardprogram
 * disputes expire`; safe on every instance at once (each dispute moves once, under its locks).
 */
export async function expireDisputes(svc: Services, now: number): Promise<{ expired: number }> {
  let expired = 0;
  for (;;) {
    const due = await svc.database.db
      .selectFrom('disputes')
      .select('id')
      .where('status', '=', 'unsubmitted')
      .where('deadline_at', '<=', now)
      .orderBy('deadline_at')
      .limit(100)
      .execute();
    let moved = 0;
    for (const d of due) {
      if (await runVerb(svc, expireDispute, { input: { disputeId: d.id }, actor: 'dispute-expiry', now })) moved++;
    }
    expired += moved;
    if (due.length < 100 || moved === 0) return { expired };
  }
}
