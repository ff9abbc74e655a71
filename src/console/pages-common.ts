import { AUDIT_STATUS_NAMES, type AuditStatusValue } from '../codes/audit-status.js';
import type { CallbackEventsTable } from '../db/schema.js';
import { exponent } from '../money/currency.js';
import { pill } from './view.js';

/** What the console's pages share (re-exported by ./pages.ts). */

const NOTICES: Record<string, string> = {
  reviewed: 'The cardholder’s review was recorded; the merchant is told by its holder.audit callback.',
  decided: 'The KYC decision was recorded; the merchant is told by its kyc.result callback.',
  freeze: 'The card is frozen by the operator: authorizations decline until an operator unfreezes it.',
  unfreeze: 'The card is active again.',
  close: 'The card is closed for good; its balance went back to its merchant’s funding account.',
  resent: 'The callback is queued for delivery now.',
  'resent-all': 'Every failed callback shown is queued for delivery now.',
  active: 'The merchant is active.',
  disabled: 'The merchant is disabled: its API calls, card pages and links are refused.',
  funded: 'The funding account was credited.',
  'debt-settled': 'The card’s debt was settled from its merchant’s funding account: a line of the funding statement.',
  'domain-removed': 'The host is no longer mapped to the merchant.',
  'operator-updated': 'The operator was changed; its open sessions ended.',
  'token-suspend': 'The token is suspended: its payments decline until it is resumed. The token service and the merchant are told.',
  'token-resume': 'The token is active again. The token service and the merchant are told.',
  'token-delete': 'The token is deleted for good. The token service and the merchant are told.',
};

export const notice = (done: string) => (NOTICES[done] ? { text: NOTICES[done] as string } : undefined);

export const auditPill = (status: number) => {
  const tone = status === 2 ? 'good' : status === 3 ? 'bad' : 'warn';
  return pill(AUDIT_STATUS_NAMES[status as AuditStatusValue] ?? String(status), tone);
};

export const major = (n: number, currency: string) => `${n.toFixed(exponent(currency))} ${currency}`;

export const pretty = (payload: string) => {
  try {
    return JSON.stringify(JSON.parse(payload), null, 2);
  } catch {
    return payload;
  }
};

export type EventRow = Pick<
  CallbackEventsTable,
  'id' | 'merchant_id' | 'type' | 'url' | 'status' | 'attempts' | 'next_attempt_at' | 'last_error' | 'created_at'
>;
