import { createHash } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { SecretBox } from '../crypto/secretbox.js';
import type { Database } from '../db/index.js';
import type { Part, PartRows } from '../db/one-statement.js';
import { precompiled, type Slots } from '../db/prepared.js';
import type { DB } from '../db/schema.js';
import { reapInPages, type SweepDeps } from '../db/sweep.js';
import { CommittedFailure, DomainError, type ErrorKind } from '../errors.js';

export interface RequestKey {
  merchantId: string;
  randomStr: string;
  operation: string;
  /** Canonical JSON of the request body without sign and timestamp. */
  canonical: string;
  /** The request's signed timestamp, when it has one: where a read's nonce is kept (read-nonces.ts). */
  timestamp?: number | undefined;
}

export interface WriteResult<T> {
  body: T;
  /** true when this is the stored answer of an earlier request with the same key. */
  replayed: boolean;
}

/**
 * What makes two requests "the same": the operation and the canonical JSON of the body without
 * `sign` and `timestamp`. Canonical JSON, unlike the signing string, is unambiguous whatever the
 * values contain. The timestamp is left out so that a client retrying later, with a fresh
 * timestamp, still gets its first answer instead of 1008 (docs/adr/0002).
 */
export function fingerprint(key: RequestKey): string {
  return createHash('sha256').update(`${key.operation}\n${key.canonical}`).digest('hex');
}

class KeyTaken extends Error {}

type KeyValues = { merchantId: string; randomStr: string; kind: 'read' | 'write'; operation: string; fingerprint: string; now: number };

/** A key, unless taken (then nothing: a write replays, a read is 1008). Built once (src/db/prepared.ts). */
const insertKey = precompiled((db, slot: Slots<KeyValues>) => keyInsert(db, slot));

function keyInsert(db: Kysely<DB>, slot: <K extends keyof KeyValues>(name: K) => KeyValues[K]) {
  return db
    .insertInto('idempotency_keys')
    .values({
      merchant_id: slot('merchantId'),
      random_str: slot('randomStr'),
      kind: slot('kind'),
      operation: slot('operation'),
      fingerprint: slot('fingerprint'),
      response_status: null,
      response_body: null,
      created_at: slot('now'),
    })
    .onConflict((oc) => oc.columns(['merchant_id', 'random_str']).doNothing());
}

/** A write's first answer, stored with its key. */
const storeAnswer = precompiled((db, slot: Slots<AnswerValues>) => answerUpdate(db, slot));

type AnswerValues = { merchantId: string; randomStr: string; status: number; body: string };

function answerUpdate(db: Kysely<DB>, slot: <K extends keyof AnswerValues>(name: K) => AnswerValues[K]) {
  return db
    .updateTable('idempotency_keys')
    .set({ response_status: slot('status'), response_body: slot('body') })
    .where('merchant_id', '=', slot('merchantId'))
    .where('random_str', '=', slot('randomStr'));
}

/** The verbs that claim their key in their own statements (marked by claimsItsKey): the runner hands them a KeyInStatements. */
const claimingVerbs = new WeakSet<object>();

/** Marks a verb that takes `ctx.once` (KeyInStatements) when run once per key. */
export function claimsItsKey<V extends object>(verb: V): V {
  claimingVerbs.add(verb);
  return verb;
}

export const claimsKey = (verb: object): boolean => claimingVerbs.has(verb);

/**
 * A write's key, for a verb that claims it in its own first statement and stores its answer in its
 * last (issue 31: a write in three round trips on PostgreSQL). Whatever the verb leaves undone (a
 * failure recorded before the claim), runWrite does itself.
 */
