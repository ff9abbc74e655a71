import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import { sql } from 'kysely';
import { openEndpointsByMerchant, queueDepthByMerchant } from '../callbacks/breaker.js';
import type { Services } from '../context.js';
import { isCurrent } from '../db/migrate.js';
import { sweepFailuresByJob } from '../db/sweep.js';
import { openExceptions } from '../ledger/exceptions-query.js';
import { resultsBacklog } from '../three-ds/results.js';
import { liveTokensByWallet } from '../tokens/live.js';
import { tspCallsBacklog } from '../tokens/tsp-calls.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The answer's result code ("0" on success), set with the error envelope (src/http/errors.ts). */
    resultCode: string;
    /** A declined authorization's reason, set with its envelope. */
    declineReason: string | undefined;
  }
}

export interface MetricsOptions {
  svc: Services;
  /** Bearer token that /metrics on this listener requires; null: /metrics is not served here. */
  token: string | null;
}

/**
 * The monitoring side (docs/operations.md, "Metrics and health"): every request counted and timed by
 * operation and result code; GET /readyz (the database answers and every migration is applied; the
 * read replica's state, when there is one);
 * GET /metrics in Prometheus' text format, behind a bearer token (or on a listener of its own,
 * src/server.ts). Gauges that describe state are read when scraped.
 */
