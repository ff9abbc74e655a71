/**
 * The endpoint an event goes to: its URL's origin (scheme, host and port). Slots, fairness and the
 * circuit breaker are per merchant and endpoint (docs/callbacks.md, "Isolation"). A URL that does
 * not parse is its own endpoint (its attempts fail at once).
 */
export function endpointOf(url: string): string {
  try {
    const origin = new URL(url).origin;
    if (origin && origin !== 'null') return origin.slice(0, 300);
  } catch {}
  return url.slice(0, 300);
}
