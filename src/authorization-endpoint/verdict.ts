import type { Kysely } from 'kysely';
import type { MerchantCtx, Services } from '../context.js';
import type { AuthorizationDefault, DB, EndpointOutcome } from '../db/schema.js';
import { askEndpoint, type EndpointAnswer, endpointResult } from './ask.js';

/**
 * The one ask of a merchant's authorization endpoint (decisions §11, §12.8), for the card network
 * link's 0100 (src/card-network/authorize.ts) and the sandbox's authorize over HTTP
 * (src/sandbox/authorize-with-endpoint.ts): its metrics (docs/operations.md), its deadline, its log
 * line, and the three decisions at most that an approval unlocked but not locked (or the reverse)
 * can take. The rules' pre-check (src/ledger/authorize.ts, `endpointRequest`) is the caller's: it
 * says what the endpoint is asked, and whether at all.
 */

/** The endpoint's part in a decision: its answer, or none, and what then applies. */
export interface EndpointVerdict {
  asked: true;
  tradeId: string;
  outcome: EndpointOutcome;
  /** The merchant's reason for a decline (at most 200 characters). */
  reason: string | null;
  latencyMs: number;
  /** What applies when the outcome is timeout or error: the merchant's default. */
  fallback: 'approve' | 'decline';
}

/** The endpoint was not asked (the rules declined without it): the verb decides alone, or says so. */
export type NotAsked = { asked: false; tradeId: string };

/** Thrown by the verb when the program approves but the merchant's endpoint was not asked: ask it, then run again. */
export class EndpointNotAsked extends Error {
  constructor() {
    super('the authorization endpoint was not asked');
    this.name = 'EndpointNotAsked';
  }
}

/** A merchant's endpoint as it is asked (src/directories/merchants.ts keeps it with the merchant). */
export interface EndpointSettings {
  url: string;
  timeoutMs: number;
  fallback: AuthorizationDefault;
  webhookSecret: string;
}

/**
 * Asks the endpoint about `request`, with what is left until `deadline` (epoch ms; no longer than
 * the endpoint's own timeout). Past the deadline it is not asked at all (`timeout_before_sending`,
 * the latency `lateMs`). `record` keeps the answer before the verb runs (the sandbox's claim, for a
 * retry that comes after a crash).
 */
export async function askForVerdict(
  svc: Services,
  endpoint: EndpointSettings,
  ask: {
    merchantId: string;
    tradeId: string;
    request: Record<string, unknown>;
    deadline: number;
    /** The webhook's timestamp. */
    now: number;
    lateMs: number;
    record?: (answer: EndpointAnswer) => Promise<unknown>;
  },
): Promise<EndpointVerdict> {
  const { merchantId, tradeId } = ask;
  svc.metrics.endpointAsked();
  const left = ask.deadline - svc.clock();
  if (left <= 0) {
    svc.metrics.endpointResult('timeout_before_sending');
    return { asked: true, tradeId, outcome: 'timeout', reason: null, latencyMs: ask.lateMs, fallback: endpoint.fallback };
  }
  const answer = await askEndpoint({
    url: endpoint.url,
    webhookSecret: endpoint.webhookSecret,
    id: tradeId,
    payload: ask.request,
    timeoutMs: Math.min(endpoint.timeoutMs, left),
    env: svc.config.env,
    now: ask.now,
  });
  if (answer.sentMs !== null) svc.metrics.endpointPhase('connect', answer.sentMs / 1000);
  svc.metrics.endpointResult(endpointResult(answer));
  if (answer.problem) svc.log.warn({ merchantId, tradeId, outcome: answer.outcome, problem: answer.problem }, 'authorization endpoint');
  await ask.record?.(answer);
  return { asked: true, tradeId, outcome: answer.outcome, reason: answer.reason, latencyMs: answer.latencyMs, fallback: endpoint.fallback };
}

/**
 * The verb run with the endpoint's verdict, at most three times: the rules are checked without
 * locks and the endpoint asked only about what they would approve; if they approve under the lock
 * what they declined unlocked (the card changed meanwhile), the verb says so (EndpointNotAsked) and
 * the endpoint has its say. A state that flips three times is an error.
 */
export async function withVerdict<V, T>(verdict: (attempt: number) => Promise<V>, run: (verdict: V) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const v = await verdict(attempt);
    try {
      return await run(v);
    } catch (err) {
      if (!(err instanceof EndpointNotAsked) || attempt === 3) throw err;
    }
  }
}
