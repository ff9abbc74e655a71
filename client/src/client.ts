import type { KeyObject } from 'node:crypto';
import { randomBytes } from 'node:crypto';
import { APIConnectionError, APIConnectionTimeoutError, APIError, CardProgramError } from './errors.js';
import type { Requester, RequestKind } from './request.js';
import { Cards } from './resources/cards.js';
import { Disputes } from './resources/disputes.js';
import { AuthorizationEndpointSettings, Funding } from './resources/funding.js';
import { Holders } from './resources/holders.js';
import { Kyc } from './resources/kyc.js';
import { Page } from './resources/page.js';
import { Sandbox } from './resources/sandbox.js';
import { ThreeDs } from './resources/three-ds.js';
import { Tokens } from './resources/tokens.js';
import { Trades } from './resources/trades.js';
import { Webhooks } from './resources/webhooks.js';
import { type Credentials, signature, signingString } from './signing.js';

export type { RequestKind } from './request.js';

export const VERSION = '0.1.0';

export interface ClientOptions {
  /** The service's base address, e.g. `http://127.0.0.1:8080` (the demo merchant's `baseUrl`). */
  baseUrl: string;
  appId: string;
  /** The HMAC-SHA256 secret (`sk_…`). Give this or `privateKey`. */
  secret?: string;
  /** The RSA private key (PEM or KeyObject) of an RSA-SHA256 merchant. */
  privateKey?: string | KeyObject;
  /** The `whsec_…` secret that `webhooks.verify` checks callbacks with. */
  webhookSecret?: string;
  /** Retries after a failure that may be temporary (connection, timeout, 429, 5xx). Default 2. */
  maxRetries?: number;
  /** Per attempt. Default 30 s. */
  timeoutMs?: number;
  /** Sign a `timestamp` into every request (the service refuses it outside ±5 minutes). Default true. */
  timestamp?: boolean;
  /** Told before each retry: for logs and metrics. */
  onRetry?: (info: RetryInfo) => void;
  /** A fetch implementation (default: the global one of Node 20+). */
  fetch?: typeof fetch;
}

export interface RetryInfo {
  path: string;
  /** 1 for the first retry. */
  attempt: number;
  delayMs: number;
  error: CardProgramError;
}

const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);
const MAX_RETRY_AFTER_MS = 60_000;

/** 32 letters and digits: a `randomStr`. */
export function newRandomStr(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  // 62 does not divide 256: bytes from 248 up are dropped so every character is equally likely.
  let out = '';
  while (out.length < 32) {
    for (const b of randomBytes(48)) {
      if (b < 248 && out.length < 32) out += alphabet[b % 62];
    }
  }
  return out;
}

/**
 * The cardprogram merchant API.
 *
 * @example
 * import { CardProgram } from '@cardprogram/client';
 * const client = new CardProgram({ baseUrl: 'http://127.0.0.1:8080', appId: 'mch_…', secret: 'sk_test_…' });
 * const holder = await client.holders.create({ firstName: 'Alice', lastName: 'Schmidt', … });
 */
export class CardProgram implements Requester {
  readonly holders: Holders;
  readonly cards: Cards;
  readonly funding: Funding;
  readonly authorizationEndpoint: AuthorizationEndpointSettings;
  readonly trades: Trades;
  readonly disputes: Disputes;
  readonly threeDs: ThreeDs;
  readonly tokens: Tokens;
  readonly kyc: Kyc;
  readonly page: Page;
  readonly sandbox: Sandbox;
  readonly webhooks: Webhooks;

