import { existsSync, readFileSync } from 'node:fs';
import { type Credentials, newRandomStr, signature, signingString } from '@cardprogram/client';
import { ConfigError } from '../config.js';
import type { Services } from '../context.js';
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

/**
 * Signs a body as a merchant and POSTs it to a running service: an operator's (or a newcomer's)
 * way to try any operation. The operation is looked up in the service's own OpenAPI document, and
 * `randomStr` and `timestamp` are added when the operation takes them and the data has none. It
 * signs with the SDK's signer (@cardprogram/client), as a merchant's code would.
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
  if (!appId) {
    throw new ConfigError(
      `no --merchant, and no sandbox demo merchant in ${demoMerchantFile(svc)}: say which merchant signs the call with --merchant APPID, or run it where the service keeps its data (CARDPROGRAM_DATA_DIR)`,
    );
  }
  const merchant = await svc.merchants.get(appId);
  if (!merchant) throw new ConfigError(`no merchant ${appId}`);

  const body: Record<string, unknown> = { ...input.data, appId };
  if ('randomStr' in properties && body.randomStr === undefined) body.randomStr = newRandomStr();
  if ('timestamp' in properties && body.timestamp === undefined) body.timestamp = Date.now();
  delete body.sign;
  let credentials: Credentials;
  if (merchant.signType === 'HMAC-SHA256') {
    credentials = { secret: merchant.secret ?? '' };
  } else {
    if (!input.keyPem) throw new ConfigError(`${appId} signs with RSA-SHA256: give its private key with --key FILE`);
    credentials = { privateKey: input.keyPem };
  }
  try {
    body.sign = signature(credentials, signingString(body));
  } catch (err) {
    // A key the service would refuse unsigned (1002), or a value JSON cannot carry: said before sending.
    throw new ConfigError(`--data: ${(err as Error).message}`);
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
