import { createHash } from 'node:crypto';
import { loadCard } from '../cards/model.js';
import type { Actor, Services, VerbCtx } from '../context.js';
import type { WalletProvider } from '../db/schema.js';
import { DomainError } from '../errors.js';
import type { RequestKey } from '../idempotency/keys.js';
import { runVerb } from '../runner.js';
import { requestActivationCode, verifyActivationCode } from './activation.js';
import { processProvision } from './provision.js';
import { TspRefusal } from './refusal.js';
import type {
  SandboxTokenProvisionInput,
  SandboxTokenProvisioning,
  SandboxTokenVerification,
  SandboxTokenVerifyInput,
  TspProvisionAnswer,
  TspProvisionRequest,
} from './schemas.js';
import { authMethodsOf, loadToken, tokenById } from './store.js';

/**
 * The sandbox's TSP (decisions §15.6): what a wallet's token service provider would send for one of
 * the merchant's cards, run down the TSP endpoint's own paths (processProvision, the activation
 * code's verbs), so the decision, the limits, the callbacks and the token's life are the real ones.
 */

/** The token requestor a wallet's tokens name (11 digits, as the schemes register them) and its name. */
const REQUESTORS: Record<WalletProvider, { id: string; name: string }> = {
  apple_pay: { id: '40010030273', name: 'Apple Pay' },
  google_pay: { id: '40010075001', name: 'Google Pay' },
  samsung_pay: { id: '40010043095', name: 'Samsung Pay' },
  card_on_file: { id: '40000000001', name: 'Sandbox shop (card on file)' },
};

type Once = Omit<RequestKey, 'merchantId'> & { onReplay?: () => void };

interface SandboxRun<I> {
  merchantId: string;
  actor: Actor;
  once: Once;
  input: I;
}

/** A TSP refusal as the sandbox answers it: the merchant API's codes. */
function asDomainError(err: unknown): never {
  if (!(err instanceof TspRefusal)) throw err;
  if (err.error === 'not_found') throw new DomainError('tokenNotFound');
  if (err.error === 'invalid_request') throw new DomainError('validation', err.detail);
  // The requestId made up from a randomStr seen with another body: the randomStr's own conflict.
  if (err.error === 'conflict' && err.detail.startsWith('requestId:'))
    throw new DomainError('duplicateRequest', 'randomStr: already used for a different request');
  throw new DomainError('tokenState', err.detail);
}

/**
 * The request's TSP identifiers, made up from the merchant and its randomStr: the same for a repeat
 * (its provisioning is then answered from its record), never another merchant's.
 */
function madeUp(merchantId: string, randomStr: string) {
  const hex = createHash('sha256').update(`cardprogram-sandbox-tsp\n${merchantId}\n${randomStr}`).digest('hex');
  const digits = BigInt(`0x${hex.slice(0, 12)}`)
    .toString()
    .padStart(4, '0');
  return { requestId: `sbx-${hex.slice(0, 32)}`, tokenReferenceId: `SBX-${hex.slice(32, 56).toUpperCase()}`, tokenLast4: digits.slice(-4) };
}

/**
 * `/sandbox/tokens/provision`: a provisioning request for the card (its number and expiry from the
 * vault, never answered) through the TSP endpoint's path; for `require_authentication`, a code for
 * the first code method at once (the `token.otp` callback). Once per randomStr: the provisioning by
 * the requestId made up from it, the code and the answer by the request's key.
 */
