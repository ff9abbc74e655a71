import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { startWorker } from '../callbacks/manage.js';
import type { CallbackWorker, WorkerJob } from '../callbacks/worker.js';
import type { Services } from '../context.js';
import { type PeriodicJob, runOnTimers } from './reaper.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The callback worker running inside the service, or null (CARDPROGRAM_WORKER=off). */
    worker: CallbackWorker | null;
  }
}

/**
 * The callback worker runs inside the service unless CARDPROGRAM_WORKER=off (then `cardprogram
 * worker` runs it), with the jobs src/app.ts hands it (src/jobs/periodic.ts): `jobs` on each of its
 * polls, `withWorker` on their own timers beside it (the 3-D Secure passes). It stops, its deliveries
 * and passes under way finished, when the service closes.
 */
export const workerPlugin = fp(
  async (app: FastifyInstance, { svc, jobs, withWorker }: { svc: Services; jobs: WorkerJob[]; withWorker: readonly PeriodicJob[] }) => {
    const worker = svc.config.callbacks.worker ? startWorker(svc, { jobs }) : null;
    const timed = svc.config.callbacks.worker ? runOnTimers(withWorker, { clock: svc.clock, log: svc.log }) : null;
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
      await Promise.all([worker?.stop(), timed?.stop()]);
    });
  },
  { name: 'cardprogram-worker' },
);
