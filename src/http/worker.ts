import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { startWorker } from '../callbacks/manage.js';
import type { CallbackWorker, WorkerJob } from '../callbacks/worker.js';
import type { Services } from '../context.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The callback worker running inside the service, or null (CARDPROGRAM_WORKER=off). */
    worker: CallbackWorker | null;
  }
}

/**
 * The callback worker runs inside the service unless CARDPROGRAM_WORKER=off (then `cardprogram
 * worker` runs it), with the jobs src/app.ts hands it (src/jobs/periodic.ts); it stops, its
 * deliveries under way finished, when the service closes.
 */
export const workerPlugin = fp(
  async (app: FastifyInstance, { svc, jobs }: { svc: Services; jobs: WorkerJob[] }) => {
    const worker = svc.config.callbacks.worker ? startWorker(svc, { jobs }) : null;
    app.decorate('worker', worker);
    // Bounded labels: the 10 merchants with most in flight, then `other` (docs/operations.md, "Metrics").
    if (worker)
      svc.metrics.labeledGauge(
        'cardprogram_callback_in_flight',
        'Callback attempts in flight in this instance’s worker, per merchant: the 10 with most, then other',
        'merchant',
        async () => worker.inFlightByMerchant(),
      );
    app.addHook('onClose', async () => {
      await worker?.stop();
    });
  },
  { name: 'cardprogram-worker' },
);
