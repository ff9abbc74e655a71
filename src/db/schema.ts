import type { Generated } from 'kysely';

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

export interface DB {
  merchants: MerchantsTable;
  cardholders: CardholdersTable;
  holder_reviews: HolderReviewsTable;
  idempotency_keys: IdempotencyKeysTable;
}

export type Id = Generated<string>;
