/* The card network link's table (re-exported by ./schema.ts). */

/** A message of the card network link that acted, with its first answer (migration 0019, decisions §12.6). */
export interface NetworkMessagesTable {
  msg_class: 'authorization' | 'financial' | 'reversal';
  /** Field 32. */
  acquirer: string;
  /** Field 11. */
  stan: string;
  /** Field 7, MMDDhhmmss UTC. */
  transmitted: string;
  /** Keyed hash (the vault's lookup key) of the message's fields without the MTI. */
  content_hash: string;
  mti: string;
  merchant_id: string | null;
  card_id: string | null;
  trade_id: string | null;
  response_code: string;
  /** JSON: the answer's fields beside those echoed (38, 39, 54). */
  answer: string;
  /** JSON: the message's fields of §12.3, PAN masked, CVV2 removed. */
  request: string;
  created_at: number;
}
