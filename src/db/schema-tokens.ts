/* The wallet tokens' tables (migration 0034, decisions §15; re-exported by ./schema.ts). */
import type { ColumnType } from 'kysely';

/** A token's states (decisions §15.4): pending (step-up not done) → active ⇄ suspended → deleted (final). */
export const TOKEN_STATUSES = ['pending', 'active', 'suspended', 'deleted'] as const;
export type TokenStatus = (typeof TOKEN_STATUSES)[number];
/** The states that count as live toward CARDPROGRAM_TOKENS_PER_CARD (decisions §15.3). */
export const LIVE_TOKEN_STATUSES = ['pending', 'active', 'suspended'] as const satisfies readonly TokenStatus[];

/** Who changed a token (its history's `source`): the TSP, the card's own life, the merchant, the operator, the service itself (a step-up). */
export const TOKEN_SOURCES = ['tsp', 'card', 'merchant', 'operator', 'service'] as const;
export type TokenSource = (typeof TOKEN_SOURCES)[number];

/** The wallets and requestors a token is for (decisions §15.2). */
export const WALLET_PROVIDERS = ['apple_pay', 'google_pay', 'samsung_pay', 'card_on_file'] as const;
export type WalletProvider = (typeof WALLET_PROVIDERS)[number];

export const DEVICE_TYPES = ['phone', 'watch', 'tablet', 'wearable', 'other'] as const;
export type DeviceType = (typeof DEVICE_TYPES)[number];

/** A provisioning's answer (decisions §15.2–15.3). */
export const PROVISION_DECISIONS = ['approve', 'require_authentication', 'decline'] as const;
export type ProvisionDecision = (typeof PROVISION_DECISIONS)[number];

/** How a cardholder confirms a pending token: a code by SMS or e-mail (delivered by the merchant), or the merchant's app. */
export const AUTH_METHOD_TYPES = ['otp_sms', 'otp_email', 'app'] as const;
export type AuthMethodType = (typeof AUTH_METHOD_TYPES)[number];

/** The TSP's lifecycle notifications (`POST /tsp/notify`, decisions §15.2). */
export const TSP_EVENTS = ['created', 'activated', 'suspended', 'resumed', 'deleted', 'device_changed'] as const;
export type TspEvent = (typeof TSP_EVENTS)[number];

/** What the service tells the TSP (`POST {TSP_URL}/tokens/{tokenReferenceId}/<action>`, decisions §15.4). */
export const TSP_ACTIONS = ['activate', 'suspend', 'resume', 'delete'] as const;
export type TspAction = (typeof TSP_ACTIONS)[number];

export const TSP_CALL_STATUSES = ['pending', 'done', 'failed'] as const;
export type TspCallStatus = (typeof TSP_CALL_STATUSES)[number];

/**
 * One token (decisions §15). The PAN is never here: the card is found by its keyed hash and named by
 * its id. No IP address of the device is kept.
 */
export interface TokensTable {
  /** The service's id, `tok_…`. */
  id: string;
  card_id: string;
  /** The card's merchant (the program's client: it sees and acts on its own cards' tokens only). */
  merchant_id: string;
  holder_id: string;
  /** The TSP's id of the token, unique. */
  token_reference_id: string;
  /** 11 digits. */
  token_requestor_id: string;
  token_requestor_name: string;
  wallet_provider: WalletProvider;
  token_last4: string | null;
  /** YYMM. */
  token_expiry: string | null;
  device_type: DeviceType | null;
  device_name: string | null;
  device_locale: string | null;
  status: TokenStatus;
  /** Who suspended it while `suspended` (an unfreeze resumes only those the card suspended); null otherwise. */
  suspended_by: TokenSource | null;
  /** The provisioning's decision: approve or require_authentication (a declined request makes no token). */
  decision: ProvisionDecision;
  /** Why it was not approved outright (decisions §15.3), e.g. `wallet_risk`; null: approved. */
  decision_reason: string | null;
  /** The step-up methods offered (JSON: [{id, type, value masked}]); null: none (approved). */
  auth_methods: string | null;
  created_at: number;
  updated_at: number;
}

/** Each change of a token's status (decisions §15.4: `status`, `source`, `at`, `reason`). */
export interface TokenHistoryTable {
  token_id: string;
  /** 1, 2, … per token. */
  seq: number;
  status: TokenStatus;
  source: TokenSource;
  at: number;
  reason: string | null;
}

/**
 * A provisioning request by its requestId: its answer for a repeat (decisions §15.2), and the card's
 * requests of the last 24 hours (§15.3's third request, §15.7's 20 a day). Never the PAN.
 */
export interface TokenProvisionRequestsTable {
  request_id: string;
  token_reference_id: string;
  /** null: no card had the number. */
  card_id: string | null;
  /** The token it made; null: declined. */
  token_id: string | null;
  decision: ProvisionDecision;
  reason: string | null;
  /** The answer as sent (JSON). */
  answer: string;
  created_at: number;
}

/** A pending token's activation code: only its keyed hash (decisions §15.2, §15.7). One row per token, the newest code. */
export interface TokenActivationCodesTable {
  token_id: string;
  method_id: string;
  method_type: AuthMethodType;
  /** HMAC-SHA256 (hex) under the key of the data_keys purpose `3ds`, version `key_version`, bound to the token. */
  code_hash: string;
  key_version: number;
  expires_at: number;
  /** Wrong codes entered, all the token's codes together: 3 delete the token. */
  attempts: ColumnType<number, number | undefined, number>;
  /** Codes sent for the token. */
  sent: ColumnType<number, number | undefined, number>;
  created_at: number;
  updated_at: number;
}

/** A TSP notification received, by (tokenReferenceId, event, at): its repeat changes nothing (decisions §15.2). */
export interface TokenNotificationsTable {
  token_reference_id: string;
  event: TspEvent;
  /** The event's moment (ms), as the TSP gave it. */
  at: number;
  reason: string | null;
  /** What it did: `applied`, `ignored_final`, `ignored_stale`, `unchanged`, `device_changed`. */
  outcome: string;
  received_at: number;
}

/** A change the service made, to tell the TSP (decisions §15.1, §15.4): sent, retried with backoff, each attempt recorded. */
export interface TspCallsTable {
  id: string;
  token_id: string;
  token_reference_id: string;
  /** The change's `seq` in the token's history (migration 0035): a token's calls are sent in this order; null: written before it. */
  token_seq: ColumnType<number | null, number | null | undefined, number | null>;
  action: TspAction;
  reason: string | null;
  status: TspCallStatus;
  attempts: ColumnType<number, number | undefined, number>;
  next_at: number;
  last_error: string | null;
  lease_owner: string | null;
  lease_until: number | null;
  created_at: number;
  done_at: number | null;
}

/** A merchant's token settings (`tokenSettingsUpdate.html`, decisions §15.3). */
export interface MerchantTokenSettingsTable {
  merchant_id: string;
  /** Its token decision endpoint (a signed `token.decision` event); null: the built-in rules decide. */
  decision_url: string | null;
  /** The step-up methods it offers (JSON array of AuthMethodType); null: the default (otp_sms with a mobile number, and otp_email). */
  methods: string | null;
  updated_at: number;
}
