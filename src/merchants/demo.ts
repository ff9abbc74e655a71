import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Services } from '../context.js';
import { hmacSign, signingString } from '../http/signing.js';
import { createMerchant } from './create.js';

export interface DemoMerchant {
  appId: string;
  secret: string;
  webhookSecret: string;
  baseUrl: string;
}

export function demoMerchantFile(svc: Services): string {
  return join(svc.config.dataDir, 'demo-merchant.json');
}

/**
 * Sandbox convenience (decisions §1): on first start, with no merchant at all, create one with the
 * login-free page enabled and write its credentials to data/demo-merchant.json (mode 0600).
 * Returns the merchant when it was created now, else null.
 */
export async function ensureDemoMerchant(svc: Services): Promise<DemoMerchant | null> {
  if (svc.config.env !== 'sandbox' || !svc.config.demoMerchant) return null;
  const any = await svc.database.db.selectFrom('merchants').select('id').limit(1).executeTakeFirst();
  if (any) return null;
  const created = await createMerchant({ ctx: svc, input: { name: 'Demo merchant', signType: 'HMAC-SHA256', loginFree: true } });
  const demo: DemoMerchant = {
    appId: created.appId,
    secret: created.secret ?? '',
    webhookSecret: created.webhookSecret,
    baseUrl: svc.config.publicUrl,
  };
  const file = demoMerchantFile(svc);
  writeFileSync(file, `${JSON.stringify(demo, null, 2)}\n`, { mode: 0o600 });
  return demo;
}

/** A ready-to-paste signed request (a cardholder creation: a write, so pasting it twice is safe). */
export function exampleCurl(demo: DemoMerchant): string {
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
  const body: Record<string, unknown> = {
    appId: demo.appId,
    mobile: '+4915112345678',
    firstName: b64('Alice'),
    lastName: b64('Schmidt'),
    email: 'alice@example.com',
    dateOfBirth: '1990-04-12',
    nationality: 'DE',
    sex: 2,
    countryCode: 'DE',
    town: b64('Berlin'),
    address: b64('Invalidenstrasse 117'),
    postCode: '10115',
    idnoType: 1,
    idno: 'L01X00T47',
    randomStr: 'DemoHolderAlice0000000000000001x'.slice(0, 32),
  };
  body.sign = hmacSign(demo.secret, signingString(body));
  return `curl -s -X POST ${demo.baseUrl}/api/network/holderCreate.html -H 'content-type: application/json' -d '${JSON.stringify(body)}'`;
}
