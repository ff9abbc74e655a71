import { type Kysely, sql } from 'kysely';
import { eventParts } from '../callbacks/outbox.js';
import { type CardRow, maskedCardNo } from '../cards/model.js';
import { hasRowLocks } from '../db/locks.js';
import { type Part, type PartRows, runParts } from '../db/one-statement.js';
import { precompiled, type Slots } from '../db/prepared.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { toTradeRecord } from '../trades/record.js';
import { checkClaim, claimAuthCode, claimPart, codeCandidates, freeCandidate, usedCodesPart } from './auth-codes.js';
import type { ApprovalWrites } from './authorization-input.js';
import { book, incoming, movementKind, movesOf, TO_DRAW } from './book.js';
import type { LedgerCtx } from './context.js';
import { entryRows, type FundingMovement, type Leg, MAX_CARD_BALANCE, refuseCardBalance, refuseFunding } from './journal.js';
import { lockCard } from './locks.js';
import type { NewTrade } from './trade-rows.js';
import { tradeParts } from './trade-rows.js';

/**
 * Issue 31, decision 2: a money write of one card in three round trips on PostgreSQL (then the
 * commit). `lockCardAtOnce` is the first statement: the request's key claimed, the card locked (in the
 * lock order of docs/architecture.md, Concurrency: the key, then the card) with its merchant's notify
 * URL, and which of the drawn authCodes the card has used. The verb decides in TypeScript, as
 * before. `bookAtOnce` is the last: the card's balances, the journal entry, the code's claim, the
 * trade and its day count, its callback, the merchant's funding balance and its statement line, and
 * the stored answer, all one statement.
 *
 * On SQLite, where a statement is a call in the process and there is no round trip to save, both
 * take the way every other money verb takes (lockCard, book(): statements built once, precompiled):
 * the key claimed first in a statement of its own, the answer stored by the runner. Building the parts anew for every request cost
 * more than the statements themselves (measured with bench:http: a top-up 1,062 → 782/s on SQLite).
 */
export interface LockedCard {
  card: CardRow;
  /** The merchant's notify URL, read with the card (PostgreSQL; SQLite when the holder's controls are asked for too); undefined where it was not read. */
  notifyUrl: string | null | undefined;
  candidates: string[];
  rows: PartRows;
  /** Whether the write goes in one statement (PostgreSQL), or by book() (SQLite). */
  atOnce: boolean;
  /**
   * The cardholder's controls (when asked for), or undefined when they must be read again after the
   * lock: on PostgreSQL a statement reads the tables it does not lock as they were when it began,
   * so if the card's row changed while the statement waited for its lock (a controls change updates
   * the card's row, src/controls/update.ts), what it read of the cardholder may be older than the lock.
   */
  holderControls?: string | null | undefined;
}

/** SQLite: the merchant's card, its cardholder's controls and its merchant's notify URL. Built once (src/db/prepared.ts). */
const cardControlsAndUrl = precompiled((db, slot: Slots<{ cardId: string; merchantId: string }>) =>
  db
    .selectFrom('cards')
    .innerJoin('merchants', 'merchants.id', 'cards.merchant_id')
    .leftJoin('cardholders', 'cardholders.id', 'cards.holder_id')
    .selectAll('cards')
    .select(['merchants.notify_url', 'cardholders.controls as holder_controls'])
    .where('cards.id', '=', slot('cardId'))
    .where('cards.merchant_id', '=', slot('merchantId')),
);

/** The card's row version (PostgreSQL): the locked row's, and the one the statement's snapshot saw. */
const VERSION = 'row_version';