  private readonly baseUrl: string;
  private readonly credentials: Credentials;
  private readonly maxRetries: number;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: ClientOptions) {
    if (!options.baseUrl) throw new CardProgramError('baseUrl is required');
    if (!options.appId) throw new CardProgramError('appId is required');
    if ((options.secret === undefined) === (options.privateKey === undefined)) {
      throw new CardProgramError('give exactly one of secret (HMAC-SHA256) and privateKey (RSA-SHA256)');
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.credentials = options.secret !== undefined ? { secret: options.secret } : { privateKey: options.privateKey as string | KeyObject };
    this.maxRetries = options.maxRetries ?? 2;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    this.holders = new Holders(this);
    this.cards = new Cards(this);
    this.funding = new Funding(this);
    this.authorizationEndpoint = new AuthorizationEndpointSettings(this);
    this.trades = new Trades(this);
    this.disputes = new Disputes(this);
    this.threeDs = new ThreeDs(this);
    this.tokens = new Tokens(this);
    this.kyc = new Kyc(this);
    this.page = new Page(this);
    this.sandbox = new Sandbox(this);
    this.webhooks = new Webhooks(options.webhookSecret);
  }

  /**
   * Signs and sends any operation; returns the envelope's `model`, or the bare body of the
   * operations that have no envelope (4.1, 4.2). Throws an APIError subclass on an error envelope.
   *
   * @example
   * const card = await client.request<Card>('/api/network/cardQuery.html', { cardId }, 'read');
   */
  async request<T>(path: string, body: Record<string, unknown>, kind: RequestKind): Promise<T> {
    // One randomStr per intended write, kept for every retry of it.
    const base: Record<string, unknown> =
      kind === 'write' && body.randomStr === undefined ? { ...body, randomStr: newRandomStr() } : { ...body };
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt<T>(path, kind === 'read' ? { ...base, randomStr: newRandomStr() } : base);
      } catch (err) {
        const error = err instanceof CardProgramError ? err : new APIConnectionError(String(err), { cause: err });
        if (attempt >= this.maxRetries || !retryable(error)) throw error;
        const delayMs = retryDelay(error, attempt);
        this.options.onRetry?.({ path, attempt: attempt + 1, delayMs, error });
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  private async attempt<T>(path: string, body: Record<string, unknown>): Promise<T> {
    const payload: Record<string, unknown> = { ...body, appId: this.options.appId };
    if (this.options.timestamp !== false) payload.timestamp = Date.now();
    payload.sign = signature(this.credentials, signingString(payload));
    let res: Response;
    try {
      res = await this.fetchImpl(`${this.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', 'user-agent': `cardprogram-node/${VERSION}` },
        body: JSON.stringify(payload),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      if ((err as Error)?.name === 'TimeoutError')
        throw new APIConnectionTimeoutError(`no answer from ${path} within ${this.timeoutMs} ms`);
      throw new APIConnectionError(`cannot reach ${this.baseUrl}${path}: ${(err as Error)?.message ?? err}`, { cause: err });
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw new APIConnectionError(`the answer from ${path} was cut off`, { cause: err });
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const envelope = isEnvelope(parsed) ? parsed : null;
    if (res.ok && (envelope === null || envelope.success === true)) {
      if (parsed === undefined) throw APIError.from(res.status, { msg: 'the answer was not JSON' }, res.headers);
      return (envelope ? envelope.model : parsed) as T;
    }
    throw APIError.from(res.status, parsed, res.headers);
  }
}

function isEnvelope(v: unknown): v is { code: string; msg: string; model: unknown; success: boolean; traceId?: string } {
  return typeof v === 'object' && v !== null && 'success' in v && 'code' in v;
}

/**
 * How the service's `1007` begins when the request was signed before its store of spent read
 * `randomStr` values last started empty (a restart, or its database's crash recovery): signed again
 * with the current time, as every attempt is, the request is served (docs/idempotency.md).
 */
export const WATERMARK_REFUSAL = "timestamp is before the replay store's watermark";

function retryable(error: CardProgramError): boolean {
  if (error instanceof APIConnectionError) return true;
  if (error instanceof APIError && error.code === '1007' && error.msg.startsWith(WATERMARK_REFUSAL)) return true;
  return error instanceof APIError && RETRYABLE_STATUS.has(error.status);
}

/** `Retry-After` when the service sent a usable one, else capped exponential backoff with jitter. */
export function retryDelay(error: CardProgramError, attempt: number): number {
  if (error instanceof APIError) {
    const header = error.headers.get('retry-after');
    if (header !== null) {
      const seconds = Number(header);
      const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
      if (Number.isFinite(ms) && ms >= 0 && ms <= MAX_RETRY_AFTER_MS) return Math.ceil(ms);
    }
  }
  const ceiling = Math.min(8_000, 500 * 2 ** attempt);
  // Jitter spreads the retries of many clients that failed together.
  return Math.round(ceiling * (1 - Math.random() * 0.25));
}
