/* The 3-D Secure tables (migration 0029, decisions §14; re-exported by ./schema.ts). */
import type { ColumnType } from 'kysely';

/** How a merchant's cardholders are challenged (decisions §14.4): a code it delivers, or its own app. */
export const CHALLENGE_METHODS = ['otp', 'oob'] as const;
export type ChallengeMethod = (typeof CHALLENGE_METHODS)[number];

/** What decided an authentication (docs/3ds.md, "The decision"). */
export const THREE_DS_DECIDERS = ['refused', 'exemption', 'mandate', 'risk', 'endpoint', 'endpoint_timeout', 'endpoint_error'] as const;
export type ThreeDsDecider = (typeof THREE_DS_DECIDERS)[number];

/** Where a challenge stands; null on an authentication decided in its ARes. */
export const CHALLENGE_STATES = ['pending', 'open', 'done'] as const;
export type ChallengeState = (typeof CHALLENGE_STATES)[number];

/**
 * One authentication: an AReq and what became of it (decisions §14.2–14.4). The PAN is never
 * stored (the card is found by its keyed hash; `pan_masked` is what may be shown); the browser's
 * data is dropped after 30 days (src/three-ds/purge.ts); the OTP only as a keyed hash.
 */
export interface ThreeDsAuthenticationsTable {
  /** The ACS's transaction id: a random UUID (v4), unguessable. */
  acs_trans_id: string;
  /** The card's merchant (the program's client, who is asked and told); null: no card had the number. */
  merchant_id: string | null;
  card_id: string | null;
  holder_id: string | null;
  message_version: string;
  /** 01 payment, 02 non-payment. */
  message_category: string;
  /** 01 app, 02 browser, 03 requestor-initiated. */
  device_channel: string;
  three_ds_server_trans_id: string;
  ds_trans_id: string;
  ds_reference_number: string;
  /** First 6 and last 4 digits. */
  pan_masked: string;
  /** purchaseAmount in minor units of `currency`; null: none sent (non-payment), or beyond any card's reach. */
  amount: number | null;
  /** ISO 4217 alphabetic when the service knows the numeric code, else the numeric code as sent; null: none sent. */
  currency: string | null;
  /** purchaseExponent: the amount's minor-unit exponent. */
  exponent: number | null;
  merchant_name: string | null;
  mcc: string | null;
  /** merchantCountryCode as sent (ISO 3166-1 numeric). */
  merchant_country: string | null;
  challenge_ind: string | null;
  notification_url: string | null;
  /** The AReq as validated: its known elements, the PAN masked, without the browser's (JSON). */
  areq: string;
  /** The browser's elements (JSON); null after 30 days, or none sent. */
  browser: string | null;
  trans_status: string;
  trans_status_reason: string | null;
  eci: string | null;
  decided_by: ThreeDsDecider;
  /** What the merchant's decision endpoint said (frictionless, challenge, decline, timeout, error); null: not asked. */
  endpoint_outcome: string | null;
  endpoint_ms: number | null;
  /** The part of the low-value exemption this authentication used, in EUR minor units; null: not exempted. */
  exempt_eur: number | null;
  /** 02 OTP, 03 out of band; null: no challenge. */
  authentication_type: string | null;
  challenge_method: ChallengeMethod | null;
  challenge_state: ChallengeState | null;
  /** A challenge left unfinished at this moment ends N/14 (5 minutes after the ARes). */
  challenge_expires_at: number | null;
  /** The CReq's window size, once the page opened the challenge. */
  challenge_window_size: string | null;
  /** The browser's threeDSSessionData, posted back with the CRes. */
  session_data: string | null;
  /** The OTP's keyed hash (src/three-ds/otp.ts), the key's version, when it expires, how many were sent. */
  otp_hash: string | null;
  otp_key_version: number | null;
  otp_expires_at: number | null;
  otp_sent: ColumnType<number, number | undefined, number>;
  /** Wrong codes entered: 3 end the challenge N/19. */
  otp_failures: ColumnType<number, number | undefined, number>;
  /** The merchant's answer to an out-of-band challenge: approved or declined. */
  oob_result: string | null;
  interaction_counter: ColumnType<number, number | undefined, number>;
  challenge_cancel: string | null;
  /** SHA-256 of the authentication value (hex), to find it when an authorization carries it; null: none issued. */
  av_hash: string | null;
  /** The version of the 3DS key the value was made with (data_keys, purpose 3ds). */
  av_key_version: number | null;
  av_issued_at: number | null;
  /** The approved authorization that used the value (one at most, decisions §14.5); null: unused. */
  used_trade_id: string | null;
  created_at: number;
  completed_at: number | null;
  updated_at: number;
}

/**
 * Per card, the low-value exemption's counters since its last successful challenge (decisions
 * §14.3.5), and the row an AReq of the card locks first: two AReqs at once are counted one after
 * the other (the hourly limit and the exemption's fifth slot).
 */
export interface ThreeDsCardStateTable {
  card_id: string;
  exempt_count: number;
  exempt_eur: number;
  /** The last successful challenge; null: none yet. */
  last_challenge_at: number | null;
  updated_at: number;
}

/** A result to report to the DS (`RReq`, decisions §14.1), retried until it answers, at most 24 hours. */
export interface ThreeDsResultsTable {
  acs_trans_id: string;
  /** The RReq (JSON), sealed under the master key (it carries the authentication value), bound to `three-ds-rreq:<acsTransID>`. */
  rreq_enc: string;
  status: 'pending' | 'sent' | 'failed';
  attempts: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  last_error: string | null;
  /** The RRes as received (JSON). */
  rres: string | null;
  sent_at: number | null;
  created_at: number;
}

/** Authorizations that carried an authentication's value (declined ones too): its `tradeIds`. */
export interface ThreeDsUsesTable {
  acs_trans_id: string;
  trade_id: string;
  /** 1: the approved authorization that used the value. */
  approved: number;
  created_at: number;
}