export class KeyInStatements {
  claimed = false;
  stored = false;
  constructor(
    private readonly values: KeyValues,
    private readonly seal: (body: string) => string,
  ) {}
  /** The key's insert, as a part of the verb's first statement (src/db/one-statement.ts). */
  claimPart(tx: Kysely<DB>): Part {
    const v = this.values;
    return { name: 'key', rows: true, query: keyInsert(tx, (k) => v[k]).returning(sql<number>`1`.as('claimed')) };
  }
  /**
   * The key's insert in a statement of its own, before anything is decided (SQLite, where there is no
   * round trip to save): a key already taken ends the transaction, and the stored answer is replayed.
   */
  async claim(tx: Kysely<DB>): Promise<void> {
    const inserted = await insertKey.execute(tx, this.values);
    if (Number(inserted.numAffectedRows ?? 0n) === 0) throw new KeyTaken();
    this.claimed = true;
  }
  /** After the first statement: a key already taken ends the transaction, and the stored answer is replayed. */
  check(rows: PartRows): void {
    if ((rows.key ?? []).length === 0) throw new KeyTaken();
    this.claimed = true;
  }
  /** The answer stored with the key, as a part of the verb's last statement. */
  answerPart(tx: Kysely<DB>, body: unknown): Part {
    this.stored = true;
    const v = { merchantId: this.values.merchantId, randomStr: this.values.randomStr, status: 200, body: this.seal(JSON.stringify(body)) };
    return { name: 'answer', query: answerUpdate(tx, (k) => v[k]) };
  }
}

/**
 * The stored answer, sealed under the master key and bound to its key. Why: a write's first answer
 * can carry identity data (a cardholder record's idno and mobile), kept for the retention period.
 */
const answerContext = (key: RequestKey) => `idempotency:${key.merchantId}:${key.randomStr}`;

function openAnswer(box: SecretBox | null, key: RequestKey, stored: string): string {
  // Answers stored before they were sealed are plain JSON (they expire with the retention period).
  return box !== null && stored.startsWith('v1.') ? box.open(stored, answerContext(key)) : stored;
}

async function replay<T>(db: Kysely<DB>, box: SecretBox | null, key: RequestKey, fp: string): Promise<WriteResult<T>> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['kind', 'fingerprint', 'response_status', 'response_body'])
    .where('merchant_id', '=', key.merchantId)
    .where('random_str', '=', key.randomStr)
    .executeTakeFirst();
  if (row?.kind !== 'write' || row.fingerprint !== fp || row.response_body === null) {
    throw new DomainError(
      'duplicateRequest',
      row && row.kind === 'write' && row.fingerprint !== fp ? 'randomStr: already used for a different request' : 'randomStr: already used',
    );
  }
  const answer = openAnswer(box, key, row.response_body);
  if (row.response_status !== 200) {
    // A stored failure (a recorded decline) replays as the same failure.
    const failure = JSON.parse(answer) as { kind: ErrorKind; msg: string; detail?: Record<string, unknown> };
    const err = new DomainError(failure.kind, failure.msg);
    err.detail = failure.detail;
    err.replayed = true;
    throw err;
  }
  return { body: JSON.parse(answer) as T, replayed: true };
}

/**
 * Runs a write exactly once per (merchant, randomStr) (decisions §4). The key row is inserted first,
 * in the same transaction as the write's effect and its stored response: a concurrent duplicate
 * blocks on that row (PostgreSQL) or on the write lock (SQLite) until the first commits, then finds
 * the key taken and replays the stored response. A failed write rolls back its key with it, so a
 * retry runs again; only a CommittedFailure (a recorded decline) is stored and replayed as a failure.
 */
