import { OPERATOR_ROLES, type OperatorRole } from '../db/schema.js';

/**
 * What each console role may do. Roles are ordered: each may do what the ones before it may, and more.
 *   viewer:   read every page
 *   support:  also freeze, unfreeze and close cards, suspend, resume and delete their wallet tokens
 *             (decisions §15.6), resend callbacks, and post or return the card network's advices
 *             held in suspense (the exceptions queue, decisions §12.13)
 *   reviewer: also decide cardholders and KYC requests, and open disputes' evidence files
 *   admin:    also manage merchants, their funding and domains, and operators, record a
 *             dispute's outcome (it moves money: the network's credit, a provisional credit taken back),
 *             and settle a closed card's debt from its merchant's funding
 */
export const PERMISSIONS = {
  read: 'viewer',
  cards: 'support',
  tokens: 'support',
  callbacks: 'support',
  exceptions: 'support',
  review: 'reviewer',
  evidence: 'reviewer',
  outcomes: 'admin',
  merchants: 'admin',
  funding: 'admin',
  debts: 'admin',
  domains: 'admin',
  operators: 'admin',
} as const satisfies Record<string, OperatorRole>;
export type Permission = keyof typeof PERMISSIONS;

export function can(role: OperatorRole, permission: Permission): boolean {
  return OPERATOR_ROLES.indexOf(role) >= OPERATOR_ROLES.indexOf(PERMISSIONS[permission]);
}

export function isRole(value: unknown): value is OperatorRole {
  return typeof value === 'string' && (OPERATOR_ROLES as readonly string[]).includes(value);
}

/**
 * Who must use a second factor: in production every role (PCI DSS 8.4.2: MFA for all access to the
 * cardholder data environment; issue 26, finding 8); in the sandbox admins, and others once they
 * have set one up.
 */
export const totpRequired = (role: OperatorRole, env: 'sandbox' | 'production') => env === 'production' || role === 'admin';
