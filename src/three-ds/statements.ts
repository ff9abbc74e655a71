import type { Insertable } from 'kysely';
import { precompiled, type Slots } from '../db/prepared.js';
import type { ThreeDsAuthenticationsTable } from '../db/schema.js';

/**
 * The statements every AReq sends, built once per dialect (src/db/prepared.ts): lookups and writes by
 * key, prepared on PostgreSQL. An AReq is the ACS's hot path (decisions §14: the DS waits).
 */

/** The card with a number's keyed hash, and whether its merchant has a decision endpoint. */
export const cardByPanHash = precompiled((db, slot: Slots<{ hash: string }>) =>
  db
    .selectFrom('cards')
    .innerJoin('merchants', 'merchants.id', 'cards.merchant_id')
    .select(['cards.id', 'cards.merchant_id', 'merchants.three_ds_decision_url as decision_url'])
    .where('cards.pan_hash', '=', slot('hash')),
);

/** Creates the card's 3-D Secure row the first time and locks it (on PostgreSQL the upsert's conflict takes the row's lock). */
export const lockState = precompiled((db, slot: Slots<{ cardId: string; now: number }>) =>
  db
    .insertInto('three_ds_card_state')
    .values({ card_id: slot('cardId'), exempt_count: 0, exempt_eur: 0, last_challenge_at: null, updated_at: slot('now') })
    .onConflict((oc) => oc.column('card_id').doUpdateSet((eb) => ({ updated_at: eb.ref('excluded.updated_at') })))
    .returning(['exempt_count', 'exempt_eur', 'last_challenge_at']),
);

/**
 * The card with its cardholder's status and controls, its merchant's settings and its AReqs since a
 * moment: one statement, sent once the card's 3-D Secure row is locked (its snapshot then sees every
 * AReq of the card committed before).
 */
export const cardFacts = precompiled((db, slot: Slots<{ cardId: string; since: number }>) =>
  db
    .selectFrom('cards')
    .innerJoin('cardholders', 'cardholders.id', 'cards.holder_id')
    .innerJoin('merchants', 'merchants.id', 'cards.merchant_id')
    .selectAll('cards')
    .select([
      'cardholders.audit_status as holder_audit_status',
      'cardholders.controls as holder_controls',
      'merchants.notify_url as merchant_notify_url',
      'merchants.three_ds_decision_url as merchant_decision_url',
      'merchants.three_ds_challenge_method as merchant_challenge_method',
    ])
    .select((eb) =>
      eb
        .selectFrom('three_ds_authentications')
        .select((e) => e.fn.countAll<number>().as('n'))
        .whereRef('three_ds_authentications.card_id', '=', 'cards.id')
        .where('three_ds_authentications.created_at', '>', slot('since'))
        .as('recent_areqs'),
    )
    .where('cards.id', '=', slot('cardId')),
);

/**
 * The wrong one-time codes entered in a card's challenges since a moment (OTP_CARD_MAX_FAILURES,
 * ./otp.ts): read with the card's 3-D Secure row locked, so that a card's guesses count one after
 * the other on every instance.
 */
export const cardOtpFailures = precompiled((db, slot: Slots<{ cardId: string; since: number }>) =>
  db
    .selectFrom('three_ds_authentications')
    .select((eb) => eb.fn.sum<number>('otp_failures').as('n'))
    .where('card_id', '=', slot('cardId'))
    .where('created_at', '>', slot('since')),
);

/** Every column of an authentication, each given (null where it does not apply): one shape, one prepared insert. */
export type NewAuthentication = Required<Insertable<ThreeDsAuthenticationsTable>>;

const COLUMNS = [
  'acs_trans_id',
  'merchant_id',
  'card_id',
  'holder_id',
  'message_version',
  'message_category',
  'device_channel',
  'three_ds_server_trans_id',
  'ds_trans_id',
  'ds_reference_number',
  'pan_masked',
  'amount',
  'currency',
  'exponent',
  'merchant_name',
  'mcc',
  'merchant_country',
  'challenge_ind',
  'notification_url',
  'areq',
  'browser',
  'trans_status',
  'trans_status_reason',
  'eci',
  'decided_by',
  'endpoint_outcome',
  'endpoint_ms',
  'exempt_eur',
  'authentication_type',
  'challenge_method',
  'challenge_state',
  'challenge_expires_at',
  'challenge_window_size',
  'session_data',
  'otp_hash',
  'otp_key_version',
  'otp_expires_at',
  'otp_sent',
  'otp_failures',
  'oob_result',
  'interaction_counter',
  'challenge_cancel',
  'av_hash',
  'av_key_version',
  'av_issued_at',
  'used_trade_id',
  'created_at',
  'completed_at',
  'updated_at',
] as const satisfies ReadonlyArray<keyof NewAuthentication>;

/** A column added to the table and not to the list above fails to compile here. */
const allColumns: Exclude<keyof NewAuthentication, (typeof COLUMNS)[number]> extends never ? true : never = true;
void allColumns;

export const insertAuthentication = precompiled((db, slot: Slots<NewAuthentication>) =>
  db.insertInto('three_ds_authentications').values(Object.fromEntries(COLUMNS.map((c) => [c, slot(c)])) as unknown as NewAuthentication),
);
