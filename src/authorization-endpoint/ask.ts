import { deliver, type Resolver } from '../callbacks/deliver.js';
import { webhookHeaders } from '../callbacks/webhook-signature.js';
import type { EndpointOutcome } from '../db/schema.js';

/** What the merchant's endpoint said, and how long it took. */
export interface EndpointAnswer {
  outcome: EndpointOutcome;
  /** The merchant's reason for a decline, at most 200 characters of plain text; else null. */
  reason: string | null;
  latencyMs: number;
  /** Why the answer could not be used (for the log): the transport's error or what was wrong with it. */
  problem: string | null;
  /** When the request was on the wire, in ms from the start of the attempt (DNS and connection); null if it never was. */
  sentMs: number | null;
}

/**
 * Text fit for a record and a message: no control characters (C0, DEL, C1), no invisible
 * formatting characters (direction overrides and isolates, line separators, BOM).
 */
const plain = (s: string) =>
  ![...s].some((c) => {
    const p = c.codePointAt(0) ?? 0;
    return (
      p < 0x20 ||
      (p >= 0x7f && p <= 0x9f) ||
      p === 0x2028 ||
      p === 0x2029 ||
      (p >= 0x202a && p <= 0x202e) ||
      (p >= 0x2066 && p <= 0x2069) ||
      p === 0xfeff
    );
  });

/** An endpoint's answer as JSON: a 2xx whose body parses; else why it cannot be read. */
function jsonAnswer(status: number | null, body: string): { parsed: unknown } | string {
  if (status === null || status < 200 || status > 299) return `answered HTTP ${status}`;
  try {
    return { parsed: JSON.parse(body) };
  } catch {
    return 'the answer is not JSON';
  }
}

/**
 * Reads a decision endpoint's answer (the 3-D Secure one, the wallet tokens' one): a 2xx whose body
 * is JSON `{"decision": …}` with one of `decisions`; anything else cannot be read.
 */
export function readDecisionAnswer<D extends string>(
  decisions: readonly D[],
  status: number | null,
  body: string,
): { decision: D } | string {
  const json = jsonAnswer(status, body);
  if (typeof json === 'string') return json;
  const decision = (json.parsed as { decision?: unknown } | null)?.decision;
  return typeof decision === 'string' && (decisions as readonly string[]).includes(decision)
    ? { decision: decision as D }
    : `the answer has no "decision" of ${decisions.slice(0, -1).join(', ')} or ${decisions.at(-1)}`;
}

/**
 * Reads an endpoint's answer: a 2xx whose body is JSON `{"approved": true|false, "reason"?: string}`.
 * Anything else (another status, not JSON, `approved` missing or not a boolean) is unreadable.
 */
export function readAnswer(status: number | null, body: string): { approved: boolean; reason: string | null } | string {
  const json = jsonAnswer(status, body);
  if (typeof json === 'string') return json;
  const parsed = json.parsed;
  if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { approved?: unknown }).approved !== 'boolean') {
    return 'the answer has no boolean "approved"';
  }
  const { approved, reason } = parsed as { approved: boolean; reason?: unknown };
  // At most 200 characters, cut between characters (never inside a surrogate pair).
  const text = typeof reason === 'string' && plain(reason) ? [...reason].slice(0, 200).join('') : null;
  return { approved, reason: text || null };
}

/** What became of one ask, for the metrics (docs/operations.md): the sandbox's flow and the network link count alike. */
export function endpointResult(answer: {
  outcome: string;
  sentMs: number | null;
}): 'answered' | 'error' | 'timeout_before_sending' | 'timeout_waiting' {
  if (answer.outcome !== 'timeout') return answer.outcome === 'error' && answer.sentMs === null ? 'error' : 'answered';
  return answer.sentMs === null ? 'timeout_before_sending' : 'timeout_waiting';
}

/** What one ask of a merchant's endpoint gave: its answer as `read` made it, or why there is none. */
export interface MerchantAnswer<T> {
  /** The answer; null: none in time (timedOut) or none readable (problem says why). */
  answer: T | null;
  timedOut: boolean;
  latencyMs: number;
  problem: string | null;
  sentMs: number | null;
}

/**
 * Asks a merchant's endpoint once: an event of `type`, signed as callbacks are (Standard Webhooks,
 * the merchant's webhook secret; `webhook-id` is `id`), posted with the SSRF rules of callbacks
 * checked at connect time. No answer within `timeoutMs` is a timeout; `read` turns the answer into
 * what the caller needs, or says why it cannot (a string). The one low-level ask of the service:
 * the authorization endpoint (askEndpoint, below) and the 3-D Secure decision endpoint
 * (src/three-ds/decision-endpoint.ts) both ask through it.
 */
export async function askMerchant<T>(opts: {
  url: string;
  webhookSecret: string;
  id: string;
  type: string;
  payload: Record<string, unknown>;
  timeoutMs: number;
  env: 'sandbox' | 'production';
  now: number;
  resolver?: Resolver;
  read: (status: number | null, body: string) => T | string;
}): Promise<MerchantAnswer<T>> {
  const body = JSON.stringify({ type: opts.type, ...opts.payload });
  const result = await deliver({
    url: opts.url,
    body,
    headers: webhookHeaders(opts.webhookSecret, opts.id, Math.floor(opts.now / 1000), body),
    timeoutMs: opts.timeoutMs,
    env: opts.env,
    ...(opts.resolver ? { resolver: opts.resolver } : {}),
  });
  const latencyMs = Math.min(result.durationMs, opts.timeoutMs);
  if (result.error !== null) {
    return { answer: null, timedOut: result.error.startsWith('timed out'), latencyMs, problem: result.error, sentMs: result.sentMs };
  }
  const answer = opts.read(result.status, result.excerpt);
  if (typeof answer === 'string') return { answer: null, timedOut: false, latencyMs, problem: answer, sentMs: result.sentMs };
  return { answer, timedOut: false, latencyMs, problem: null, sentMs: result.sentMs };
}

/**
 * Asks the merchant's endpoint (decisions §11): an `authorization.request` event, signed as callbacks
 * are (Standard Webhooks, the merchant's webhook secret; `webhook-id` is the authorization's id),
 * posted once, with the SSRF rules of callbacks checked at connect time. No answer within
 * `timeoutMs` is a timeout; an answer that cannot be read is an error.
 */
export async function askEndpoint(opts: {
  url: string;
  webhookSecret: string;
  id: string;
  payload: Record<string, unknown>;
  timeoutMs: number;
  env: 'sandbox' | 'production';
  now: number;
  resolver?: Resolver;
}): Promise<EndpointAnswer> {
  const asked = await askMerchant({ ...opts, type: 'authorization.request', read: readAnswer });
  const { latencyMs, problem, sentMs } = asked;
  if (asked.answer === null) return { outcome: asked.timedOut ? 'timeout' : 'error', reason: null, latencyMs, problem, sentMs };
  return { outcome: asked.answer.approved ? 'approved' : 'declined', reason: asked.answer.reason, latencyMs, problem: null, sentMs };
}
