/* The card network's exceptions queue (migration 0027, decisions §12.13; re-exported by ./schema.ts). */

/** An exception's statuses, listed once: open until an operator posts it to the card or returns it to the network. */
export const EXCEPTION_STATUSES = ['open', 'posted', 'returned'] as const;
export type ExceptionStatus = (typeof EXCEPTION_STATUSES)[number];

/**
 * What the held advice is: an authorization advice (0120, a hold), a clearing (0220, a payment), or
 * a refund (0220, processing 20) of a clearing itself held (migration 0030): it waits with it.
 */
export const EXCEPTION_KINDS = ['authorization', 'clearing', 'refund'] as const;
export type ExceptionKind = (typeof EXCEPTION_KINDS)[number];

/** A forced post above its ceilings, held in suspense instead of posted to its card. */
export interface NetworkExceptionsTable {
  id: string;
  kind: ExceptionKind;
  /** The message's identity (decisions §12.6): its class, fields 32, 11 and 7; and its MTI. */
  msg_class: 'authorization' | 'financial' | 'reversal';
  acquirer: string;
  stan: string;
  transmitted: string;
  mti: string;
  merchant_id: string;
  card_id: string;
  /** The card's currency; `amount` in its minor units (what the advice would post, the fee aside). */
  currency: string;
  amount: number;
  currency_txn: string;
  txn_amount: number;
  /** What `network:suspense` holds for it while open: a clearing's amount; 0 for an authorization advice. */
  suspended: number;
  /** The authorization a clearing names (its hold is taken when posted); null: none. */
  original_id: string | null;
  /** JSON: what posting it needs (an advice's acceptor and amounts; a clearing's remark). */
  details: string;
  /** Why it is held, in words (which ceiling, by how much). */
  reason: string;
  status: ExceptionStatus;
  /** The business day it was held (yyyy-MM-dd): the settlement's day of the network's clearing. */
  business_date: string;
  created_at: number;
  /** Who posted or returned it (an operator), when, and on which business day; null while open. */
  decided_by: string | null;
  decided_at: number | null;
  decided_date: string | null;
  /** Posted: the trade it made on the card. */
  trade_id: string | null;
  /**
   * An authorization advice: the clearing that was posted without it (its trade, or the exception it
   * is held as), so posting the hold now would charge twice (migration 0030); null: none.
   */
  consumed_by: string | null;
  /** A refund: the held clearing's exception it waits with (migration 0030); null otherwise. */
  held_with: string | null;
}

/** The addresses a listed certificate completed its handshake from (migration 0030; src/card-network/link/admission.ts). */
export interface NetworkPeerAddressesTable {
  /** A cap key: an IPv4 address, an IPv6 address's /64. */
  address: string;
  last_seen_at: number;
}
