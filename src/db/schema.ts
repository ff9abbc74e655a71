import type { ColumnType, Generated } from 'kysely';
import type { CallbackEndpointsTable, SweepFailuresTable } from './schema-callbacks.js';
import type { AuditEventsTable, ConsoleLoginThrottleTable, OperatorSessionsTable, OperatorsTable } from './schema-console.js';
import type { DisputeEventsTable, DisputeEvidenceTable, DisputesTable } from './schema-disputes.js';
import type { NetworkExceptionsTable, NetworkPeerAddressesTable } from './schema-exceptions.js';
import type { NetworkMessagesTable } from './schema-network.js';
import type {
  ChallengeMethod,
  ThreeDsAuthenticationsTable,
  ThreeDsCardStateTable,
  ThreeDsResultsTable,
  ThreeDsUsesTable,
} from './schema-three-ds.js';
import type {
  MerchantTokenSettingsTable,
  TokenActivationCodesTable,
  TokenHistoryTable,
  TokenNotificationsTable,
  TokenProvisionRequestsTable,
  TokensTable,
  TspCallsTable,
} from './schema-tokens.js';
import type { TspCallAttemptsTable } from './schema-tsp-attempts.js';

export type { CallbackEndpointsTable, SweepFailuresTable } from './schema-callbacks.js';
export * from './schema-console.js';
export * from './schema-disputes.js';
export * from './schema-exceptions.js';
export type { NetworkMessagesTable } from './schema-network.js';
export * from './schema-three-ds.js';
export * from './schema-tokens.js';
export * from './schema-tsp-attempts.js';

/** Timestamps are integer Unix milliseconds; booleans are 0/1: one representation on both dialects. */
export interface MerchantsTable {
  id: string;
  name: string;
  sign_type: 'HMAC-SHA256' | 'RSA-SHA256';
  secret_enc: string | null;
  public_key: string | null;
  webhook_secret_enc: string;
  login_free: number;
  notify_url: string | null;
  status: 'active' | 'disabled';
  /** Requests per second; null: the service's default (CARDPROGRAM_RATE_LIMIT). */
  rate_limit: ColumnType<number | null, number | null | undefined, number | null>;
  /** The real-time authorization endpoint (migration 0011); null: none. */
  authorization_url: ColumnType<string | null, string | null | undefined, string | null>;
  /** How long the endpoint may take, ms (at most 5000). */
  authorization_timeout_ms: ColumnType<number, number | undefined, number>;
  /** What applies when the endpoint does not answer in time or readably. */
  authorization_default: ColumnType<AuthorizationDefault, AuthorizationDefault | undefined, AuthorizationDefault>;
  /** Moves on at every roll and disable (migration 0015): page links and sessions of an earlier one open nothing. */
  credential_gen: ColumnType<number, number | undefined, number>;
  /** 1: a dispute's submission credits the card provisionally (migration 0022, decisions §13.3). */
  dispute_provisional_credit: ColumnType<number, number | undefined, number>;
  /** The merchant's 3-D Secure decision endpoint (migration 0029, decisions §14.3.4); null: none. */
  three_ds_decision_url: ColumnType<string | null, string | null | undefined, string | null>;
  /** How its cardholders are challenged (decisions §14.4): otp (default) or oob. */
  three_ds_challenge_method: ColumnType<ChallengeMethod, ChallengeMethod | undefined, ChallengeMethod>;
  created_at: number;
  updated_at: number;
}

/** What applies when a merchant's authorization endpoint does not answer (decisions §11). */
export const AUTHORIZATION_DEFAULTS = ['approve', 'decline'] as const;
export type AuthorizationDefault = (typeof AUTHORIZATION_DEFAULTS)[number];

export interface CardholdersTable {
  id: string;
  merchant_id: string;
  email: string;
  mobile: string;
  first_name: string;
  last_name: string;
  date_of_birth: string;
  nationality: string;
  sex: number;
  country_code: string;
  town: string;
  address: string;
  post_code: string;
  idno_type: number;
  idno: string;
  /** Keyed hash (40 hex) of the normalised idno: the key of the one-holder-per-document rule. */
  idno_key: string;
  /**
   * idno, date_of_birth, address, town, post_code, mobile and email, sealed as one JSON value bound
   * to the holder id (src/holders/identity.ts); those columns are stored empty. Null only for a row
   * written before migration 0007, until the start-up step seals it.
   */
  identity_enc: string | null;
  /** Keyed hash of the lower-cased e-mail: finds a holder by e-mail. */
  email_hash: string | null;
  audit_status: number;
  err_msg: string;
  /** Spending controls as JSON (src/controls/schemas.ts); null: none (migration 0011). */
  controls: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: number;
  updated_at: number;
}

