import type { VerbCtx } from '../context.js';
import { DomainError } from '../errors.js';
import { toMajor } from '../money/currency.js';
import { DeclineReason, type DeclineReasonValue } from '../trades/types.js';
import { type Acceptor, brokenRule, effectiveRules } from './rules.js';
import { checkSpend, parseControls, type SpendCheck } from './spending.js';

/** A decline by the spending controls: its reason and the error (2728) the request is answered with. */
export interface ControlsDecline {
  reason: DeclineReasonValue;
  error: DomainError;
}

/**
 * What the spending controls of a card and its cardholder say about spending `amount` (minor units,
 * the card's currency) at this acceptor: the rules (channel, categories, countries), then the
 * limits, whose counters are locked here and counted by `check.record()` once the money has moved.
 * The card must be locked by the caller (lockCard, lockCardAtOnce).
 */
export async function controlsDecision(
  ctx: VerbCtx,
  card: { id: string; holder_id: string; currency: string; controls: string | null },
  acceptor: Acceptor,
  amount: number,
  /**
   * The cardholder's controls, when the caller read them with the card's lock and knows them to be
   * as of the lock (lockCardAtOnce); else they are read here.
   */
  given?: string | null,
  /**
   * false: decide without holding anything (3-D Secure asks whether the controls would decline a
   * purchase, src/three-ds): the limits' counters are read, not locked, and `check.record` must not be called.
   */
  lock = true,
): Promise<{ decline: ControlsDecline } | { decline: null; check: SpendCheck }> {
  // Read in a statement of their own, after the card's lock, unless given: a statement that waited
  // for the lock would otherwise see the cardholder's controls as they were before it waited
  // (PostgreSQL reads a statement's other tables at its start), and miss a limit set meanwhile.
  const holderControls =
    given !== undefined
      ? given
      : ((await ctx.tx.selectFrom('cardholders').select('controls').where('id', '=', card.holder_id).executeTakeFirst())?.controls ?? null);
  const owners = {
    card: { id: card.id, currency: card.currency, controls: parseControls(card.controls) },
    holder: { id: card.holder_id, controls: parseControls(holderControls) },
  };
  const broken = brokenRule(effectiveRules(owners.card.controls, owners.holder.controls), acceptor);
  if (broken) return { decline: { reason: broken.reason, error: new DomainError('spendingControl', `cardId: ${broken.message}`) } };
  const check = await checkSpend(ctx, owners, amount, acceptor.mcc, ctx.svc.clock, lock);
  if (check.exceeded) {
    const { source, limit, remaining } = check.exceeded;
    const scope = limit.mccs ? ` for categories ${limit.mccs.join(', ')}` : '';
    const message = `amount: the ${source === 'card' ? 'card’s' : 'cardholder’s'} ${limit.interval.replace('_', '-')} limit of ${limit.amount} ${card.currency}${scope} has ${toMajor(remaining, card.currency)} ${card.currency} left`;
    return { decline: { reason: DeclineReason.spendingLimit, error: new DomainError('spendingControl', message) } };
  }
  return { decline: null, check };
}
