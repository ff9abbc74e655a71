import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Services, system } from '../context.js';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../db/files.js';
import { fundMerchant } from '../ledger/funding.js';
import { CARD_CURRENCIES } from '../money/currency.js';
import { runVerb } from '../runner.js';
import { createMerchant } from './create.js';

/** What the sandbox's demo merchant starts with in each funding account. */
export const DEMO_FUNDING = '1000000.00';

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
 * login-free page enabled and 1,000,000.00 in each funding account, and write its credentials to data/demo-merchant.json (mode 0600).
 * Returns the merchant when it was created now, else null.
 */
export async function ensureDemoMerchant(svc: Services): Promise<DemoMerchant | null> {
  if (svc.config.env !== 'sandbox' || !svc.config.demoMerchant) return null;
  const any = await svc.database.read((db) => db.selectFrom('merchants').select('id').limit(1).executeTakeFirst());
  if (any) return null;
  const input = { name: 'Demo merchant', signType: 'HMAC-SHA256', loginFree: true } as const;
  const created = await runVerb(svc, createMerchant, { input, actor: system('sandbox') });
  // Funded like any merchant, by the operator's verb, so every guide's top-up works at once.
  for (const currency of CARD_CURRENCIES) {
    await runVerb(svc, fundMerchant, {
      input: { appId: created.appId, currency, amount: DEMO_FUNDING, reference: 'sandbox demo funding' },
      actor: system('sandbox'),
    });
  }
  const demo: DemoMerchant = {
    appId: created.appId,
    secret: created.secret ?? '',
    webhookSecret: created.webhookSecret,
    baseUrl: svc.config.publicUrl,
  };
  const file = demoMerchantFile(svc);
  makePrivateDir(svc.config.dataDir);
  writeFileSync(file, `${JSON.stringify(demo, null, 2)}\n`, { mode: PRIVATE_FILE_MODE });
  // The mode applies only when the file is created: one left wider by hand is narrowed before it
  // holds the new secret for long.
  chmodSync(file, PRIVATE_FILE_MODE);
  return demo;
}