export interface HolderReviewsTable {
  id: string;
  holder_id: string;
  merchant_id: string;
  from_status: number;
  to_status: number;
  err_msg: string;
  actor: string;
  created_at: number;
}

export interface IdempotencyKeysTable {
  merchant_id: string;
  random_str: string;
  kind: 'read' | 'write';
  operation: string;
  fingerprint: string;
  response_status: number | null;
  response_body: string | null;
  created_at: number;
}

export interface DataKeysTable {
  id: string;
  /** '3ds': the ACS's key (authentication values, OTP hashes; src/three-ds/keys.ts). */
  purpose: 'pan' | 'pan-hash' | 'cvv' | 'holder-hash' | '3ds';
  version: number;
  key_enc: string;
  created_at: number;
}

/** A card's statuses, listed once: the column's type and the card record's schema both read this. */
export const CARD_STATUSES = ['active', 'frozen', 'closed'] as const;
export type CardStatus = (typeof CARD_STATUSES)[number];

export interface CardsTable {
  id: string;
  merchant_id: string;
  holder_id: string;
  currency: string;
  status: CardStatus;
  pan_enc: string;
  pan_key_id: string;
  pan_hash: string;
  pan_first6: string;
  pan_last4: string;
  pan_length: number;
  expiry_month: number;
  expiry_year: number;
  available_balance: number;
  ledger_balance: number;
  created_at: number;
  updated_at: number;
  /** Who set a frozen or closed status; null while active (migration 0008). */
  status_source: StatusSource | null;
  /** Why, at most 200 characters; null while active. */
  status_reason: string | null;
  /** Spending controls as JSON (src/controls/schemas.ts); null: none (migration 0011). */
  controls: ColumnType<string | null, string | null | undefined, string | null>;
  /**
   * What forced posts (decisions §12.7) took beyond the available balance: the cardholder's debt,
   * in minor units, ≥ 0; while it is above 0 the available balance is 0 (migration 0021).
   */
  debt: ColumnType<number, number | undefined, number>;
  /**
   * The moments (ms, a JSON array) of the card's CVV2 and expiry mismatches since its count last
   * reset, the last 5 within 24 hours at most; null: none (decisions §12.13, src/cards/verification.ts;
   * migration 0025).
   */
  verification_failures: ColumnType<string | null, string | null | undefined, string | null>;
}

/**
 * Who froze or closed a card, in order of precedence: the operator's word outranks the merchant's,
 * which outranks the cardholder's. `security`: the service itself, after repeated card verification
 * failures (decisions §12.13); lifted by the merchant or the operator.
 */
export const STATUS_SOURCES = ['cardholder', 'merchant', 'operator', 'security'] as const;
export type StatusSource = (typeof STATUS_SOURCES)[number];

/**
 * PostgreSQL only (migration 0014): every trade's id with its business date, the partition it is in.
 * Its primary key keeps ids unique across the monthly partitions of `trades`; a trigger fills it.
 */
export interface TradeIdsTable {
  id: string;
  business_date: string;
}

export interface TradeDayCountsTable {
  card_id: string;
  business_date: string;
  trade_status: number;
  n: number;
}

export interface LedgerPostingsTable {
  id: Generated<number>;
  entry_id: string;
  trade_id: string | null;
  account: string;
  currency: string;
  amount: number;
  created_at: number;
}

