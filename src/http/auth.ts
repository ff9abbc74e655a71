import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { burstFor, type RateLimit } from '../config.js';
import type { MerchantCredentials, MerchantDirectory } from '../directories/merchants.js';
import { DomainError, invalid } from '../errors.js';
import type { RateLimiter } from './rate-limit.js';
import { signatureError } from './signature-detail.js';
import { canonicalJson, SIGNED_KEY, signingString, verifyHmac, verifyRsa } from './signing.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Name of the operation; set on every signed route. */
    operation?: string;
    /** The failure envelope also carries errMsg (cardholder creation). */
    errMsg?: boolean;
  }
  interface FastifyRequest {
    merchant: MerchantCredentials;
    /** Canonical JSON of the body without sign and timestamp: what makes two requests the same. */
    canonical: string;
  }
}

const TIMESTAMP_WINDOW_MS = 5 * 60 * 1000;

export const TIMESTAMP_REQUIRED =
  'timestamp is required: sign the current Unix time in milliseconds, within 5 minutes of the service’s clock';

export const TIMESTAMP_IN_SECONDS = 'timestamp looks like seconds; send Unix time in milliseconds';

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export interface AuthOptions {
  merchants: MerchantDirectory;
  clock: () => number;
  limiter: RateLimiter;
  /** A signed timestamp is required on every operation (CARDPROGRAM_REQUIRE_TIMESTAMP). */
  requireTimestamp: boolean;
  /** The service's default budget per merchant; null: no limit (a merchant's own still applies). */
  rateLimit: RateLimit | null;
  /** Sandbox: a 1006 also answers what the service signed (src/http/signature-detail.ts). */
  explainSignature: boolean;
}

/** The budget that applies to a merchant: its own rate (burst twice that) or the default. */
export function merchantLimit(merchant: MerchantCredentials, fallback: RateLimit | null): RateLimit | null {
  if (merchant.rateLimit !== null) return { perSecond: merchant.rateLimit, burst: burstFor(merchant.rateLimit) };
  return fallback;
}

/**
 * Authenticates every operation the same way (decisions §3), before schema validation, so that an
 * unsigned request learns nothing about which fields would have been accepted.
 */
export async function authenticate(req: FastifyRequest, opts: AuthOptions): Promise<void> {
  const body = req.body;
  if (!isPlainObject(body)) throw invalid('body', 'must be a JSON object');
  for (const key of Object.keys(body)) {
    // Before the signature: a key that is not a plain name could blur where one field ends (signing.ts).
    if (!SIGNED_KEY.test(key)) {
      throw invalid(key.slice(0, 64), 'is not a field name (a letter, then up to 63 letters, digits or _)');
    }
  }
  const { appId, sign } = body;
  if (appId === undefined || appId === null || appId === '') throw invalid('appId', 'is required');
  if (typeof appId !== 'string') throw invalid('appId', 'must be a string');
  if (appId.length > 32) throw invalid('appId', 'must be at most 32 characters');
  const merchant = await opts.merchants.get(appId);
  if (!merchant?.active) throw new DomainError('merchantNotFound');
  // 4.4's failure body is fixed field by field by the interface, so it is never explained.
  const explain = opts.explainSignature && req.routeOptions.config?.operation !== 'loginFreeLink';
  if (typeof sign !== 'string' || sign === '' || sign.length > 512) throw signatureError(body, merchant.signType, explain);
  const data = signingString(body);
  const good =
    merchant.signType === 'HMAC-SHA256'
      ? merchant.secret !== null && verifyHmac(merchant.secret, data, sign)
      : merchant.publicKey !== null && verifyRsa(merchant.publicKey, data, sign);
  if (!good) throw signatureError(body, merchant.signType, explain);
  // Checked after the signature (only a signed timestamp counts) and before anything is written.
  const ts = body.timestamp;
  if (ts !== undefined && ts !== null && ts !== '') {
    if (typeof ts !== 'number' || !Number.isSafeInteger(ts) || ts < 0) {
      throw invalid('timestamp', 'must be Unix time in milliseconds');
    }
    // Why a window: a captured request cannot be replayed later than this, whatever its randomStr.
    if (Math.abs(opts.clock() - ts) > TIMESTAMP_WINDOW_MS) {
      // Ten digits is today's time in seconds (until 2286): the commonest mistake gets its own words.
      if (ts >= 1e9 && ts < 1e10) throw new DomainError('timestamp', TIMESTAMP_IN_SECONDS);
      throw new DomainError('timestamp');
    }
  } else if (opts.requireTimestamp) {
    // Why required (production): without it, a captured page link could be replayed for ever, and a
    // captured write again once its randomStr is forgotten (after the retention period).
    throw new DomainError('timestamp', TIMESTAMP_REQUIRED);
  }
  req.merchant = merchant;
  const { sign: _sign, timestamp: _timestamp, ...rest } = body;
  req.canonical = canonicalJson(rest);
}

export const authPlugin = fp(
  async (app: FastifyInstance, opts: AuthOptions) => {
    app.decorateRequest('merchant', null as unknown as MerchantCredentials);
    app.decorateRequest('canonical', '');
    app.addHook('preValidation', async (req) => {
      if (!req.routeOptions.config?.operation) return;
      await authenticate(req, opts);
      // Counted after the signature: only the merchant itself can spend its budget.
      const limit = merchantLimit(req.merchant, opts.rateLimit);
      if (limit) await opts.limiter.take(req.merchant.appId, limit);
    });
  },
  { name: 'cardprogram-auth' },
);
