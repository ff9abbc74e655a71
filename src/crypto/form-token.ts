import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The form token of a browser session (the console's, the card page's): an HMAC of a fixed label
 * (which of the two) under the session id, which only the cookie's holder knows. Every form carries
 * it; a form posted from another site cannot. The label keeps one session's token from passing as
 * the other's.
 */
export function sessionFormToken(sessionId: string, label: string): string {
  return createHmac('sha256', sessionId).update(label).digest('base64url');
}

/** Whether a posted token is the session's, compared in constant time. */
export function sessionFormTokenMatches(sessionId: string, label: string, sent: unknown): boolean {
  if (typeof sent !== 'string') return false;
  const a = Buffer.from(sessionFormToken(sessionId, label));
  const b = Buffer.from(sent);
  return a.length === b.length && timingSafeEqual(a, b);
}
