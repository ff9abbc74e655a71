import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/** How long a close waits for handlers still running: one that never ends must not hold it for ever. */
const DRAIN_LIMIT_MS = 10_000;

/**
 * Requests still being handled when the service closes: the database stays open until they are
 * answered (a request counts from its arrival; one whose client went away, until its handler ends).
 * Register it before the routes (it wraps each route's handler as the route is added) and after
 * whatever closes the database (onClose hooks run last-registered first, so its wait comes before).
 */
export const inFlightPlugin = fp(
  async (app: FastifyInstance) => {
    let count = 0;
    let idle: (() => void) | null = null;
    const tracked = new WeakSet<object>();
    const release = (req: object) => {
      if (!tracked.delete(req)) return;
      count--;
      if (count === 0) idle?.();
    };
    app.addHook('onRequest', async (req) => {
      tracked.add(req);
      count++;
    });
    app.addHook('onResponse', async (req) => release(req));
    app.addHook('onRoute', (route) => {
      const handler = route.handler;
      // The handler's own shape is kept: a synchronous one (a static file) stays synchronous.
      route.handler = function (this: unknown, req, reply) {
        // No response will be sent to a client that has gone: the handler's end is the request's end.
        const settled = () => {
          if (req.raw.destroyed) release(req);
        };
        let result: unknown;
        try {
          result = handler.call(this as never, req, reply);
        } catch (err) {
          settled();
          throw err;
        }
        if (result instanceof Promise) return result.finally(settled);
        settled();
        return result;
      } as typeof handler;
    });
    app.addHook('onClose', async () => {
      if (count === 0) return;
      await new Promise<void>((resolve) => {
        idle = resolve;
        setTimeout(resolve, DRAIN_LIMIT_MS).unref();
      });
    });
  },
  { name: 'cardprogram-in-flight' },
);