export async function runWrite<T>(
  database: Database,
  key: RequestKey,
  now: number,
  effect: (tx: Kysely<DB>, once?: KeyInStatements) => Promise<T>,
  /** Seals the stored answer (null: stored as JSON, for callers without a master key). */
  box: SecretBox | null = null,
  /** The verb claims the key and stores its answer in its own statements (KeyInStatements). */
  inStatements = false,
): Promise<WriteResult<T>> {
  const fp = fingerprint(key);
  const values = {
    merchantId: key.merchantId,
    randomStr: key.randomStr,
    kind: 'write' as const,
    operation: key.operation,
    fingerprint: fp,
    now,
  };
  const seal = (json: string) => (box === null ? json : box.seal(json, answerContext(key)));
  // No lookup first: the key's insert is the lookup. A key already taken inserts nothing, the
  // transaction ends there and the stored answer is replayed; a new key, the common case, costs no
  // statement (on PostgreSQL no round trip) more than its insert.
  const claim = async (tx: Kysely<DB>) => {
    const inserted = await insertKey.execute(tx, values);
    if (Number(inserted.numAffectedRows ?? 0n) === 0) throw new KeyTaken();
  };
  let outcome: WriteResult<T> | CommittedFailure;
  try {
    outcome = await database.withTx(async (tx): Promise<WriteResult<T> | CommittedFailure> => {
      const once = inStatements ? new KeyInStatements(values, seal) : undefined;
      if (!once) await claim(tx);
      let status = 200;
      let stored: unknown;
      let result: WriteResult<T> | CommittedFailure;
      try {
        const body = await effect(tx, once);
        stored = body;
        result = { body, replayed: false };
      } catch (err) {
        if (!(err instanceof CommittedFailure)) throw err;
        status = err.error.status;
        stored = { kind: err.error.kind, msg: err.error.message, detail: err.error.detail };
        result = err;
      }
      if (once && !once.claimed) await claim(tx);
      if (!once?.stored || status !== 200) {
        await storeAnswer.execute(tx, { merchantId: key.merchantId, randomStr: key.randomStr, status, body: seal(JSON.stringify(stored)) });
      }
      return result;
    });
  } catch (err) {
    if (err instanceof KeyTaken) return replay<T>(database.db, box, key, fp);
    throw err;
  }
  if (outcome instanceof CommittedFailure) throw outcome.error;
  return outcome;
}

/** A read's randomStr is a nonce: used once, then any reuse is 1008 (decisions §4). */
export async function consumeNonce(database: Database, key: RequestKey, now: number): Promise<void> {
  // A write of its own: on SQLite it joins the group commit of concurrent requests. No fingerprint
  // for a read: any reuse is refused anyway, and a hash of a body that carries a full card number
  // (4.1 by cardNo) could be brute-forced back to the number.
  const inserted = await database.write((tx) =>
    insertKey.execute(tx, {
      merchantId: key.merchantId,
      randomStr: key.randomStr,
      kind: 'read',
      operation: key.operation,
      fingerprint: '-',
      now,
    }),
  );
  if (Number(inserted.numAffectedRows ?? 0n) === 0) throw usedNonce();
}

/** The refusal of a read whose randomStr was spent already. */
export const usedNonce = () => new DomainError('duplicateRequest', 'randomStr: already used');

/**
 * consumeNonce's insert as SQL of PostgreSQL, for a read that spends its nonce in the same statement
 * (a data-modifying `with`) as it reads, one round trip for both (the 4.1 list, src/trades/list.ts).
 * Its parameters are $1–$4 (readNonceParameters); it returns one row when the nonce was new.
 */
export const READ_NONCE_SQL = `insert into idempotency_keys (merchant_id, random_str, kind, operation, fingerprint, response_status, response_body, created_at)
  values ($1, $2, 'read', $3, '-', null, null, $4)
  on conflict (merchant_id, random_str) do nothing
  returning 1`;

export function readNonceParameters(key: RequestKey, now: number): unknown[] {
  return [key.merchantId, key.randomStr, key.operation, now];
}

/** Deletes keys older than the retention period, in pages (src/db/sweep.ts); returns how many went. */
export async function reapKeys(deps: SweepDeps, olderThan: number): Promise<number> {
  const keys = await reapInPages(deps, 'reap_idempotency_keys', {
    table: 'idempotency_keys',
    // The created_at index first: each page reads only old keys.
    key: ['created_at', 'merchant_id', 'random_str'],
    where: sql`created_at < ${olderThan}`,
  });
  // The claims of authorizations whose endpoint was asked (src/sandbox/authorize-with-endpoint.ts) go with their keys.
  await reapInPages(deps, 'reap_authorization_requests', {
    table: 'authorization_requests',
    key: ['merchant_id', 'random_str'],
    where: sql`created_at < ${olderThan}`,
  });
  return keys;
}
