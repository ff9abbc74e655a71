import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { type Browser, type BrowserContext, type BrowserContextOptions, chromium, type Page } from 'playwright-core';
import { ROOT } from './cli.js';

/** Debian's chromium (apt-get install chromium; .ci/run installs it); never a downloaded browser. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Where screenshots are kept (gitignored; docs/images holds the ones the docs show). */
export const ARTIFACTS = join(ROOT, 'test-artifacts');

// This machine has no network: these flags stop Chromium's own background connections.
export const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const missing = !existsSync(CHROMIUM);
// On CI the browser must be there (.ci/run installs it); elsewhere its absence is a visible skip.
if (missing && process.env.CI) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
/** The `skip` option of a browser test. */
export const skip: string | false = missing ? `no browser at ${CHROMIUM} (apt-get install chromium)` : false;

/** Listens on a free loopback port and returns the app's origin (http://127.0.0.1:PORT). */
export async function listenOnLoopback(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
}

/**
 * Chromium started for a test (closed after it) and a page of a new context, with the CSP
 * violations the page's console reports collected: a page that needs nothing the CSP forbids
 * leaves `cspErrors` empty.
 */
export async function browserPage(
  t: TestContext,
  context: BrowserContextOptions,
): Promise<{ browser: Browser; context: BrowserContext; page: Page; cspErrors: string[] }> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  t.after(() => browser.close());
  const ctx = await browser.newContext(context);
  const page = await ctx.newPage();
  const cspErrors: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
  });
  return { browser, context: ctx, page, cspErrors };
}
