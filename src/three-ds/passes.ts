import type { Services } from '../context.js';
import { expireChallenges } from './expire.js';
import { sendResults } from './results.js';

/** How often the 3-D Secure passes run: challenges past their 5 minutes, results due to the DS. */
export const THREE_DS_PASS_MS = 1000;

/** The passes running in this process; stop() waits for the one under way. */
export interface ThreeDsPasses {
  stop(): Promise<void>;
}

/**
 * The ACS's background work (docs/3ds.md, "Results to the DS"): every second, the challenges left
 * unfinished past their 5 minutes end N/14 (src/three-ds/expire.ts) and the results due go to the DS
 * (`RReq`, src/three-ds/results.ts). One pass at a time in a process; both are safe on every
 * instance at once (each challenge's end checks again under its locks, each result is claimed under
 * a lease). Run by the service with its callback worker (src/http/three-ds-worker.ts) and by
 * `cardprogram worker`, so that with CARDPROGRAM_WORKER=off they still run. Its timer does not hold
 * the process open.
 */
export function startThreeDsPasses(svc: Services, intervalMs = THREE_DS_PASS_MS): ThreeDsPasses {
  let running: Promise<unknown> | null = null;
  let stopped = false;
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = (async () => {
      await expireChallenges(svc);
      await sendResults(svc);
    })()
      .catch((err) => svc.log.warn({ err }, '3-D Secure: a background pass failed'))
      .finally(() => {
        running = null;
      });
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
