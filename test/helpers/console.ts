import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import type { Config } from '../../src/config.js';
import { createOperator } from '../../src/console/accounts.js';
import { codeAt, stepOf } from '../../src/console/totp.js';
import type { OperatorRole } from '../../src/db/schema.js';
import { runVerb } from '../../src/runner.js';
import { build, type Harness } from './app.js';
import type { TestDialect } from './db.js';

/** The console's harness: the app with the console on, and a clock the test moves (TOTP codes and session bounds follow it). */
export interface ConsoleHarness extends Harness {
  now: { ms: number };
  /** Moves the clock on (by default one TOTP step, so the next code is a new one). */
  advance(ms?: number): void;
}

export async function buildConsole(
  t: TestContext,
  dialect: TestDialect,
  overrides: Partial<Config> = {},
  opts: { logLines?: string[] } = {},
): Promise<ConsoleHarness> {
  const now = { ms: Date.now() };
  const h = await build(t, dialect, { console: true, ...overrides }, { clock: () => now.ms, ...opts });
  return { ...h, now, advance: (ms = 30_000) => (now.ms += ms) };
}

export interface TestOperator {
  email: string;
  role: OperatorRole;
  password: string;
  secret: string | null;
}

/** A form body, as a browser sends it. */
export const formBody = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** The value of a hidden input on a page. */
export function hidden(html: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  assert.ok(m, `no ${name} field on the page`);
  return (m[1] as string).replace(/&#(\d+);/g, (_, c) => String.fromCharCode(Number(c)));
}

/** An operator created as an admin or the CLI would, then set up through the set-up page (password and, by default, TOTP). */
export async function makeOperator(
  h: ConsoleHarness,
  email: string,
  role: OperatorRole,
  opts: { totp?: boolean } = {},
): Promise<TestOperator> {
  const made = await runVerb(h.app.svc, createOperator, { input: { email, role }, actor: 'test' });
  const setup = await h.app.inject({ method: 'GET', url: `/console/setup?token=${made.setupToken}` });
  assert.equal(setup.statusCode, 200, setup.body);
  const secret = hidden(setup.body, 'secret');
  const password = 'correct horse battery staple';
  const withTotp = opts.totp ?? true;
  const res = await h.app.inject({
    method: 'POST',
    url: '/console/setup',
    headers: FORM,
    payload: formBody({
      token: made.setupToken,
      secret,
      password,
      password2: password,
      code: withTotp ? codeAt(secret, stepOf(h.now.ms)) : '',
    }),
  });
  assert.equal(res.statusCode, 200, res.body);
  assert.match(res.body, /Your account is ready/);
  return { email, role, password, secret: withTotp ? secret : null };
}

export interface ConsoleSessionCookies {
  cookie: string;
  csrf: string;
}

/** Logs in (the clock moves one step first, so the code is fresh) and returns the cookie and the CSRF token. */
export async function login(h: ConsoleHarness, op: TestOperator): Promise<ConsoleSessionCookies> {
  h.advance();
  const res = await h.app.inject({
    method: 'POST',
    url: '/console/login',
    headers: FORM,
    payload: formBody({
      email: op.email,
      password: op.password,
      code: op.secret ? codeAt(op.secret, stepOf(h.now.ms)) : '',
      next: '/console',
    }),
  });
  assert.equal(res.statusCode, 303, res.body);
  const setCookie = String(res.headers['set-cookie']);
  const cookie = setCookie.split(';')[0] as string;
  const page = await h.app.inject({ method: 'GET', url: '/console', headers: { cookie } });
  assert.equal(page.statusCode, 200);
  return { cookie, csrf: hidden(page.body, 'csrf') };
}

export function consoleGet(h: Harness, s: ConsoleSessionCookies | null, url: string) {
  return h.app.inject({ method: 'GET', url, headers: s ? { cookie: s.cookie } : {} });
}

export function consolePost(
  h: Harness,
  s: ConsoleSessionCookies,
  url: string,
  fields: Record<string, string> = {},
  headers: Record<string, string> = {},
) {
  return h.app.inject({
    method: 'POST',
    url,
    headers: { ...FORM, cookie: s.cookie, ...headers },
    payload: formBody({ csrf: s.csrf, ...fields }),
  });
}

/** Logs an operator in through the browser's login page (the clock moves one step first, so the code is fresh). */
export async function loginInBrowser(h: ConsoleHarness, page: Page, base: string, op: TestOperator): Promise<void> {
  await page.goto(`${base}/console/login`);
  h.advance();
  await page.getByLabel('E-mail').fill(op.email);
  await page.getByLabel('Password').fill(op.password);
  await page.getByLabel(/One-time code/).fill(op.secret ? codeAt(op.secret, stepOf(h.now.ms)) : '');
  await Promise.all([page.waitForURL(`${base}/console`), page.getByRole('button', { name: 'Log in' }).click()]);
}
