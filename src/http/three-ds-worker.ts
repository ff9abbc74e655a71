import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Services } from '../context.js';
import { expireChallenges } from '../three-ds/expire.js';
import { sendResults } from '../three-ds/results.js';

/** How often the 3-D Secure passes run: challenges past their 5 minutes, results due to the DS. */
export const THREE_DS_PASS_MS = 1000;

/**
 * The ACS's background work, inside the service with the callback worker (CARDPROGRAM_WORKER): every
 * second, the challenges left unfinished past their 5 minutes end N/14 (src/three-ds/expire.ts) and
 * the results due go to the DS (`RReq`, src/three-ds/results.ts). One pass at a time; both are safe
 * on every instance at once. Stops when the service closes.
 */
export const threeDsWorkerPlugin = fp(
  async (app: FastifyInstance, { svc }: { svc: Services }) => {
    if (!svc.config.callbacks.worker) return;
    let running: Promise<unknown> | null = null;
    const timer = setInterval(() => {
      if (running) return;
      running = (async () => {
        await expireChallenges(svc);
        await sendResults(svc);
      })()
        .catch((err) => app.log.warn({ err }, '3-D Secure: a background pass failed'))
        .finally(() => {
          running = null;
        });
    }, THREE_DS_PASS_MS);
    timer.unref();
    app.addHook('onClose', async () => {
      clearInterval(timer);
      await running;
    });
  },
  { name: 'cardprogram-three-ds-worker' },
);
