import { type Kysely, sql } from 'kysely';
import type { CardRow } from '../cards/model.js';
import { afterDurable } from '../db/index.js';
import type { PartRows } from '../db/one-statement.js';
import { precompiled, type Slots } from '../db/prepared.js';
import type { DB, NetworkMessagesTable } from '../db/schema.js';
import { ResponseCode } from '../iso8583/response-codes.js';
import type { ApprovalWrites } from '../ledger/authorization-input.js';
import type { LedgerCtx } from '../ledger/context.js';
import type { AdviceMessage } from '../ledger/suspense.js';

/**
 * A card network message's identity and its stored answer (decisions §12.6, docs/network.md): what
 * makes a message act once. Its identity by value, the claim of it with its answer in the effect's
 * transaction, the answer a copy gets, and the original a field 90 names. The message classes
 * (./authorize.ts, ./advise.ts, ./clear.ts, ./reverse.ts) act through ./once.ts.
 */

export type LinkClass = NetworkMessagesTable['msg_class'];

/** A message's identity (decisions §12.6): its class, field 32, field 11 and field 7, by value (linkIdentity). */
export interface LinkIdentity {
  msgClass: LinkClass;
  acquirer: string;
  stan: string;
  transmitted: string;
}

/** Digits as the number they write (decisions §12.13, identity by value): without leading zeros (`0412345` is `412345`). */
export const byValue = (digits: string) => digits.replace(/^0+(?=\d)/, '');

/**
 * A message's identity by value, built once here for every class (decisions §12.13): field 32 (n..11,
 * variable) without leading zeros, fields 11 and 7 (n6, n10) at their fixed widths. Stored so
 * (migration 0025), so the unique key and the field 90 look-ups compare numbers.
 */
export function linkIdentity(msgClass: LinkClass, acquirer: string, stan: string, transmitted: string): LinkIdentity {
  return {
    msgClass,
    acquirer: byValue(acquirer),
    stan: byValue(stan).padStart(6, '0'),
    transmitted: byValue(transmitted).padStart(10, '0'),
  };
}

/** The original field 90 names: its MTI, STAN, field 7 and acquirer (n11), the acquirer by value. */
export function originalOf(f90: string): { mti: string; stan: string; transmitted: string; acquirer: string } {
  return { mti: f90.slice(0, 4), stan: f90.slice(4, 10), transmitted: f90.slice(10, 20), acquirer: byValue(f90.slice(20, 31)) };
}

/** What an answer carries beside the fields it echoes: field 39, and 38 and 54 when they apply. */
export interface LinkAnswer {
  /** Field 39 (decisions §12.5). */
  code: string;
  /** Field 38: the trade's authCode, on an approval. */
  authCode?: string | undefined;
  /** Field 54, a balance inquiry's available balance. */
  balance?: string | undefined;
  /** The trade or declined authorization the message produced. */
  tradeId?: string | undefined;
  /** A forced post (decisions §12.7): posted though the rules would have refused it. */
  forced?: boolean | undefined;
  /** A forced post above its ceilings (§12.13): acknowledged, held in suspense as this exception, not on the card. */
  exceptionId?: string | undefined;
  /**
   * Never stored: this answer is the one another copy of the message stored when it acted (a
   * repeat, or a copy that won the claim first: the link, another import); this copy did nothing.
   */
  replayed?: true | undefined;
}

/** The message as the exception of an advice held in suspense keeps it (§12.13). */
export const adviceMessage = (record: LinkRecord): AdviceMessage => ({ ...record.identity, mti: record.mti });

/** What is stored of a message: its identity, a keyed hash of its content, its fields of §12.3 with the PAN masked and no CVV2. */
export interface LinkRecord {
  identity: LinkIdentity;
  contentHash: string;
  mti: string;
  request: Record<string, string>;
}

/** The same identity was claimed by a message that committed first: its answer is the answer. */
export class LinkReplay extends Error {
  override name = 'LinkReplay';
}

/**
 * The stored answer of a message with this identity: its answer when the content is the same, `94`
 * when it is not, null when no message with this identity acted.
 */
export async function storedAnswer(db: Kysely<DB>, identity: LinkIdentity, contentHash: string): Promise<LinkAnswer | null> {
  const row = await db
    .selectFrom('network_messages')
    .select(['content_hash', 'answer'])
    .where('msg_class', '=', identity.msgClass)
    .where('acquirer', '=', identity.acquirer)
    .where('stan', '=', identity.stan)
    .where('transmitted', '=', identity.transmitted)
    .executeTakeFirst();
  return row ? answerOf(db, row, contentHash) : null;
}

/** A stored answer as it is sent again: `94` when the copy's content differs from the first's. */
async function answerOf(db: Kysely<DB>, row: { content_hash: string; answer: string }, contentHash: string): Promise<LinkAnswer> {
  // Answered without a commit of this message's own: not before the row is on disk (SQLite).
  await afterDurable(db);
  if (row.content_hash !== contentHash) return { code: ResponseCode.duplicate };
  return JSON.parse(row.answer) as LinkAnswer;
}