export const metricsPlugin = fp(
  async (app: FastifyInstance, { svc, token }: MetricsOptions) => {
    const { metrics, database } = svc;
    app.decorateRequest('resultCode', '0');
    app.decorateRequest('declineReason', undefined);
    app.addHook('onResponse', async (req, reply) => {
      const operation = req.routeOptions.config?.operation ?? (req.routeOptions.url ? 'other' : 'unknown');
      // A failure answered without the envelope (/metrics' 401) has no result code: not "0", which says success.
      const code = reply.statusCode >= 400 && req.resultCode === '0' ? 'none' : req.resultCode;
      metrics.request(operation, code, reply.statusCode, reply.elapsedTime / 1000);
      if (req.resultCode === '1009') metrics.rateLimitRefusal();
      if (operation === 'sandboxAuthorize' && reply.getHeader('x-idempotent-replay') !== 'true') {
        if (reply.statusCode === 200) metrics.authorization(true, null);
        else if (req.declineReason) metrics.authorization(false, req.declineReason);
      }
    });

    const db = database.db;
    metrics.gauge('cardprogram_callback_queue_oldest_seconds', 'Age of the oldest callback event not yet delivered (0: none)', async () => {
      const row = await db
        .selectFrom('callback_events')
        .select((eb) => eb.fn.min('created_at').as('oldest'))
        .where('status', '=', 'pending')
        .executeTakeFirst();
      return row?.oldest == null ? 0 : Math.max(0, (svc.clock() - Number(row.oldest)) / 1000);
    });
    metrics.gauge('cardprogram_callback_events_failed', 'Callback events given up on (they wait for callbacks retry)', async () => {
      const row = await db
        .selectFrom('callback_events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'failed')
        .executeTakeFirst();
      return Number(row?.n ?? 0);
    });
    // Per merchant, bounded: the 10 largest and `other` (src/callbacks/breaker.ts, capLabels).
    metrics.labeledGauge(
      'cardprogram_callback_endpoint_open',
      'Callback endpoints whose circuit breaker is open (their events wait), per merchant: the 10 with most, then other',
      'merchant',
      () => openEndpointsByMerchant(db),
    );
    // Wallet tokens (decisions §15.6): four wallets, each always reported.
    metrics.labeledGauge(
      'cardprogram_tokens_live',
      'Live wallet tokens (pending, active, suspended), by wallet: apple_pay, google_pay, samsung_pay, card_on_file',
      'wallet',
      () => liveTokensByWallet(db),
    );
    metrics.labeledGauge(
      'cardprogram_callback_queue_depth',
      'Callback events not yet delivered (pending), per merchant: the 10 with most, then other',
      'merchant',
      () => queueDepthByMerchant(db),
    );
    // Advices held in suspense above the forced posts' ceilings, waiting for an operator (decisions §12.13).
    metrics.gauge(
      'cardprogram_network_exceptions_open',
      'Card network advices held in suspense above the forced posts’ ceilings, waiting for an operator to post or return them',
      async () => (await openExceptions(db)).count,
    );
    // The periodic passes' rows that keep failing (src/db/sweep.ts): labels are the passes, a few.
    metrics.labeledGauge(
      'cardprogram_sweep_items_failing',
      'Rows the last passes of a periodic job failed on and skipped (they are tried again every pass), by job',
      'job',
      async () => (await sweepFailuresByJob(db, svc.clock())).map((r) => [r.job, r.items]),
    );
    metrics.labeledGauge(
      'cardprogram_sweep_oldest_failure_seconds',
      'How long the row a periodic job has failed on the longest has kept failing, by job',
      'job',
      async () => (await sweepFailuresByJob(db, svc.clock())).map((r) => [r.job, r.oldestSeconds]),
    );
    // The ACS's results waiting for the DS (RReq): read once per scrape for the three gauges.
    if (svc.config.threeDs.port !== null || svc.config.threeDs.ds !== null) {
      let backlog: ReturnType<typeof resultsBacklog> | null = null;
      metrics.onScrape(() => {
        backlog = null;
      });
      const read = () => {
        backlog ??= resultsBacklog(db, svc.clock());
        return backlog;
      };
      metrics.gauge(
        'cardprogram_3ds_results_pending',
        '3-D Secure results (RReq) waiting to be sent to the DS, or tried again',
        async () => (await read()).pending,
      );
      metrics.gauge(
        'cardprogram_3ds_results_oldest_seconds',
        'Age of the oldest 3-D Secure result (RReq) not yet taken by the DS (0: none)',
        async () => (await read()).oldestSeconds,
      );
      metrics.gauge(
        'cardprogram_3ds_results_failed',
        '3-D Secure results (RReq) given up on (an Erro from the DS, or 24 hours of failures)',
        async () => (await read()).failed,
      );
    }
    // The wallet tokens' changes waiting for the TSP: read once per scrape for the three gauges.
    if (svc.config.tspClient !== null) {
      let tsp: ReturnType<typeof tspCallsBacklog> | null = null;
      metrics.onScrape(() => {
        tsp = null;
      });
      const read = () => {
        tsp ??= tspCallsBacklog(db, svc.clock());
        return tsp;
      };
      metrics.gauge(
        'cardprogram_tsp_calls_pending',
        'Token changes waiting to be told to the TSP, or tried again',
        async () => (await read()).pending,
      );
      metrics.gauge(
        'cardprogram_tsp_calls_oldest_seconds',
        'Age of the oldest token change the TSP has not taken yet (0: none)',
        async () => (await read()).oldestSeconds,
      );
      metrics.gauge(
        'cardprogram_tsp_calls_failed',
        'Token changes the TSP never took (a final refusal, or 24 hours of failures)',
        async () => (await read()).failed,
      );
    }
    const pool = database.pool;
    if (pool) {
      // The pool as it was when the scrape began: the database gauges' own queries take idle
      // connections, and read during them an idle pool showed "waiting 2" beside "idle 2".
      let state = pool();
      metrics.onScrape(() => {
        state = pool();
      });
      metrics.gauge('cardprogram_db_pool_connections', 'PostgreSQL connections open', () => state.total);
      metrics.gauge('cardprogram_db_pool_idle', 'PostgreSQL connections idle', () => state.idle);
      metrics.gauge('cardprogram_db_pool_waiting', 'Callers waiting for a PostgreSQL connection', () => state.waiting);
    }

    const replica = svc.replica;
    if (replica) {
      metrics.gauge('cardprogram_db_replica_ready', 'Read replica in use: 1; lagging or unavailable (reads go to the primary): 0', () =>
        replica.status().status === 'ready' ? 1 : 0,
      );
      metrics.gauge('cardprogram_db_replica_lag_seconds', 'How far behind the primary the read replica may be (-1: not known)', () => {
        const lag = replica.status().lagMs;
        return lag === null ? -1 : lag / 1000;
      });
    }

    app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
      // isCurrent says "not known to be current" for any failure: whether the database answers at all
      // is asked first, so a database that is down is not reported as one missing a migration.
      try {
        await sql`select 1`.execute(database.db);
      } catch {
        return reply.status(503).send({ status: 'database unavailable', database: database.dialect });
      }
      if (!(await isCurrent(database))) return reply.status(503).send({ status: 'migrations pending', database: database.dialect });
      // The replica is reported, not required: while it lags or is down its reads go to the primary.
      if (svc.replica) return { status: 'ready', database: database.dialect, replica: svc.replica.status() };
      return { status: 'ready', database: database.dialect };
    });

    if (token !== null) {
      const expected = Buffer.from(`Bearer ${token}`);
      app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
        const sent = Buffer.from(req.headers.authorization ?? '');
        // Constant time: a comparison that stops early tells an attacker how much of a guess is right.
        if (sent.length !== expected.length || !timingSafeEqual(sent, expected)) {
          return reply.status(401).header('www-authenticate', 'Bearer').send({ status: 'unauthorized' });
        }
        return sendMetrics(svc, reply);
      });
    }
  },
  { name: 'cardprogram-metrics' },
);

/** The scrape itself: Prometheus' text format. */
export async function sendMetrics(svc: Services, reply: FastifyReply): Promise<FastifyReply> {
  return reply.header('content-type', svc.metrics.contentType).send(await svc.metrics.text());
}
