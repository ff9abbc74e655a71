import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * A job run on a timer: what it does (a failure is logged as "<what> failed"), how often, and the
 * pass itself, given the moment it runs at. The service's list is src/jobs/periodic.ts.
 */
export interface PeriodicJob {
  what: string;
  everyMs: number;
  run: (now: number) => Promise<unknown>;
}

/** Jobs running on their timers; stop() waits for the passes under way. */
export interface RunningJobs {
  stop(): Promise<void>;
}

/**
 * Runs each job every `everyMs` (one timer per period; the jobs of a period in their order), one pass
 * of a job at a time: a tick that finds the job's last pass still under way skips it. The timers do
 * not hold the process open. It knows no job: each is given to it (src/jobs/periodic.ts).
 */
export function runOnTimers(jobs: readonly PeriodicJob[], { clock, log }: { clock: () => number; log: FastifyBaseLogger }): RunningJobs {
  const running = new Map<PeriodicJob, Promise<unknown>>();
  let stopped = false;
  const timers = [...new Set(jobs.map((job) => job.everyMs))].map((everyMs) => {
    const due = jobs.filter((job) => job.everyMs === everyMs);
    const timer = setInterval(() => {
      for (const job of due) {
        if (stopped || running.has(job)) continue;
        running.set(
          job,
          job
            .run(clock())
            .catch((err) => log.warn({ err }, `${job.what} failed`))
            .finally(() => running.delete(job)),
        );
      }
    }, everyMs);
    timer.unref();
    return timer;
  });
  return {
    async stop() {
      stopped = true;
      for (const timer of timers) clearInterval(timer);
      await Promise.all(running.values());
    },
  };
}

export interface ReaperOptions {
  /** The jobs, handed over by src/app.ts from the one registry (src/jobs/periodic.ts). */
  jobs: readonly PeriodicJob[];
  clock: () => number;
}

/**
 * Runs each periodic job on its timer (runOnTimers) until the service closes.
 *
 * Each job is a pass of its own (one failing stops no other), and each works in pages, each row its
 * own unit of work: a row that fails is logged, counted and recorded, and skipped; the next pass tries
 * it again (src/db/sweep.ts; docs/operations.md, "Periodic passes").
 */
export const reaperPlugin = fp(
  async (app: FastifyInstance, { jobs, clock }: ReaperOptions) => {
    const running = runOnTimers(jobs, { clock, log: app.log });
    app.addHook('onClose', async () => {
      await running.stop();
    });
  },
  { name: 'cardprogram-reaper' },
);
