import { type Services, system } from '../context.js';
import { runVerb } from '../runner.js';
import { expireChallenge } from './challenge.js';

const BATCH = 100;

/**
 * Ends the challenges left unfinished past their 5 minutes (decisions §14.4): N/14, the RReq and
 * the `threeDs.result` callback, as any end. Each in its own run of `expireChallenge`, which checks
 * again under the locks (a challenge that ended meanwhile is left as it is): safe on every instance
 * at once. Returns how many it ended.
 */
export async function expireChallenges(svc: Services): Promise<number> {
  const now = svc.clock();
  const due = await svc.database.read((db) =>
    db
      .selectFrom('three_ds_authentications')
      .select('acs_trans_id')
      .where('challenge_state', 'in', ['pending', 'open'])
      .where('challenge_expires_at', '<=', now)
      .orderBy('challenge_expires_at')
      .limit(BATCH)
      .execute(),
  );
  let ended = 0;
  for (const { acs_trans_id } of due) {
    try {
      if (await runVerb(svc, expireChallenge, { input: { acsTransID: acs_trans_id }, actor: system('acs') })) ended++;
    } catch (err) {
      svc.log.warn(
        { acsTransId: acs_trans_id, err: { message: (err as Error).message } },
        '3-D Secure: ending a challenge past its time failed',
      );
    }
  }
  return ended;
}
