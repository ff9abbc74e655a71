import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * A job the reaper runs on a timer: what it does (a failure is logged as "<what> failed"), how
 * often, and the pass itself, given the moment it runs at. The service's list is src/jobs/periodic.ts.
 */
export interface PeriodicJob {
  what: string;
  everyMs: number;
  run: (now: number) => Promise<unknown>;
}

export interface ReaperOptions {
  /** The jobs, handed over by src/app.ts from the one registry (src/jobs/periodic.ts). */
  jobs: readonly PeriodicJob[];
  clock: () => number;
}

/**
 * Runs each periodic job every `everyMs` (one timer per period; the jobs of a period in their order),
 * until the service closes. It knows no job: each is given to it (src/jobs/periodic.ts).
 *
 * Each job is a pass of its own (one failing stops no other), and each works in pages, each row its
 * own unit of work: a row that fails is logged, counted and recorded, and skipped; the next pass tries
 * it again (src/db/sweep.ts; docs/operations.md, "Periodic passes").
 */
export const reaperPlugin = fp(
  async (app: FastifyInstance, { jobs, clock }: ReaperOptions) => {
    const timers = [...new Set(jobs.map((job) => job.everyMs))].map((everyMs) => {
      const due = jobs.filter((job) => job.everyMs === everyMs);
      const timer = setInterval(() => {
        for (const job of due) job.run(clock()).catch((err) => app.log.warn({ err }, `${job.what} failed`));
      }, everyMs);
      timer.unref();
      return timer;
    });
    app.addHook('onClose', async () => {
      for (const timer of timers) clearInterval(timer);
    });
  },
  { name: 'cardprogram-reaper' },
);
