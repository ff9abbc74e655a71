import { type Kysely, sql } from 'kysely';
import type { TxCtx } from '../context.js';
import type { SecretBox } from '../crypto/secretbox.js';
import { newId } from '../db/ids.js';
import type { Part } from '../db/one-statement.js';
import type { DB } from '../db/schema.js';
import { endpointOf } from './endpoint.js';

export type EventType =
  | 'kyc.result'
  | 'holder.audit'
  | 'trade'
  | 'card.status'
  | 'authorization.declined'
  | 'dispute.updated'
  | 'threeDs.otp'
  | 'threeDs.challenge'
  | 'threeDs.result'
  | 'token.updated'
  | 'token.otp';

/** The events sent to the merchant's notify URL (a `kyc.result` goes to its request's own `callbackUrl`). */
export const NOTIFY_EVENTS: readonly EventType[] = [
  'holder.audit',
  'trade',
  'card.status',
  'authorization.declined',
  'dispute.updated',
  'threeDs.otp',
  'threeDs.challenge',
  'threeDs.result',
  'token.updated',
  'token.otp',
];

/**
 * Events whose stored payload carries personal data (a `kyc.result` holds the request's e-mail) or
 * a secret (a `threeDs.otp` or `token.otp` holds a one-time code, decisions §14.4, §15.2): sealed at rest under the
 * master key, bound to the event (issue 26.9), opened only to be sent or shown. Other payloads (ids,
 * statuses, amounts) stay plain JSON.
 */
export const SEALED_EVENTS: readonly EventType[] = ['kyc.result', 'threeDs.otp', 'token.otp'];

const payloadContext = (eventId: string) => `callback-payload:${eventId}`;

export function sealPayload(box: SecretBox, eventId: string, payload: string): string {
  return box.seal(payload, payloadContext(eventId));
}

/** A stored payload as sent: opened when sealed (sealed values start `v1.`, JSON never does). */
export function openPayload(box: SecretBox, event: { id: string; payload: string }): string {
  return event.payload.startsWith('v1.') ? box.open(event.payload, payloadContext(event.id)) : event.payload;
}

/**
 * Writes a callback event into the outbox, in the caller's transaction: the event exists if and only
 * if the state change it reports was committed. It gets an id (`eventId`, stable across every
 * delivery attempt) and the next `sequence` of its subject. A verb passes its `ctx.wake`, so that
 * the runner wakes the worker after the commit (src/runner.ts).
 */
export async function emitEvent(
  tx: Kysely<DB>,
  event: {
    merchantId: string;
    type: EventType;
    subject: string;
    url: string;
    body: Record<string, unknown>;
    now: number;
    /** The box that seals the payload of a SEALED_EVENTS type (required for them). */
    sealWith?: SecretBox;
  },
  wake?: TxCtx['wake'],
): Promise<string> {
  const { last } = await tx
    .insertInto('callback_sequences')
    .values({ subject: event.subject, last: 1 })
    .onConflict((oc) => oc.column('subject').doUpdateSet((eb) => ({ last: eb('callback_sequences.last', '+', 1) })))
    .returning('last')
    .executeTakeFirstOrThrow();
  const id = newId('evt');
  const payload = { type: event.type, ...event.body, eventId: id, sequence: Number(last), occurredAt: new Date(event.now).toISOString() };
  const sealed = SEALED_EVENTS.includes(event.type);
  if (sealed && !event.sealWith) throw new Error(`a ${event.type} event is stored sealed: give emitEvent the secret box`);
  await tx
    .insertInto('callback_events')
    .values({
      id,
      merchant_id: event.merchantId,
      type: event.type,
      subject: event.subject,
      sequence: Number(last),
      url: event.url,
      endpoint: endpointOf(event.url),
      payload: sealed && event.sealWith ? sealPayload(event.sealWith, id, JSON.stringify(payload)) : JSON.stringify(payload),
      status: 'pending',
      attempts: 0,
      next_attempt_at: event.now,
      lease_owner: null,
      lease_until: null,
      last_error: null,
      delivered_at: null,
      created_at: event.now,
    })
    .execute();
  if (wake) wake.worker = true;
  return id;
}

/** The merchant's notify URL, read in the transaction (events go nowhere without one). */
export async function notifyUrlOf(tx: Kysely<DB>, merchantId: string): Promise<string | null> {
  const row = await tx.selectFrom('merchants').select('notify_url').where('id', '=', merchantId).executeTakeFirst();
  return row?.notify_url ?? null;
}

/** What stands for the sequence in a payload written by eventParts: the number goes in its place. */
const SEQUENCE_MARK = '\u0000sequence';

/**
 * emitEvent as two parts of one statement (src/db/one-statement.ts): the subject's next sequence,
 * then the event, its payload's `sequence` filled in by the database from the first. Not for a
 * sealed type (its payload is sealed whole).
 */
export function eventParts(
  tx: Kysely<DB>,
  event: { merchantId: string; type: EventType; subject: string; url: string; body: Record<string, unknown>; now: number },
  wake: TxCtx['wake'],
): Part[] {
  if (SEALED_EVENTS.includes(event.type)) throw new Error(`a ${event.type} event is stored sealed: emitEvent writes it`);
  const id = newId('evt');
  const text = JSON.stringify({
    type: event.type,
    ...event.body,
    eventId: id,
    sequence: SEQUENCE_MARK,
    occurredAt: new Date(event.now).toISOString(),
  });
  const [head, tail] = text.split(JSON.stringify(SEQUENCE_MARK));
  wake.worker = true;
  return [
    {
      name: 'sequence',
      query: tx
        .insertInto('callback_sequences')
        .values({ subject: event.subject, last: 1 })
        .onConflict((oc) => oc.column('subject').doUpdateSet((eb) => ({ last: eb('callback_sequences.last', '+', 1) })))
        .returning('last'),
    },
    {
      name: 'event',
      after: { part: 'sequence', fallback: sql`(select last from callback_sequences where subject = ${event.subject})` },
      query: (source) => ({
        compile: () =>
          sql`insert into callback_events (id, merchant_id, type, subject, sequence, url, endpoint, payload, status, attempts, next_attempt_at, created_at)
            select ${id}, ${event.merchantId}, ${event.type}, ${event.subject}, s.last, ${event.url}, ${endpointOf(event.url)},
              ${head} || cast(s.last as text) || ${tail}, 'pending', 0, cast(${event.now} as bigint), cast(${event.now} as bigint) from ${source} s`.compile(
            tx,
          ),
      }),
    },
  ];
}
