// A token service provider (Visa Token Service, MDES) as decisions §15 describes it, written from the
// text and not from the service's types: it sends plain JSON over HTTP to the issuer's TSP endpoint
// (CARDPROGRAM_TSP_PORT; plain HTTP on loopback, as the sandbox allows) and reads bare JSON back.
// Nothing here imports src/tokens.
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import type { TestContext } from 'node:test';
import { CallbackWorker } from '../../../src/callbacks/worker.js';
import type { Config } from '../../../src/config.js';
import { startTsp } from '../../../src/tokens/listener.js';
import { build, type Harness, testConfig } from '../../helpers/app.js';
import type { TestDialect } from '../../helpers/db.js';
import { noteSecret } from '../../helpers/log-audit.js';
import { eventually, type Received } from '../../helpers/receiver.js';

export type Json = Record<string, any>;
export interface TspReply {
  status: number;
  json: Json;
  text: string;
}

/** The TSP's side of §15.2: one method per request the TSP sends. */
export interface Tsp {
  base: string;
  provision(body: Json): Promise<TspReply>;
  activationCode(body: Json): Promise<TspReply>;
  verify(body: Json): Promise<TspReply>;
  notify(body: Json): Promise<TspReply>;
  /** Any bytes to any path (the fuzz, wrong content types). */
  raw(path: string, body: string | Buffer, headers?: Record<string, string>, method?: string): Promise<TspReply>;
}

export function tspAt(base: string): Tsp {
  const raw: Tsp['raw'] = async (path, body, headers = { 'content-type': 'application/json' }, method = 'POST') => {
    const res = await fetch(`${base}${path}`, { method, headers, ...(method === 'GET' ? {} : { body }) });
    const text = await res.text();
    let json: Json = {};
    try {
      json = JSON.parse(text) as Json;
    } catch {
      json = {};
    }
    return { status: res.status, json, text };
  };
  const post = (path: string) => (body: Json) => raw(path, JSON.stringify(body));
  return {
    base,
    raw,
    provision: post('/tsp/provision'),
    activationCode: post('/tsp/activation-code'),
    verify: post('/tsp/activation-code/verify'),
    notify: post('/tsp/notify'),
  };
}

const hex = (n: number) => randomBytes(n).toString('hex');

/** A fresh token reference (MDES-like: letters and digits). */
export const tokenRef = () => `DNITHE${hex(16).toUpperCase()}`;

/** A provisioning request of §15.2 for a card (its number and expiry), Apple Pay on a phone by default. */
export function provisionBody(card: { pan: string; expiry: string }, extra: Json = {}): Json {
  return {
    requestId: `req-${hex(8)}`,
    tokenReferenceId: tokenRef(),
    tokenRequestorId: '40010030273',
    tokenRequestorName: 'Apple Pay',
    walletProvider: 'apple_pay',
    accountNumber: card.pan,
    expiry: card.expiry,
    tokenLast4: String(randomInt(0, 10_000)).padStart(4, '0'),
    tokenExpiry: '3012',
    device: { type: 'phone', name: 'Anna’s iPhone', ip: '192.0.2.10', locale: 'de-DE' },
    walletRiskScore: 1,
    ...extra,
  };
}

export interface TspHarness {
  h: Harness;
  tsp: Tsp;
  /** The test's clock: move it to make codes expire and days pass. */
  clock: { now: number };
}

/** The app built as in production with its TSP endpoint listening on a free loopback port. */
export async function tspService(
  t: TestContext,
  dialect: TestDialect,
  tokens: Partial<Config['tokens']> = {},
  overrides: Partial<Config> = {},
): Promise<TspHarness> {
  // Real time, moved forward by what a test adds (`clock.now += ms`): codes expire, days pass.
  let offset = 0;
  const clock = {
    get now() {
      return Date.now() + offset;
    },
    set now(value: number) {
      offset = value - Date.now();
    },
  };
  const h = await build(t, dialect, { ...overrides, tokens: { ...testConfig('').tokens, port: 0, ...tokens } }, { clock: () => clock.now });
  const server = await startTsp(h.app.svc);
  assert.ok(server, 'the TSP endpoint listens');
  t.after(() => server.stop());
  return { h, tsp: tspAt(`http://127.0.0.1:${server.port}`), clock };
}

/** Delivers callbacks until one of `type` matching `where` arrived, and gives it (a code noted as a secret for the log audit). */
export async function delivered(
  h: Harness,
  rx: { received: Received[] },
  type: string,
  where: (body: Json) => boolean = () => true,
): Promise<Received> {
  const worker = new CallbackWorker(h.app.svc);
  const find = () => rx.received.find((r) => r.body.type === type && where(r.body));
  await eventually(
    async () => {
      await worker.pass();
      return find() !== undefined;
    },
    10_000,
    `a ${type} callback`,
  );
  const got = find() as Received;
  if (typeof got.body.code === 'string') noteSecret('otp', got.body.code);
  return got;
}

/** Sets the merchant's token settings as tokenSettingsUpdate will (decisionUrl, methods), in its table. */
export async function tokenSettings(h: Harness, settings: { decisionUrl?: string | null; methods?: string[] | null }) {
  const m = await h.db.database.db.selectFrom('merchants').select('id').where('id', '=', h.merchant.appId).executeTakeFirstOrThrow();
  const row = {
    merchant_id: m.id,
    decision_url: settings.decisionUrl ?? null,
    methods: settings.methods ? JSON.stringify(settings.methods) : null,
    updated_at: Date.now(),
  };
  await h.db.database.db
    .insertInto('merchant_token_settings')
    .values(row)
    .onConflict((oc) => oc.column('merchant_id').doUpdateSet({ decision_url: row.decision_url, methods: row.methods }))
    .execute();
}