export async function lockCardAtOnce(ctx: LedgerCtx, cardId: string, opts: { holderControls?: boolean } = {}): Promise<LockedCard> {
  const { tx } = ctx;
  if (!hasRowLocks(tx as Kysely<unknown>)) {
    // The key first, as the runner claims it for every other verb: a request whose key is taken
    // replays its answer before anything is decided (a retry of an authorization the merchant's
    // endpoint decided relies on it: src/sandbox/authorize-with-endpoint.ts).
    await ctx.once?.claim(tx);
    if (!opts.holderControls) return { card: await lockCard(ctx, cardId), notifyUrl: undefined, candidates: [], rows: {}, atOnce: false };
    // An authorization's card with its cardholder's controls and its merchant's notify URL: one
    // statement, not three (SQLite has one writer: what it reads holds until the commit).
    const [found] = (await cardControlsAndUrl.execute(tx, { cardId, merchantId: ctx.merchantId })).rows;
    if (!found) throw new DomainError('cardNotFound');
    const { notify_url, holder_controls, ...card } = found;
    return { card: card as CardRow, notifyUrl: notify_url, holderControls: holder_controls, candidates: [], rows: {}, atOnce: false };
  }
  const candidates = codeCandidates();
  const card = tx
    .selectFrom('cards')
    .innerJoin('merchants', 'merchants.id', 'cards.merchant_id')
    .selectAll('cards')
    .select('merchants.notify_url')
    .select(sql<string>`cards.xmin::text`.as(VERSION))
    .where('cards.id', '=', cardId)
    .where('cards.merchant_id', '=', ctx.merchantId);
  const parts: Part[] = [
    ...(ctx.once ? [ctx.once.claimPart(tx)] : []),
    { name: 'card', rows: true, query: card.forUpdate('cards') },
    usedCodesPart(tx, cardId, candidates),
  ];
  if (opts.holderControls) {
    const holderOf = tx.selectFrom('cards').select('holder_id').where('id', '=', cardId);
    parts.push({ name: 'holder', rows: true, query: tx.selectFrom('cardholders').select('controls').where('id', '=', holderOf) });
    // The same row without the lock: the version the statement's snapshot saw.
    parts.push({
      name: 'seen',
      rows: true,
      query: tx.selectFrom('cards').select(sql<string>`xmin::text`.as(VERSION)).where('id', '=', cardId),
    });
  }
  const rows = await runParts(tx, parts);
  ctx.once?.check(rows);
  const [found] = (rows.card ?? []) as Array<CardRow & { notify_url: string | null; [VERSION]?: string }>;
  if (!found) throw new DomainError('cardNotFound');
  const { notify_url, [VERSION]: version, ...row } = found;
  const locked: LockedCard = { card: row as CardRow, notifyUrl: notify_url, candidates, rows, atOnce: true };
  if (opts.holderControls) {
    const unchanged = rows.seen?.[0]?.[VERSION] === version;
    if (unchanged) locked.holderControls = (rows.holder?.[0]?.controls as string | null | undefined) ?? null;
  }
  return locked;
}

/**
 * Books one card's movement with its one trade, as book() does (money coming to the card pays its
 * debt first; a closed card's goes to its merchant's funding), in one statement. `answer` is what the
 * verb answers, stored with its key in the same statement.
 */
export async function bookAtOnce(
  ctx: LedgerCtx,
  locked: LockedCard,
  given: Leg[],
  trade: NewTrade,
  answer: (trade: NewTrade) => unknown,
  more: {
    /** Fields added to the trade's `trade` callback (an authorization's acceptor and decision). */
    eventExtra?: Record<string, unknown>;
    /** Writes of the verb's own, in the same statement (an authorization's record). */
    parts?: Part[];
    /** The caller's writes, given the trade with its code, in the same statement; their check after it. */
    also?: ((trade: NewTrade) => ApprovalWrites) | undefined;
  } = {},
): Promise<void> {
  const { tx, now } = ctx;
  const { card } = locked;
  if (!locked.atOnce) {
    // SQLite: as every money verb (the runner claims the key and stores the answer).
    const known = locked.notifyUrl === undefined ? undefined : { card, notifyUrl: locked.notifyUrl };
    await book(ctx, card.currency, given, [trade], more.eventExtra, undefined, card, known);
    for (const part of more.parts ?? []) await runParts(tx, [part]);
    const also = more.also?.(trade);
    if (also) also.check(await runParts(tx, also.parts));
    return;
  }
  let legs = given;
  const { deltas, funding } = movesOf(legs);
  const delta = deltas.get(card.id) ?? { available: 0, held: 0, debt: 0 };
  if (deltas.size > 1) throw new Error('bookAtOnce: one card only');
  let released = false;
  if (delta.available > 0) {
    const back = incoming(card, card.id, delta, legs);
    legs = back.legs;
    if (back.released > 0) {
      funding.set(card.merchant_id, (funding.get(card.merchant_id) ?? 0) + back.released);
      released = true;
    }
  }
  const parts: Part[] = [];
  const moves = delta.available !== 0 || delta.held !== 0 || delta.debt !== 0;
  if (moves) parts.push(balancesPart(tx, card.id, delta, now));
  const entry = entryRows({ tradeId: trade.id, currency: card.currency, now, legs });
  if (entry.length > 0) parts.push({ name: 'entry', query: tx.insertInto('ledger_postings').values(entry) });
  let claiming = false;
  if (trade.auth_code === TO_DRAW) {
    const code = freeCandidate(locked.candidates, locked.rows);
    if (code === undefined) {
      // Every draw used (a card near the end of its codes, or a test's small space): listed and taken apart.
      trade.auth_code = await claimAuthCode(tx, [card.id], trade.id);
    } else {
      trade.auth_code = code;
      parts.push(claimPart(tx, card.id, code, trade.id));
      claiming = true;
    }
  }
  parts.push(...tradeParts(tx, trade));
  if (locked.notifyUrl) {
    const body = { cardId: card.id, ...toTradeRecord(trade, maskedCardNo(card)), ...more.eventExtra };
    parts.push(
      ...eventParts(
        tx,
        { merchantId: trade.merchant_id, type: 'trade', subject: `card:${card.id}`, url: locked.notifyUrl, body, now },
        ctx.wake,
      ),
    );
  }
  const funded = [...funding].filter(([, d]) => d !== 0);
  if (funded.length > 1) throw new Error('bookAtOnce: one merchant funding only');
  const [merchantFunding] = funded;
  if (merchantFunding) {
    const [merchantId, amount] = merchantFunding;
    const movement = { kind: movementKind(trade.trade_type, released), reference: trade.remark, cardId: card.id, tradeId: trade.id };
    parts.push(...fundingParts(tx, merchantId, card.currency, amount, now, movement));
  }
  parts.push(...(more.parts ?? []));
  const also = more.also?.(trade);
  if (also) parts.push(...also.parts);
  if (ctx.once) parts.push(ctx.once.answerPart(tx, answer(trade)));
  const rows = await runParts(tx, parts);
  also?.check(rows);
  if (moves && (rows.balances ?? []).length !== 1) await refuseCardBalance(tx, card.id, delta);
  if (merchantFunding && (rows.funding ?? []).length !== 1) await refuseFunding(tx, merchantFunding[0], card.currency, merchantFunding[1]);
  if (claiming) checkClaim(rows);
}

