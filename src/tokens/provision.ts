import type { Kysely } from 'kysely';
import { notifyMerchant } from '../callbacks/merchant-event.js';
import { recordVerificationFailure, resetVerificationFailures } from '../cards/verification.js';
import type { Actor, Services, VerbCtx } from '../context.js';
import { newId } from '../db/ids.js';
import { isUniqueViolation } from '../db/index.js';
import type { DB } from '../db/schema.js';
import { openIdentity } from '../holders/identity.js';
import { runVerb } from '../runner.js';
import { decideProvisioning, type EndpointVerdict, type ProvisionOutcome, type ProvisionReason } from './decide.js';
import { askTokenDecision } from './decision-endpoint.js';
import { offeredMethods, storedMethods } from './methods.js';
import { cardByAccountNumber, lockCardRow, partiesOf, provisionFacts } from './provision-facts.js';
import { TspRefusal } from './refusal.js';
import type { TspProvisionAnswer, TspProvisionRequest } from './schemas.js';
import { insertToken } from './store.js';

/** What a provisioning record keeps: the answer, and the keyed fingerprint of the request it answered. */
interface StoredProvision {
  request: string;
  answer: TspProvisionAnswer;
}

/** A JSON value with its keys sorted, at every depth: the same request whatever order the TSP wrote it in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The request's keyed fingerprint (the PAN's keyed hash key, domain-separated: it holds the number
 * and the CVV2, which are never stored): a repeat of a requestId gets the stored answer only if it is
 * the very same request, so another card's number (or CVV2) under a seen requestId learns nothing.
 */
export function requestFingerprint(svc: Services, db: Kysely<DB>, req: TspProvisionRequest): Promise<string> {
  return svc.vault.hash(db, `tsp-provision\n${canonical(req)}`);
}

/**
 * A request's stored answer, when its requestId was seen (a repeat gets the same answer, decisions
 * §15.2); a requestId seen with another request is a 409 that tells nothing of the first answer.
 */
async function storedAnswer(
  db: Kysely<DB>,
  req: Pick<TspProvisionRequest, 'requestId' | 'tokenReferenceId'>,
  fingerprint: string,
): Promise<TspProvisionAnswer | null> {
  const row = await db
    .selectFrom('token_provision_requests')
    .select(['token_reference_id', 'answer'])
    .where('request_id', '=', req.requestId)
    .executeTakeFirst();
  if (!row) return null;
  if (row.token_reference_id !== req.tokenReferenceId) {
    throw new TspRefusal(409, 'conflict', 'requestId: already used for another tokenReferenceId');
  }
  const stored = JSON.parse(row.answer) as Partial<StoredProvision>;
  if (stored.answer === undefined) return null;
  if (stored.request !== fingerprint) throw new TspRefusal(409, 'conflict', 'requestId: already used for another request');
  return stored.answer;
}

interface ProvisionInput {
  req: TspProvisionRequest;
  cardId: string | null;
  /** The merchant endpoint's verdict, asked before the transaction; null: not asked (no endpoint, or the pre-check declined). */
  verdict: EndpointVerdict | null;
  hasEndpoint: boolean;
  /** The request's keyed fingerprint (requestFingerprint), kept with its answer. */
  fingerprint: string;
}

/** The answer, whether it was a repeat's, and the decision's own reason (the metric's: `card_unknown` stays itself there). */
type Provisioned = { answer: TspProvisionAnswer; replay: boolean; reason?: string | null };

/**
 * The reason the TSP is answered: an unknown number is answered as a wrong expiry or CVV2
 * (`card_verification`), as decisions §15.3 groups them, so that the answers do not tell a number
 * enumerator which numbers are cards; the record and the metric keep `card_unknown`.
 */
const answeredReason = (reason: ProvisionReason): ProvisionReason => (reason === 'card_unknown' ? 'card_verification' : reason);

/**
 * One provisioning request, decided and recorded in one transaction (decisions §15.2–15.3): the
 * requestId claimed first (a concurrent repeat waits on it, then gets the stored answer), the card
 * locked, its counts and data checked (a CVV2 or expiry mismatch counted, §12.13, via `tsp`), the
 * decision, and for approve or require_authentication the token (active or pending) with its first
 * history entry and its `token.updated` callback. Never the PAN in a row or a log.
 */
