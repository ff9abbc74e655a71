// Wallet tokens for the tests of their management (test/tokens/*): a token as provisioning would
// have left it, written through the tokens domain's own insert (the TSP's provisioning itself is
// tested by its own tests, with a TSP simulator).
import { randomBytes } from 'node:crypto';
import type { Services } from '../../src/context.js';
import type { TokenStatus } from '../../src/db/schema.js';
import { runVerb } from '../../src/runner.js';
import { insertToken } from '../../src/tokens/store.js';

export interface SeedToken {
  cardId: string;
  status?: Extract<TokenStatus, 'pending' | 'active'>;
  /** For a pending token: the step-up methods it was offered (default: the merchant's app). */
  methods?: Array<'otp_sms' | 'otp_email' | 'app'>;
  walletProvider?: 'apple_pay' | 'google_pay' | 'samsung_pay' | 'card_on_file';
}

/** A new token of the card (its merchant's and cardholder's), active or pending; its id and the TSP's reference. */
export async function seedToken(svc: Services, t: SeedToken): Promise<{ tokenId: string; tokenReferenceId: string }> {
  const tokenId = `tok_${randomBytes(12).toString('hex')}`;
  const tokenReferenceId = `DNITHE${randomBytes(10).toString('hex').toUpperCase()}`;
  const status = t.status ?? 'active';
  const methods = t.methods ?? ['app'];
  await runVerb(
    svc,
    async ({ ctx }) => {
      const card = await ctx.tx
        .selectFrom('cards')
        .select(['merchant_id', 'holder_id'])
        .where('id', '=', t.cardId)
        .executeTakeFirstOrThrow();
      await insertToken(
        ctx.tx,
        {
          id: tokenId,
          card_id: t.cardId,
          merchant_id: card.merchant_id,
          holder_id: card.holder_id,
          token_reference_id: tokenReferenceId,
          token_requestor_id: '40010030273',
          token_requestor_name: 'Apple Pay',
          wallet_provider: t.walletProvider ?? 'apple_pay',
          token_last4: '4821',
          token_expiry: '2911',
          device_type: 'phone',
          device_name: 'Erika’s iPhone',
          device_locale: 'de-DE',
          status,
          suspended_by: null,
          decision: status === 'pending' ? 'require_authentication' : 'approve',
          decision_reason: status === 'pending' ? 'wallet_risk' : null,
          auth_methods:
            status === 'pending'
              ? JSON.stringify(
                  methods.map((type, i) => ({ id: `m${i + 1}`, type, value: type === 'app' ? 'the merchant’s app' : '••• ••• 5678' })),
                )
              : null,
          created_at: ctx.now,
          updated_at: ctx.now,
        },
        { source: 'tsp', reason: null },
      );
    },
    { input: {}, actor: 'test' },
  );
  return { tokenId, tokenReferenceId };
}
