import { DeclineReason, type DeclineReasonValue } from '../trades/types.js';
import type { Controls } from './schemas.js';

/**
 * The rules on the acceptor, each one or two fields: a level sets either the allowed or the blocked
 * list of a kind, never both (checkControls), and the pair is one rule.
 */
const RULES = [['channels'], ['allowedMccs', 'blockedMccs'], ['allowedCountries', 'blockedCountries'], ['allowedWallets']] as const;
type RuleField = (typeof RULES)[number][number];

/**
 * The controls that decide a card's authorizations: each rule the card sets, else its
 * cardholder's ("the card wins where both apply"): a card that allows some categories replaces the
 * categories its cardholder blocks. Spending limits follow the same rule as one list (checkSpend).
 */
export function effectiveRules(card: Controls, holder: Controls): Pick<Controls, RuleField> & { holderRules: Set<RuleField> } {
  const out: Record<string, unknown> = {};
  const holderRules = new Set<RuleField>();
  for (const fields of RULES) {
    const fromCard = fields.some((f) => card[f]);
    const from = fromCard ? card : holder;
    for (const f of fields) {
      if (!from[f]) continue;
      out[f] = from[f];
      if (!fromCard) holderRules.add(f);
    }
  }
  return { ...(out as Pick<Controls, RuleField>), holderRules };
}

/** Whose rule a message names: the card's own, or its cardholder's (which the card follows). */
const whose = (rules: { holderRules?: Set<RuleField> }, field: RuleField) =>
  rules.holderRules?.has(field) ? 'by the cardholder’s controls' : 'on this card';

export interface Acceptor {
  mcc?: string | null | undefined;
  merchantCountry?: string | null | undefined;
  channel?: string | null | undefined;
  /** The wallet of the token the authorization was made with (decisions §15.5); none without a token. */
  wallet?: string | null | undefined;
}

/**
 * The first rule an authorization breaks, with its reason and a sentence for the decline message, or
 * null. A rule that admits only listed values declines an authorization that does not say its value
 * (but `allowedWallets`, which concerns only authorizations made with a wallet token).
 */
export function brokenRule(
  rules: Controls & { holderRules?: Set<RuleField> },
  a: Acceptor,
): { reason: DeclineReasonValue; message: string } | null {
  if (rules.channels && !(a.channel && (rules.channels as string[]).includes(a.channel))) {
    return {
      reason: DeclineReason.channelNotAllowed,
      message: `channel ${a.channel ?? '(none)'} is not allowed ${whose(rules, 'channels')}`,
    };
  }
  if (rules.allowedMccs && !(a.mcc && rules.allowedMccs.includes(a.mcc))) {
    return {
      reason: DeclineReason.mccNotAllowed,
      message: `merchant category ${a.mcc ?? '(none)'} is not allowed ${whose(rules, 'allowedMccs')}`,
    };
  }
  if (rules.blockedMccs && a.mcc && rules.blockedMccs.includes(a.mcc)) {
    return { reason: DeclineReason.mccBlocked, message: `merchant category ${a.mcc} is blocked ${whose(rules, 'blockedMccs')}` };
  }
  if (rules.allowedCountries && !(a.merchantCountry && rules.allowedCountries.includes(a.merchantCountry))) {
    return {
      reason: DeclineReason.countryNotAllowed,
      message: `merchant country ${a.merchantCountry ?? '(none)'} is not allowed ${whose(rules, 'allowedCountries')}`,
    };
  }
  if (rules.blockedCountries && a.merchantCountry && rules.blockedCountries.includes(a.merchantCountry)) {
    return {
      reason: DeclineReason.countryBlocked,
      message: `merchant country ${a.merchantCountry} is blocked ${whose(rules, 'blockedCountries')}`,
    };
  }
  // Unlike the lists above, only an authorization made with a token is concerned: a payment with the
  // card's own number (a plastic card, an ATM) carries no wallet, and `channels` governs those.
  if (rules.allowedWallets && a.wallet && !(rules.allowedWallets as string[]).includes(a.wallet)) {
    return { reason: DeclineReason.walletNotAllowed, message: `wallet ${a.wallet} is not allowed ${whose(rules, 'allowedWallets')}` };
  }
  return null;
}
