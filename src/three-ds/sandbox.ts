import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { loadCard } from '../cards/model.js';
import type { Actor, Services } from '../context.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import type { RequestKey } from '../idempotency/keys.js';
import { exponent, toMinor } from '../money/currency.js';
import { currencyNumeric } from '../money/iso4217.js';
import type { OperationInput } from '../operation-input.js';
import { processAReq } from './areq.js';
import { buildAReq, creqFor } from './areq-builder.js';
import type { RReq } from './emv-messages.js';
import type { SandboxAuthenticateBody, SandboxAuthentication } from './schemas.js';

export type SandboxAuthenticateInput = OperationInput<Static<typeof SandboxAuthenticateBody>>;

/** Where the sandbox's AReqs ask the challenge's CRes to be posted (the sandbox's stand-in for a 3DS Server). */
export const sandboxNotificationUrl = (svc: Services) => `${svc.config.publicUrl}/sandbox/3ds/notification`;

/**
 * The sandbox's directory server (decisions §14.6): an AReq for one of the merchant's cards (its
 * number and expiry from the vault, never answered), sent down the ACS's one path (processAReq) as
 * the DS's would be, and its ARes; for a challenge, the form that opens it in a browser. Once per
 * randomStr, as every sandbox write (the merchant's decision endpoint may be asked again by a replay;
 * the answer is the first one).
 */
export async function sandboxAuthenticate(
  svc: Services,
  run: {
    merchantId: string;
    actor: Actor;
    once: Omit<RequestKey, 'merchantId'> & { onReplay?: () => void };
    input: SandboxAuthenticateInput;
  },
): Promise<SandboxAuthentication> {
  const { input } = run;
  const card = await svc.database.read((db) => loadCard(db, run.merchantId, input.cardId));
  const currency = (input.currency ?? card.currency).toUpperCase();
  const numeric = currencyNumeric(currency);
  if (numeric === null)
    throw new DomainError('unsupportedCurrency', `currency: ${currency} has no ISO 4217 numeric code the service knows`);
  const amount = toMinor(input.amount, currency);
  const pan = await svc.database.read((db) => svc.vault.decrypt(db, card.id, card.pan_enc, card.pan_key_id));
  const message = buildAReq({
    pan,
    expiry: `${String(card.expiry_year % 100).padStart(2, '0')}${String(card.expiry_month).padStart(2, '0')}`,
    amount,
    currency: numeric,
    exponent: exponent(currency),
    ...(input.merchantName ? { merchantName: input.merchantName } : {}),
    ...(input.challengeInd ? { challengeInd: input.challengeInd } : {}),
    notificationURL: sandboxNotificationUrl(svc),
    now: svc.clock(),
  });
  const answer = await processAReq(svc, message, { actor: run.actor, once: run.once, merchantId: run.merchantId });
  if (answer.kind === 'Erro') {
    if (answer.message.errorCode === '404') throw new DomainError('unavailable');
    throw new Error(`the sandbox's AReq was refused: ${answer.message.errorCode} ${answer.message.errorDetail}`);
  }
  const ares = answer.message;
  return {
    ares,
    challenge: ares.transStatus === 'C' && ares.acsURL ? { acsURL: ares.acsURL, method: 'POST', creq: creqFor(ares) } : null,
  };
}

/**
 * What the sandbox's directory server hands the 3DS Server once a challenge is over (decisions
 * §14.4, §14.6): the RReq's `eci` and, for Y, its `authenticationValue`, read from the RReq the ACS
 * sealed for the DS (three_ds_results). In EMV 3DS the value reaches the merchant only this way, the
 * DS's RReq to the 3DS Server; the sandbox plays the DS, so its answers (`/sandbox/3ds/complete`, the
 * notification page) carry it. Never called in production: the merchant API never returns a value
 * (an authentication's row keeps only its hash). null while no RReq waits for the DS.
 */
export async function sandboxDsResult(
  svc: Pick<Services, 'box' | 'config'>,
  db: Kysely<DB>,
  acsTransId: string,
): Promise<{ eci: string | null; authenticationValue: string | null } | null> {
  if (svc.config.env !== 'sandbox') return null;
  const row = await db.selectFrom('three_ds_results').select('rreq_enc').where('acs_trans_id', '=', acsTransId).executeTakeFirst();
  if (!row) return null;
  const rreq = JSON.parse(svc.box.open(row.rreq_enc, `three-ds-rreq:${acsTransId}`)) as RReq;
  return { eci: rreq.eci ?? null, authenticationValue: rreq.transStatus === 'Y' ? (rreq.authenticationValue ?? null) : null };
}
