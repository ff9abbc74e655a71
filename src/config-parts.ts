import type { Config } from './config.js';

/**
 * The service's optional parts, one row each: the ready line names each with its state ("off",
 * or how it is on), so an operator sees at a glance what a start has running (issue 43.7: a
 * misspelled variable left the console off without a word). A new part (wallet tokens) adds its
 * row here.
 */
export const OPTIONAL_PARTS: ReadonlyArray<{ name: string; state: (config: Config) => string | null }> = [
  { name: 'console', state: (c) => (c.console ? 'on' : null) },
  { name: 'link', state: (c) => (c.network.port === null ? null : c.network.tls ? 'TLS' : 'plain TCP') },
  // The 3-D Secure ACS for the card scheme's directory server (docs/3ds.md): mutual TLS, or plain HTTP on loopback (sandbox).
  { name: '3ds', state: (c) => (c.threeDs.port === null ? null : c.threeDs.tls ? 'HTTPS' : 'plain HTTP') },
  // The TSP's endpoint for wallet tokens (docs/tokens.md): mutual TLS, or plain HTTP on loopback (sandbox).
  { name: 'tsp', state: (c) => (c.tokens.port === null ? null : c.tokens.tls ? 'HTTPS' : 'plain HTTP') },
  {
    name: 'metrics',
    state: (c) =>
      [c.metricsToken !== null ? 'token' : null, c.metricsPort !== null ? 'own port' : null].filter((s) => s !== null).join(', ') || null,
  },
  { name: 'https', state: (c) => (c.httpsPort === null ? null : 'on') },
  { name: 'worker', state: (c) => (c.callbacks.worker ? 'on' : null) },
];

/** Each optional part's state, as the ready line shows it: `{ console: 'on', link: 'off', … }`. */
export function partsState(config: Config): Record<string, string> {
  return Object.fromEntries(OPTIONAL_PARTS.map((part) => [part.name, part.state(config) ?? 'off']));
}
