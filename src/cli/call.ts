import { createSign } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { ConfigError } from '../config.js';
import type { Services } from '../context.js';
import { hmacSign, signingString } from '../http/signing.js';
import { demoMerchantFile } from '../merchants/demo.js';

export interface CallInput {
  /** An operation name (its OpenAPI operationId, e.g. `tradeList`) or a path (`/api/network/…`). */
  operation: string;
  data: Record<string, unknown>;
  merchant?: string;
  /** PEM private key of an RSA-SHA256 merchant (the service never holds it). */
  keyPem?: string;
  url: string;
}

/** 32 letters and digits. */
function randomStr(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => alphabet[b % 62]).join('');
}

/**
 * Signs a body as a merchant and POSTs it to a running service: an operator's (or a newcomer's)
 * way to try any operation. The operation is looked up in the service's own OpenAPI document, and
 * `randomStr` and `timestamp` are added when the operation takes them and the data has none.
 */
export async function callOperation(svc: Services, input: CallInput): Promise<{ status: number; body: unknown }> {
  const base = input.url.replace(/\/+$/, '');
  let doc: { paths?: Record<string, { post?: { operationId?: string; requestBody?: any } }> };
  try {
    const res = await fetch(`${base}/openapi.json`, { signal: AbortSignal.timeout(10_000) });
    doc = (await res.json()) as typeof doc;
  } catch (err) {
    throw new ConfigError(
      `cannot read ${base}/openapi.json (is the service running there? --url sets the address): ${(err as Error).message}`,
    );
  }
  const entries = Object.entries(doc.paths ?? {}).filter(([, ops]) => ops.post);
  const found = entries.find(([path, ops]) => ops.post?.operationId === input.operation || path === input.operation);
  if (!found) {
    const names = entries.map(([, ops]) => ops.post?.operationId).filter(Boolean);
    throw new ConfigError(`no operation "${input.operation}"; one of: ${names.join(', ')}`);
  }
  const [path, ops] = found;
  const properties = (ops.post?.requestBody?.content?.['application/json']?.schema?.properties ?? {}) as Record<string, unknown>;

  let appId = input.merchant;
  if (!appId && existsSync(demoMerchantFile(svc))) appId = JSON.parse(readFileSync(demoMerchantFile(svc), 'utf8')).appId as string;
  if (!appId) throw new ConfigError('say which merchant signs the call: --merchant APPID');
  const merchant = await svc.merchants.get(appId);
  if (!merchant) throw new ConfigError(`no merchant ${appId}`);

  const body: Record<string, unknown> = { ...input.data, appId };
  if ('randomStr' in properties && body.randomStr === undefined) body.randomStr = randomStr();
  if ('timestamp' in properties && body.timestamp === undefined) body.timestamp = Date.now();
  delete body.sign;
  if (merchant.signType === 'HMAC-SHA256') {
    body.sign = hmacSign(merchant.secret ?? '', signingString(body));
  } else {
    if (!input.keyPem) throw new ConfigError(`${appId} signs with RSA-SHA256: give its private key with --key FILE`);
    body.sign = createSign('sha256').update(signingString(body), 'utf8').sign(input.keyPem, 'base64');
  }
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: printed as it came
  }
  return { status: res.status, body: parsed };
}