export async function sandboxProvision(svc: Services, run: SandboxRun<SandboxTokenProvisionInput>): Promise<SandboxTokenProvisioning> {
  const { input, merchantId } = run;
  const card = await svc.database.read((db) => loadCard(db, merchantId, input.cardId));
  const pan = await svc.database.read((db) => svc.vault.decrypt(db, card.id, card.pan_enc, card.pan_key_id));
  const ids = madeUp(merchantId, run.once.randomStr);
  const requestor = REQUESTORS[input.walletProvider];
  const expiry = `${String(card.expiry_year % 100).padStart(2, '0')}${String(card.expiry_month).padStart(2, '0')}`;
  const request: TspProvisionRequest = {
    requestId: ids.requestId,
    tokenReferenceId: ids.tokenReferenceId,
    tokenRequestorId: requestor.id,
    tokenRequestorName: requestor.name,
    walletProvider: input.walletProvider,
    accountNumber: pan,
    expiry,
    tokenLast4: ids.tokenLast4,
    tokenExpiry: expiry,
    walletRiskScore: input.walletRiskScore ?? 0,
    ...(input.device ? { device: { type: input.device.type, ...(input.device.name ? { name: input.device.name } : {}) } } : {}),
  };
  const answer = await processProvision(svc, request, run.actor).catch(asDomainError);
  return runVerb(svc, finishProvision, {
    input: { answer, tokenReferenceId: ids.tokenReferenceId, tokenRequestorId: requestor.id },
    actor: run.actor,
    merchantId,
    once: run.once,
  }).catch(asDomainError);
}

/** The provisioning's answer for the merchant, with the first code asked for (one transaction with the request's key). */
async function finishProvision({
  ctx,
  input,
}: {
  ctx: VerbCtx;
  input: { answer: TspProvisionAnswer; tokenReferenceId: string; tokenRequestorId: string };
}): Promise<SandboxTokenProvisioning> {
  const { answer } = input;
  const row = answer.tokenId ? await tokenById(ctx.tx, answer.tokenId) : null;
  const method = row ? authMethodsOf(row).find((m) => m.type === 'otp_sms' || m.type === 'otp_email') : undefined;
  let codeSent: SandboxTokenProvisioning['codeSent'] = null;
  if (answer.decision === 'require_authentication' && method && row?.status === 'pending') {
    try {
      const sent = await requestActivationCode({ ctx, input: { tokenReferenceId: input.tokenReferenceId, methodId: method.id } });
      codeSent = { methodId: sent.methodId, type: method.type as 'otp_sms' | 'otp_email', expiresAt: sent.expiresAt };
    } catch (err) {
      // No notify URL to deliver a code to (refused before anything is written): the token stays
      // pending without one, as with a TSP whose cardholder has not chosen a method yet.
      if (!(err instanceof TspRefusal) || err.error !== 'conflict') throw err;
    }
  }
  return {
    decision: answer.decision,
    reason: answer.reason ?? null,
    tokenId: answer.tokenId ?? null,
    tokenReferenceId: input.tokenReferenceId,
    tokenRequestorId: input.tokenRequestorId,
    authenticationMethods: answer.authenticationMethods ?? [],
    codeSent,
    token: answer.tokenId ? await loadToken(ctx.tx, answer.tokenId) : null,
  };
}

/** `/sandbox/tokens/verify`: the code as the TSP would pass it on (the TSP endpoint's verb), for one of the merchant's tokens, once per randomStr. */
export async function sandboxVerify(svc: Services, run: SandboxRun<SandboxTokenVerifyInput>): Promise<SandboxTokenVerification> {
  return runVerb(svc, verifyForMerchant, { input: run.input, actor: run.actor, merchantId: run.merchantId, once: run.once }).catch(
    asDomainError,
  );
}

async function verifyForMerchant({ ctx, input }: { ctx: VerbCtx; input: SandboxTokenVerifyInput }): Promise<SandboxTokenVerification> {
  const row = await tokenById(ctx.tx, input.tokenId);
  // Another merchant's token is answered as one that does not exist.
  if (!row || row.merchant_id !== ctx.merchantId) throw new DomainError('tokenNotFound');
  const verdict = await verifyActivationCode({ ctx, input: { tokenReferenceId: row.token_reference_id, code: input.code } });
  const token = await loadToken(ctx.tx, row.id);
  if (!token) throw new DomainError('tokenNotFound');
  return { valid: verdict.valid, attemptsLeft: verdict.attemptsLeft, reason: verdict.reason ?? null, token };
}
