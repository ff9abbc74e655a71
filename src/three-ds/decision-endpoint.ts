import { askMerchant, readDecisionAnswer } from '../authorization-endpoint/ask.js';
import type { Services } from '../context.js';

/** How long the merchant's 3-D Secure decision endpoint may take (decisions §14.3.4). */
export const DECISION_TIMEOUT_MS = 1000;

export const ENDPOINT_DECISIONS = ['frictionless', 'challenge', 'decline'] as const;
export type EndpointDecision = (typeof ENDPOINT_DECISIONS)[number];

/** What the endpoint said: a decision, or none in time (timeout) or none readable (error): both mean challenge. */
export interface DecisionVerdict {
  outcome: EndpointDecision | 'timeout' | 'error';
  ms: number;
}

/** An answer is a 2xx with JSON `{"decision": "frictionless"|"challenge"|"decline"}`; anything else cannot be read. */
export function readDecision(status: number | null, body: string): { decision: EndpointDecision } | string {
  return readDecisionAnswer(ENDPOINT_DECISIONS, status, body);
}

/**
 * Asks the merchant's decision endpoint once, through the service's one low-level ask
 * (src/authorization-endpoint/ask.ts askMerchant): a `threeDs.decision` event signed as
 * callbacks are (`webhook-id` is the acsTransID), 1 s to answer. Asked outside any transaction,
 * so a slow merchant holds no lock.
 */
export async function askDecision(
  svc: Services,
  endpoint: { url: string; webhookSecret: string },
  acsTransId: string,
  payload: Record<string, unknown>,
): Promise<DecisionVerdict> {
  const asked = await askMerchant({
    url: endpoint.url,
    webhookSecret: endpoint.webhookSecret,
    id: acsTransId,
    type: 'threeDs.decision',
    payload: { acsTransID: acsTransId, ...payload },
    timeoutMs: DECISION_TIMEOUT_MS,
    env: svc.config.env,
    now: svc.clock(),
    read: readDecision,
  });
  if (asked.answer !== null) return { outcome: asked.answer.decision, ms: asked.latencyMs };
  if (asked.problem) svc.log.info({ acsTransId, problem: asked.problem }, '3-D Secure decision endpoint: no usable answer, challenge');
  return { outcome: asked.timedOut ? 'timeout' : 'error', ms: asked.latencyMs };
}