/** Every authorization, approved (id of its 150 trade) or declined (`dcl_…`, no trade). */
export interface AuthorizationsTable {
  id: string;
  merchant_id: string;
  card_id: string;
  /** 1 approved, 0 declined. */
  approved: number;
  currency: string;
  amount: number;
  currency_txn: string;
  txn_amount: number;
  mcc: string | null;
  merchant_name: string | null;
  merchant_city: string | null;
  merchant_country: string | null;
  channel: string | null;
  /** A DeclineReason (src/trades/types.ts); null when approved. */
  decline_reason: string | null;
  decline_code: string | null;
  message: string;
  remark: string;
  /** The day it is listed under: the request's businessDate, else its UTC day. */
  business_date: string;
  created_at: number;
  /** What the merchant's authorization endpoint said (an EndpointOutcome); null: it was not asked. */
  endpoint_outcome: ColumnType<EndpointOutcome | null, EndpointOutcome | null | undefined, EndpointOutcome | null>;
  /** How long the endpoint took, ms; null: it was not asked. */
  endpoint_ms: ColumnType<number | null, number | null | undefined, number | null>;
  /** The wallet token it was made with (decisions §15.5, `tok_…`); null: none, or one not known (token_unknown). */
  token_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** What a merchant's authorization endpoint said: an answer, or none in time, or none readable. */
export const ENDPOINT_OUTCOMES = ['approved', 'declined', 'timeout', 'error'] as const;
export type EndpointOutcome = (typeof ENDPOINT_OUTCOMES)[number];

/** A spending limit's counter (src/controls/spending.ts). */
export interface SpendCountersTable {
  owner_id: string;
  limit_key: string;
  currency: string;
  period_start: number;
  used: number;
  updated_at: number;
}

/** An authorization whose merchant endpoint is being (or was) asked, by its request's randomStr. */
export interface AuthorizationRequestsTable {
  merchant_id: string;
  random_str: string;
  trade_id: string;
  /** The request's fingerprint (src/idempotency/keys.ts): a retry with another body is 1008. */
  fingerprint: string;
  outcome: EndpointOutcome | null;
  reason: string | null;
  endpoint_ms: number | null;
  deadline_at: number;
  created_at: number;
}

/** A KYC request's statuses, listed once (the column's type and the KYC status schema). */
export const KYC_STATUSES = ['init', 'reviewing', 'approved', 'rejected'] as const;
export type KycStatus = (typeof KYC_STATUSES)[number];

export interface KycRequestsTable {
  id: string;
  merchant_id: string;
  request_no: string;
  /** Emptied once sealed at start (migration 0015): the e-mail is sealed in email_enc (kyc/email.ts), found by its keyed hash. */
  email: string;
  email_enc: string | null;
  email_hash: string | null;
  fingerprint: string;
  platform: string;
  callback_url: string;
  data_enc: string;
  status: KycStatus;
  reason: string;
  holder_id: string | null;
  auto_decide_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface CallbackSequencesTable {
  subject: string;
  last: number;
}

export interface CallbackEventsTable {
  id: string;
  merchant_id: string;
  type: string;
  subject: string;
  sequence: number;
  url: string;
  payload: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  last_error: string | null;
  delivered_at: number | null;
  created_at: number;
  /** The origin of `url` (src/callbacks/endpoint.ts): what slots, fairness and the breaker go by. */
  endpoint: Generated<string>;
}

export interface CallbackAttemptsTable {
  id: string;
  event_id: string;
  attempt: number;
  started_at: number;
  duration_ms: number;
  http_status: number | null;
  error: string | null;
  response_excerpt: string | null;
}

export interface PageLinksTable {
  token_hash: string;
  merchant_id: string;
  /** The keyed hash of the e-mail (holders/identity.ts emailHash), never the e-mail itself. */
  email: string | null;
  expires_at: number;
  used_at: number | null;
  /** The merchant's credential generation it was minted under (migration 0015). */
  credential_gen: ColumnType<number, number | undefined, number>;
  created_at: number;
}

export interface PageSessionsTable {
  id_hash: string;
  merchant_id: string;
  /** The keyed hash of the e-mail (holders/identity.ts emailHash), never the e-mail itself. */
  email: string | null;
  credential_gen: ColumnType<number, number | undefined, number>;
  created_at: number;
  last_seen_at: number;
}

export interface MerchantDomainsTable {
  host: string;
  merchant_id: string;
  cert_pem: string | null;
  key_enc: string | null;
  cert_not_after: number | null;
  created_at: number;
}

export interface CardRevealsTable {
  id: string;
  merchant_id: string;
  card_id: string;
  session_hash: string;
  host: string;
  created_at: number;
}

export interface RateBucketsTable {
  merchant_id: string;
  tokens: number;
  refilled_at: number;
}

/** A merchant's funding balance in one currency: the replay of `merchant:<id>:funding`. */
export interface MerchantBalancesTable {
  merchant_id: string;
  currency: string;
  available: number;
  updated_at: number;
  /** The number of the account's last movement in `funding_movements` (0017). */
  seq: Generated<number>;
}

/** One movement of a merchant's funding account, numbered per merchant and currency (0017). */
export interface FundingMovementsTable {
  merchant_id: string;
  currency: string;
  seq: number;
  /** credit, debit (the operator's), topUp, cardClose, release, withdrawalReturn, fee. */
  kind: string;
  /** Signed minor units. */
  amount: number;
  /** The balance after it, in minor units. */
  balance: number;
  reference: string;
  card_id: string | null;
  trade_id: string | null;
  credit_id: string | null;
  created_at: number;
}

/** Every authCode a card has used (0017): unique per card. */
export interface TradeAuthCodesTable {
  card_id: string;
  auth_code: string;
  trade_id: string;
}

/** An operator's credit (or debit, negative) of a merchant's funding account. */
export interface FundingCreditsTable {
  id: string;
  merchant_id: string;
  currency: string;
  amount: number;
  actor: string;
  reference: string;
  entry_id: string;
  created_at: number;
  /** The console form's one-time token or the CLI's --idempotency-key: one credit per key (0017). */
  idempotency_key: string | null;
}

/** A card's status changes; `after_seq`: the largest trades.seq when it happened. */
export interface CardStatusEventsTable {
  id: Generated<number>;
  card_id: string;
  status: string;
  after_seq: number;
  created_at: number;
}

export interface DB {
  tokens: TokensTable;
  token_history: TokenHistoryTable;
  token_provision_requests: TokenProvisionRequestsTable;
  token_activation_codes: TokenActivationCodesTable;
  token_notifications: TokenNotificationsTable;
  tsp_calls: TspCallsTable;
  tsp_call_attempts: TspCallAttemptsTable;
  merchant_token_settings: MerchantTokenSettingsTable;
  three_ds_authentications: ThreeDsAuthenticationsTable;
  three_ds_card_state: ThreeDsCardStateTable;
  three_ds_results: ThreeDsResultsTable;
  three_ds_uses: ThreeDsUsesTable;
  disputes: DisputesTable;
  dispute_evidence: DisputeEvidenceTable;
  dispute_events: DisputeEventsTable;
  network_messages: NetworkMessagesTable;
  network_exceptions: NetworkExceptionsTable;
  network_peer_addresses: NetworkPeerAddressesTable;
  operators: OperatorsTable;
  console_login_throttle: ConsoleLoginThrottleTable;
  operator_sessions: OperatorSessionsTable;
  audit_events: AuditEventsTable;
  spend_counters: SpendCountersTable;
  authorization_requests: AuthorizationRequestsTable;
  merchant_balances: MerchantBalancesTable;
  funding_credits: FundingCreditsTable;
  funding_movements: FundingMovementsTable;
  trade_auth_codes: TradeAuthCodesTable;
  card_status_events: CardStatusEventsTable;
  rate_buckets: RateBucketsTable;
  merchant_domains: MerchantDomainsTable;
  card_reveals: CardRevealsTable;
  page_links: PageLinksTable;
  page_sessions: PageSessionsTable;
  kyc_requests: KycRequestsTable;
  callback_sequences: CallbackSequencesTable;
  callback_events: CallbackEventsTable;
  callback_attempts: CallbackAttemptsTable;
  callback_endpoints: CallbackEndpointsTable;
  sweep_failures: SweepFailuresTable;
  data_keys: DataKeysTable;
  cards: CardsTable;
  // `trades` is in src/db/trades-table.ts: only src/trades and the ledger's writers query it.
  trade_ids: TradeIdsTable;
  trade_day_counts: TradeDayCountsTable;
  ledger_postings: LedgerPostingsTable;
  authorizations: AuthorizationsTable;
  merchants: MerchantsTable;
  cardholders: CardholdersTable;
  holder_reviews: HolderReviewsTable;
  idempotency_keys: IdempotencyKeysTable;
}