/** moveCardBalances's conditional update (src/ledger/journal.ts), as a part: no row when a bound would break. */
function balancesPart(tx: Kysely<DB>, cardId: string, delta: { available: number; held: number; debt: number }, now: number): Part {
  const total = delta.available + delta.held;
  return {
    name: 'balances',
    rows: true,
    query: tx
      .updateTable('cards')
      .set((eb) => ({
        available_balance: eb('available_balance', '+', delta.available),
        ledger_balance: eb('ledger_balance', '+', total),
        debt: eb('debt', '+', delta.debt),
        updated_at: now,
      }))
      .where('id', '=', cardId)
      .where('available_balance', '>=', -delta.available)
      .where('ledger_balance', '<=', MAX_CARD_BALANCE - total)
      .returning('id'),
  };
}

/**
 * moveMerchantFunding (src/ledger/journal.ts) as parts: the balance moved (a debit only if it stays
 * at or above zero: no row otherwise; a credit creates the row) and its statement's line, numbered
 * with the balance after it from what the first part returned.
 */
function fundingParts(tx: Kysely<DB>, merchantId: string, currency: string, delta: number, now: number, movement: FundingMovement): Part[] {
  const balance: Part =
    delta < 0
      ? {
          name: 'funding',
          rows: true,
          query: tx
            .updateTable('merchant_balances')
            .set((eb) => ({ available: eb('available', '+', delta), seq: eb('seq', '+', 1), updated_at: now }))
            .where('merchant_id', '=', merchantId)
            .where('currency', '=', currency)
            .where('available', '>=', -delta)
            .returning(['available', 'seq']),
        }
      : {
          name: 'funding',
          rows: true,
          query: tx
            .insertInto('merchant_balances')
            .values({ merchant_id: merchantId, currency, available: delta, seq: 1, updated_at: now })
            .onConflict((oc) =>
              oc.columns(['merchant_id', 'currency']).doUpdateSet((eb) => ({
                available: eb('merchant_balances.available', '+', delta),
                seq: eb('merchant_balances.seq', '+', 1),
                updated_at: now,
              })),
            )
            .returning(['available', 'seq']),
        };
  const line: Part = {
    name: 'line',
    // SQLite: the row as the balance's statement just left it, and only if that statement moved it
    // (changes(): the rows the last statement changed), so a refused debit writes no line.
    after: {
      part: 'funding',
      fallback: sql`(select available, seq from merchant_balances where merchant_id = ${merchantId} and currency = ${currency} and changes() = 1)`,
    },
    query: (source) => ({
      compile: () =>
        sql`insert into funding_movements (merchant_id, currency, seq, kind, amount, balance, reference, card_id, trade_id, credit_id, created_at)
          select ${merchantId}, ${currency}, b.seq, ${movement.kind}, cast(${delta} as bigint), b.available, ${movement.reference},
            ${movement.cardId ?? null}, ${movement.tradeId ?? null}, ${movement.creditId ?? null}, cast(${now} as bigint) from ${source} b`.compile(
          tx,
        ),
    }),
  };
  return [balance, line];
}
