import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Services } from '../context.js';
import { startThreeDsPasses } from '../three-ds/passes.js';

/**
 * The ACS's background work inside the service with the callback worker (CARDPROGRAM_WORKER): the
 * passes of src/three-ds/passes.ts every second (challenges past their time, results to the DS).
 * With the worker off, `cardprogram worker` runs them. Stops when the service closes.
 */
export const threeDsWorkerPlugin = fp(
  async (app: FastifyInstance, { svc }: { svc: Services }) => {
    if (!svc.config.callbacks.worker) return;
    const passes = startThreeDsPasses(svc);
    app.addHook('onClose', async () => {
      await passes.stop();
    });
  },
  { name: 'cardprogram-three-ds-worker' },
);
