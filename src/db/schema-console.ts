import type { ColumnType, Generated } from 'kysely';

/* The operators' tables: the audit trail, the console's accounts, sessions and login limit (re-exported by ./schema.ts). */

/** One change by an operator (src/audit/trail.ts); append-only. */
export interface AuditEventsTable {
  id: string;
  created_at: number;
  /** Who: the operator's name (the CLI's operating-system user, the console's account). */
  actor: string;
  /** cli or console (an operator), merchant, network (src/context.ts, Actor). */
  source: string;
  /** From where: the machine (CLI) or the address (console). */
  origin: string;
  /** What, e.g. merchant.update, card.freeze. */
  action: string;
  /** What it was done to: an appId, cardId, holderId, requestNo, host. */
  target: string;
  before_json: string | null;
  after_json: string | null;
}

/** The console's operator roles, each able to do what the one before can and more (src/console/roles.ts). */
export const OPERATOR_ROLES = ['viewer', 'support', 'reviewer', 'admin'] as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];

/** A console operator account (migration 0013). */
export interface OperatorsTable {
  id: string;
  /** Lower-cased. */
  email: string;
  role: OperatorRole;
  status: 'active' | 'disabled';
  /** scrypt (src/console/passwords.ts); null until the account is set up. */
  password_hash: string | null;
  /** The TOTP secret, sealed under the master key; null: no second factor (never for an admin who has logged in). */
  totp_enc: string | null;
  totp_last_step: number | null;
  failed_logins: ColumnType<number, number | undefined, number>;
  locked_until: number | null;
  /** SHA-256 of the one-time set-up link's token, while one is open. */
  setup_hash: string | null;
  setup_expires_at: number | null;
  last_login_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface OperatorSessionsTable {
  id_hash: string;
  operator_id: string;
  /** The address the session was opened from. */
  origin: string;
  created_at: number;
  last_seen_at: number;
}

/** The console's login attempts of one client (an IPv4 address or an IPv6 /64) in its current window (src/console/login-throttle.ts). */
export interface ConsoleLoginThrottleTable {
  /** `v4:a.b.c.d` or `v6:` and the /64's first four groups, written out in full. */
  client_key: string;
  window_start: number;
  attempts: number;
  /** Refused logins (throttled, busy) in the window: the first is recorded, the rest summed here. */
  refusals: Generated<number>;
}