export async function provisionToken({ ctx, input }: { ctx: VerbCtx; input: ProvisionInput }): Promise<Provisioned> {
  const { req } = input;
  const claimed = await ctx.tx
    .insertInto('token_provision_requests')
    .values({
      request_id: req.requestId,
      token_reference_id: req.tokenReferenceId,
      card_id: input.cardId,
      token_id: null,
      decision: 'decline',
      reason: null,
      answer: '{}',
      created_at: ctx.now,
    })
    .onConflict((oc) => oc.column('request_id').doNothing())
    .returning('request_id')
    .executeTakeFirst();
  if (!claimed) {
    const answer = await storedAnswer(ctx.tx, req, input.fingerprint);
    if (answer) return { answer, replay: true };
  }
  const existing = await ctx.tx.selectFrom('tokens').select('id').where('token_reference_id', '=', req.tokenReferenceId).executeTakeFirst();
  if (existing) throw new TspRefusal(409, 'conflict', 'tokenReferenceId: a token with this tokenReferenceId exists already');

  const card = input.cardId === null ? null : await lockCardRow(ctx.tx, input.cardId);
  const parties = card ? await partiesOf(ctx.tx, card) : null;
  let outcome: ProvisionOutcome = { kind: 'decided', decision: 'decline', reason: 'card_unknown' };
  let mismatch: 'expiry' | 'cvv2' | null = null;
  if (card && parties) {
    // With an endpoint, its verdict decides; one not asked (the pre-check refused) cannot be reached here unless the facts changed: then require_authentication.
    const verdict = input.hasEndpoint ? (input.verdict ?? 'error') : null;
    const facts = await provisionFacts(ctx.svc, ctx.tx, card, parties.audit_status, req, ctx.now, verdict);
    mismatch = facts.mismatch;
    outcome = decideProvisioning(facts);
  }
  if (outcome.kind !== 'decided') throw new Error('provisionToken: the decision asked for the endpoint inside the transaction');
  let { decision, reason } = outcome;
  if (card && mismatch !== null && reason === 'card_verification') {
    await recordVerificationFailure(ctx, card.id, { kind: mismatch, via: 'tsp' }, ctx.by ?? { kind: 'network', peer: ctx.actor });
  }

  let answer: TspProvisionAnswer = { decision, ...(reason ? { reason: answeredReason(reason) } : {}) };
  let tokenId: string | null = null;
  if (card && parties && decision !== 'decline') {
    const methods =
      decision === 'require_authentication'
        ? (() => {
            const identity = openIdentity(ctx.svc.box, { id: parties.holder_id, identity_enc: parties.identity_enc });
            return offeredMethods({
              configured: storedMethods(parties.methods),
              mobile: identity.mobile,
              email: identity.email,
              merchantName: parties.merchant_name,
              canDeliver: parties.notify_url !== null,
            });
          })()
        : [];
    if (decision === 'require_authentication' && methods.length === 0) {
      decision = 'decline';
      reason = 'no_authentication_method';
      answer = { decision, reason };
    } else {
      tokenId = newId('tok');
      const token = await insertToken(
        ctx.tx,
        {
          id: tokenId,
          card_id: card.id,
          merchant_id: card.merchant_id,
          holder_id: card.holder_id,
          token_reference_id: req.tokenReferenceId,
          token_requestor_id: req.tokenRequestorId,
          token_requestor_name: req.tokenRequestorName,
          wallet_provider: req.walletProvider,
          token_last4: req.tokenLast4 ?? null,
          token_expiry: req.tokenExpiry ?? null,
          device_type: req.device?.type ?? null,
          device_name: req.device?.name ?? null,
          device_locale: req.device?.locale ?? null,
          status: decision === 'approve' ? 'active' : 'pending',
          suspended_by: null,
          decision,
          decision_reason: reason,
          auth_methods: methods.length > 0 ? JSON.stringify(methods) : null,
          created_at: ctx.now,
          updated_at: ctx.now,
        },
        { source: 'tsp', reason: decision === 'approve' ? 'provisioned' : `provisioned pending step-up (${reason})` },
      );
      // The notify URL as read with the card's parties, in this transaction (none: no callback).
      await notifyMerchant(ctx, {
        merchantId: card.merchant_id,
        type: 'token.updated',
        subject: `token:${tokenId}`,
        body: { token },
        url: parties.notify_url,
      });
      answer = { decision, ...(reason ? { reason } : {}), tokenId, ...(methods.length > 0 ? { authenticationMethods: methods } : {}) };
      // An approval that carried both the CVV2 and the expiry, both the card's, resets its count (§12.13).
      if (decision === 'approve' && req.cvv2 !== undefined) await resetVerificationFailures(ctx.tx, card.id);
    }
  }
  await ctx.tx
    .updateTable('token_provision_requests')
    .set({
      card_id: card?.id ?? null,
      token_id: tokenId,
      decision,
      reason,
      answer: JSON.stringify({ request: input.fingerprint, answer } satisfies StoredProvision),
    })
    .where('request_id', '=', req.requestId)
    .execute();
  return { answer, replay: false, reason };
}

