import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Database } from '../db/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** True while `serve` finishes its start-up after listening (the sandbox demo merchant): /healthz answers 503. */
    starting: boolean;
  }
}

/**
 * GET /healthz, for load balancers and operators (docs/operations.md), not part of the merchant API
 * document. Healthy means ready: a script or load balancer that sees 200 finds the demo merchant's
 * file written, and the database answering.
 */
export const healthPlugin = fp(
  async (app: FastifyInstance, { database }: { database: Database }) => {
    app.decorate('starting', false);
    app.get('/healthz', { schema: { hide: true } }, async (_req, reply) => {
      if (app.starting) return reply.status(503).send({ status: 'starting', database: database.dialect });
      try {
        await database.read((db) => db.selectFrom('merchants').select('id').limit(1).execute());
        return { status: 'ok', database: database.dialect };
      } catch (err) {
        app.log.warn({ err }, 'health check failed');
        return reply.status(503).send({ status: 'unavailable', database: database.dialect });
      }
    });
  },
  { name: 'cardprogram-health' },
);
