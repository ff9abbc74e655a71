import { AUTH_METHOD_TYPES, type AuthMethodType } from '../db/schema.js';
import type { TspAuthMethod } from './schemas.js';

/** A mobile number as the TSP may show it: its last 4 digits (decisions §15.2: `••• ••• 1234`). */
export function maskMobile(mobile: string): string {
  const digits = mobile.replace(/\D/g, '');
  return `••• ••• ${digits.slice(-4)}`;
}

/** An e-mail address as the TSP may show it: its first character and its domain (`j•••@example.com`). */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at <= 0) return '•••';
  return `${email[0]}•••${email.slice(at)}`;
}

/** The merchant's methods as stored (JSON array of types); null or unreadable: the default. */
export function storedMethods(json: string | null): AuthMethodType[] | null {
  if (json === null) return null;
  try {
    const list = JSON.parse(json) as unknown;
    return Array.isArray(list) ? list.filter((m): m is AuthMethodType => (AUTH_METHOD_TYPES as readonly string[]).includes(m)) : null;
  } catch {
    return null;
  }
}

/**
 * The step-up methods a pending token is offered (decisions §15.3): those the merchant's settings
 * name, by default `otp_sms` when the cardholder has a mobile number and `otp_email`; a method by
 * code only where the merchant can deliver it (a notify URL for the `token.otp` callback) and the
 * cardholder has the address; `app` always (the merchant's app confirms with tokenActivate). Ids are
 * the method's place in the list, from 1; values masked, never the address in clear.
 */
export function offeredMethods(opts: {
  configured: AuthMethodType[] | null;
  mobile: string;
  email: string;
  merchantName: string;
  canDeliver: boolean;
}): TspAuthMethod[] {
  const hasMobile = opts.mobile.replace(/\D/g, '').length >= 4;
  const wanted = opts.configured ?? (hasMobile ? ['otp_sms', 'otp_email'] : ['otp_email']);
  const methods: TspAuthMethod[] = [];
  for (const type of wanted) {
    if (methods.some((m) => m.type === type)) continue;
    let value: string | null = null;
    if (type === 'otp_sms' && opts.canDeliver && hasMobile) value = maskMobile(opts.mobile);
    if (type === 'otp_email' && opts.canDeliver && opts.email.includes('@')) value = maskEmail(opts.email);
    if (type === 'app') value = opts.merchantName;
    if (value !== null) methods.push({ id: String(methods.length + 1), type, value });
  }
  return methods;
}
