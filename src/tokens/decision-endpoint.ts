import { askMerchant, readDecisionAnswer } from '../authorization-endpoint/ask.js';
import type { Services } from '../context.js';
import { PROVISION_DECISIONS, type ProvisionDecision } from '../db/schema.js';
import type { EndpointVerdict } from './decide.js';

/** How long the merchant's token decision endpoint may take (decisions §15.3). */
export const TOKEN_DECISION_TIMEOUT_MS = 500;

/** An answer is a 2xx with JSON `{"decision": "approve"|"require_authentication"|"decline"}`; anything else cannot be read. */
export function readTokenDecision(status: number | null, body: string): { decision: ProvisionDecision } | string {
  return readDecisionAnswer(PROVISION_DECISIONS, status, body);
}

/**
 * Asks the merchant's token decision endpoint once, through the service's one low-level ask
 * (src/callbacks/authorization-request.ts askMerchant): a `token.decision` event signed as callbacks
 * are (`webhook-id` is the provisioning's requestId), 500 ms to answer; no readable answer in time is
 * require_authentication. Asked outside any transaction: a slow merchant holds no lock.
 */
export async function askTokenDecision(
  svc: Services,
  endpoint: { url: string; webhookSecret: string },
  requestId: string,
  payload: Record<string, unknown>,
): Promise<EndpointVerdict> {
  const asked = await askMerchant({
    url: endpoint.url,
    webhookSecret: endpoint.webhookSecret,
    id: `tokreq_${requestId}`,
    type: 'token.decision',
    payload,
    timeoutMs: TOKEN_DECISION_TIMEOUT_MS,
    env: svc.config.env,
    now: svc.clock(),
    read: readTokenDecision,
  });
  if (asked.answer !== null) return asked.answer.decision;
  if (asked.problem)
    svc.log.info({ requestId, problem: asked.problem }, 'token decision endpoint: no usable answer, require_authentication');
  return asked.timedOut ? 'timeout' : 'error';
}
