import type { EndpointRow } from '../callbacks/breaker.js';
import { esc, link, pill, table, when } from './view.js';

/** The circuit breakers that are open or counting failures (docs/callbacks.md, "Isolation"). */
export function endpointsTable(rows: EndpointRow[]): string {
  if (rows.length === 0) return '';
  const state = (r: EndpointRow) =>
    r.state === 'open'
      ? `${pill(r.probe_owner ? 'open, probing' : 'open', 'bad')} <span class="muted">next probe ${when(r.open_until)}</span>`
      : pill('closed', 'warn');
  return `<h2>Endpoints</h2>${table(
    'Circuit breakers: an open endpoint’s events wait (not attempted, not counted) until a probe is answered',
    ['Merchant', 'Endpoint', 'State', 'Failures in a row', 'Slot time they held', 'Last error'],
    rows.map((r) => [
      link(`/console/callbacks?merchant=${r.merchant_id}`, r.merchant_id),
      `<code>${esc(r.endpoint)}</code>`,
      state(r),
      String(r.failures),
      `${(Number(r.held_ms) / 1000).toFixed(1)} s`,
      esc(r.last_error ?? ''),
    ]),
    [3, 4],
  )}`;
}