/**
 * The TSP's `POST /tsp/provision` (decisions §15.2–15.3): a repeat of a requestId answered from
 * its record (nothing asked or written again); the card found by the number's keyed hash; when its
 * merchant has a token decision endpoint and the card's checks pass (a pre-check without locks),
 * the endpoint is asked outside any transaction; then the decision is made and recorded (one
 * transaction, ./provision.ts provisionToken). Throws TspRefusal (409) for a conflicting repeat.
 */
export async function processProvision(svc: Services, req: TspProvisionRequest, actor: Actor): Promise<TspProvisionAnswer> {
  const started = performance.now();
  const fingerprint = await svc.database.read((db) => requestFingerprint(svc, db, req));
  const seen = await svc.database.read((db) => storedAnswer(db, req, fingerprint));
  if (seen) return seen;
  const card = await svc.database.read((db) => cardByAccountNumber(svc, db, req.accountNumber));
  let verdict: EndpointVerdict | null = null;
  let hasEndpoint = false;
  if (card) {
    const parties = await svc.database.read((db) => partiesOf(db, card));
    if (parties?.decision_url) {
      hasEndpoint = true;
      const pre = await svc.database.read((db) => provisionFacts(svc, db, card, parties.audit_status, req, svc.clock(), 'ask'));
      if (decideProvisioning(pre).kind === 'ask') {
        const webhookSecret = svc.box.open(parties.webhook_secret_enc, `webhook-secret:${card.merchant_id}`);
        verdict = await askTokenDecision(svc, { url: parties.decision_url, webhookSecret }, req.requestId, {
          requestId: req.requestId,
          tokenReferenceId: req.tokenReferenceId,
          cardId: card.id,
          holderId: card.holder_id,
          walletProvider: req.walletProvider,
          tokenRequestorId: req.tokenRequestorId,
          tokenRequestorName: req.tokenRequestorName,
          device: req.device ? { type: req.device.type, name: req.device.name ?? null, locale: req.device.locale ?? null } : null,
          walletRiskScore: req.walletRiskScore ?? null,
          walletReasonCodes: req.walletReasonCodes ?? [],
          recentRequests: pre.recentRequests,
          liveTokens: pre.liveTokens,
          occurredAt: new Date(svc.clock()).toISOString(),
        });
      }
    }
  }
  const run = () => runVerb(svc, provisionToken, { input: { req, cardId: card?.id ?? null, verdict, hasEndpoint, fingerprint }, actor });
  // Two requests with one tokenReferenceId at once (PostgreSQL): the second's insert waits for the
  // first and violates the unique key; run again, it sees the token and is refused 409 in kind.
  const result = await run().catch((err: unknown) => {
    if (isUniqueViolation(err)) return run();
    throw err;
  });
  if (!result.replay) {
    svc.metrics.tokenProvisioning(result.answer.decision, result.reason ?? '', (performance.now() - started) / 1000);
  }
  return result.answer;
}