/** storedAnswerAndCard's statement: built once, prepared on PostgreSQL (lookups by key). */
const storedAndCard = precompiled(
  (db, slot: Slots<{ msgClass: LinkClass; acquirer: string; stan: string; transmitted: string; panHash: string }>) =>
    db
      .selectFrom(sql<{ one: number }>`(select 1 as one)`.as('one'))
      .leftJoin('network_messages', (j) =>
        j
          .on('network_messages.msg_class', '=', slot('msgClass'))
          .on('network_messages.acquirer', '=', slot('acquirer'))
          .on('network_messages.stan', '=', slot('stan'))
          .on('network_messages.transmitted', '=', slot('transmitted')),
      )
      .leftJoin('cards', (j) => j.on('cards.pan_hash', '=', slot('panHash')))
      .selectAll('cards')
      .select(['network_messages.content_hash as stored_hash', 'network_messages.answer as stored_answer']),
);

/**
 * The stored answer of a message with this identity and the card whose PAN's keyed hash is given,
 * in one statement (one round trip on PostgreSQL, not two): each is null when there is none.
 */
export async function storedAnswerAndCard(
  db: Kysely<DB>,
  identity: LinkIdentity,
  contentHash: string,
  panHash: string,
): Promise<{ stored: LinkAnswer | null; card: CardRow | null }> {
  const { rows } = await storedAndCard.execute(db, { ...identity, panHash });
  const row = rows[0];
  if (!row) throw new Error('storedAnswerAndCard: no row');
  const { stored_hash, stored_answer, ...card } = row;
  return {
    stored:
      stored_hash === null || stored_answer === null
        ? null
        : await answerOf(db, { content_hash: stored_hash, answer: stored_answer }, contentHash),
    card: card.id === null ? null : (card as CardRow),
  };
}

/** The claim's insert: nothing when a message with this identity claimed it first. */
function claimInsert(ctx: LedgerCtx, record: LinkRecord, cardId: string, answer: LinkAnswer) {
  const { identity } = record;
  return ctx.tx
    .insertInto('network_messages')
    .values({
      msg_class: identity.msgClass,
      acquirer: identity.acquirer,
      stan: identity.stan,
      transmitted: identity.transmitted,
      content_hash: record.contentHash,
      mti: record.mti,
      merchant_id: ctx.merchantId,
      card_id: cardId,
      trade_id: answer.tradeId ?? null,
      response_code: answer.code,
      answer: JSON.stringify(answer),
      request: JSON.stringify(record.request),
      created_at: ctx.now,
    })
    .onConflict((oc) => oc.columns(['msg_class', 'acquirer', 'stan', 'transmitted']).doNothing());
}

/** Claims the identity with the answer, in the verb's transaction; a message that claimed it first makes this one a replay. */
export async function claim(ctx: LedgerCtx, record: LinkRecord, cardId: string, answer: LinkAnswer): Promise<void> {
  const inserted = await claimInsert(ctx, record, cardId, answer).executeTakeFirst();
  // On PostgreSQL a concurrent duplicate waits here for the first one's commit, then inserts
  // nothing; its own effect is rolled back with it (LinkReplay) and the first answer read.
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) throw new LinkReplay();
}

/**
 * The claim as a part of the verb's last statement (an approval's: src/ledger/book-at-once.ts), and
 * its check: no row, a message with this identity claimed it first (LinkReplay, as claim()).
 */
export function claimWrites(ctx: LedgerCtx, record: LinkRecord, cardId: string, answer: LinkAnswer): ApprovalWrites {
  return {
    parts: [{ name: CLAIM, rows: true, query: claimInsert(ctx, record, cardId, answer).returning(sql<number>`1`.as('claimed')) }],
    check: (rows: PartRows) => {
      if ((rows[CLAIM] ?? []).length === 0) throw new LinkReplay();
    },
  };
}

/** The claim's part's name in its statement. */
const CLAIM = 'link_claim';

/**
 * The original a message's field 90 names (its class, STAN, field 7, acquirer), compared by value:
 * the message that acted, or null. Only the acquirer that sent the original names it (decisions
 * §12.13): a message whose own field 32 is another acquirer's finds nothing, whatever its field 90
 * says (then `25` for a reversal, a forced post for a clearing).
 */
export async function originalMessage(
  db: Kysely<DB>,
  msgClass: LinkClass,
  f90: string,
  ownAcquirer: string,
): Promise<{ tradeId: string | null; cardId: string | null; merchantId: string | null; code: string } | null> {
  const original = originalOf(f90);
  if (byValue(ownAcquirer) !== original.acquirer) return null;
  const identity = linkIdentity(msgClass, original.acquirer, original.stan, original.transmitted);
  const row = await db
    .selectFrom('network_messages')
    .select(['trade_id', 'card_id', 'merchant_id', 'response_code'])
    .where('msg_class', '=', identity.msgClass)
    .where('acquirer', '=', identity.acquirer)
    .where('stan', '=', identity.stan)
    .where('transmitted', '=', identity.transmitted)
    .executeTakeFirst();
  return row ? { tradeId: row.trade_id, cardId: row.card_id, merchantId: row.merchant_id, code: row.response_code } : null;
}
