import type { ColumnType, Generated } from 'kysely';

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
  created_at: number;
  updated_at: number;
}

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
  /** idno upper-cased without spaces or hyphens: the key of the one-holder-per-document rule. */
  idno_key: string;
  audit_status: number;
  err_msg: string;
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
  purpose: 'pan' | 'pan-hash' | 'cvv';
  version: number;
  key_enc: string;
  created_at: number;
}

export type CardStatus = 'active' | 'frozen' | 'closed';

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
}

export interface TradesTable {
  seq: Generated<number>;
  id: string;
  merchant_id: string;
  card_id: string;
  trade_type: number;
  trade_status: number;
  currency: string;
  amount: number;
  fee: number;
  currency_txn: string;
  txn_amount: number;
  business_date: string;
  auth_code: string;
  remark: string;
  original_id: string | null;
  held: number;
  refunded: number;
  created_at: number;
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

export interface AuthDeclinesTable {
  id: string;
  merchant_id: string;
  card_id: string;
  currency: string;
  amount: number;
  currency_txn: string;
  txn_amount: number;
  reason_code: string;
  reason: string;
  remark: string;
  created_at: number;
}

export type KycStatus = 'init' | 'reviewing' | 'approved' | 'rejected';

export interface KycRequestsTable {
  id: string;
  merchant_id: string;
  request_no: string;
  email: string;
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
  email: string | null;
  expires_at: number;
  used_at: number | null;
  created_at: number;
}

export interface PageSessionsTable {
  id_hash: string;
  merchant_id: string;
  email: string | null;
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

export interface DB {
  rate_buckets: RateBucketsTable;
  merchant_domains: MerchantDomainsTable;
  card_reveals: CardRevealsTable;
  page_links: PageLinksTable;
  page_sessions: PageSessionsTable;
  kyc_requests: KycRequestsTable;
  callback_sequences: CallbackSequencesTable;
  callback_events: CallbackEventsTable;
  callback_attempts: CallbackAttemptsTable;
  data_keys: DataKeysTable;
  cards: CardsTable;
  trades: TradesTable;
  trade_day_counts: TradeDayCountsTable;
  ledger_postings: LedgerPostingsTable;
  auth_declines: AuthDeclinesTable;
  merchants: MerchantsTable;
  cardholders: CardholdersTable;
  holder_reviews: HolderReviewsTable;
  idempotency_keys: IdempotencyKeysTable;
}
