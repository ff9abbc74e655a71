import type { Kysely } from 'kysely';
import type { CardRow } from '../cards/model.js';
import type { Services } from '../context.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { ResponseCode } from '../iso8583/response-codes.js';
import { contentHash, storedCopy } from './card-data.js';
import { DeadlinePassed, type DecisionGate } from './decision-gate.js';
import {
  type LinkAnswer,
  type LinkClass,
  type LinkRecord,
  LinkReplay,
  linkIdentity,
  storedAnswer,
  storedAnswerAndCard,
} from './identity.js';

/**
 * A card network message acted on once by its identity (decisions §12.6): the one skeleton every
 * message class runs through (./authorize.ts, ./advise.ts, ./clear.ts, ./reverse.ts). The identity
 * (class, fields 32, 11, 7, by value), the content's keyed hash, the stored answer when a message
 * with that identity acted already (`94` when its content differs), else the class's own checks
 * and then its verb, whose claim of the identity commits with its effect; a copy that lost the
 * claim to another (LinkReplay) reads the first's answer again; any other failure of the verb
 * committed nothing and is answered by failureCode, the one table of refusals. What fails before
 * the verb (the database unreachable) is thrown: the dispatch answers it (91 for an 0100, 96 for
 * the others) and the clearing import refuses the line.
 */

/** A message class's step after the stored answer: its answer at once (a refusal), or the verb to run. */
export type Step = LinkAnswer | { verb: () => Promise<LinkAnswer> };

export interface OnceMessage<L = undefined> {
  msgClass: LinkClass;
  mti: string;
  fields: Map<number, string>;
  /** What the log calls it when it fails: `network link: <what> failed`. */
  what: string;
  /** A stored answer given to a copy is marked `replayed` (the advices and reversals: the import reports such a copy `duplicate`). */
  marksCopies?: boolean;
  /**
   * An 0100/0200's gate: a copy of a message still being decided in this process joins that
   * decision and its gate, so the merchant's endpoint is asked once (across instances the claim decides).
   */
  gate?: DecisionGate;
  /** A failure of the verb the class decides again (an advice decided meanwhile): its answer, or undefined. */
  again?: (err: unknown) => Promise<LinkAnswer> | undefined;
  /**
   * The card the message names by its PAN (field 2), read with the stored answer in one statement
   * (one round trip on PostgreSQL; on SQLite one read of the read batch, whose callers wait for the
   * disk once), and what the class makes of it before its checks (`use`, e.g. an 0100's card data
   * checked with the PAN at hand). `act`'s second argument: use's result, or null without a card.
   * Not used when a stored answer is found.
   */
  look?: CardLook<L>;
}

/** The card by its PAN and what a class makes of it (OnceMessage.look). */
export interface CardLook<L> {
  pan: string;
  use: (db: Kysely<DB>, card: CardRow) => Promise<L>;
}

/**
 * Response code of a failure of the decision that committed nothing (decisions §12.5): the verbs'
 * refusals before any write, a database that cannot be reached (91), anything else 96.
 */
export function failureCode(err: unknown): string {
  if (err instanceof DeadlinePassed) return ResponseCode.notInTime;
  if (!(err instanceof DomainError)) return ResponseCode.systemError;
  switch (err.kind) {
    case 'incorrectAmount':
      return ResponseCode.invalidAmount;
    case 'unsupportedCurrency':
      return ResponseCode.invalidTransaction;
    case 'validation':
      return ResponseCode.formatError;
    case 'cardNotFound':
      return ResponseCode.noSuchCard;
    case 'cardStatus':
      return ResponseCode.restrictedCard;
    case 'unavailable':
      return ResponseCode.notInTime;
    default:
      return ResponseCode.systemError;
  }
}

/** The message's answer, once: `act` is the class's checks after the stored answer, given what its verb claims. */
export async function onceByIdentity<L = undefined>(
  svc: Services,
  m: OnceMessage<L>,
  act: (record: LinkRecord, looked: L | null) => Promise<Step>,
): Promise<LinkAnswer> {
  const { fields } = m;
  const identity = linkIdentity(m.msgClass, fields.get(32) as string, fields.get(11) as string, fields.get(7) as string);
  // The content's hash (the vault's key, cached), the stored answer and, without one, what the class
  // looks at first: one read (on SQLite, of the read batch).
  // A stored answer is sent again as it is: only then is the read answered once on disk (SQLite).
  const { look } = m;
  const { hash, stored, looked } = await svc.database.read(
    async (db) => {
      const hash = await contentHash(svc, db, fields);
      if (!look) return { hash, stored: await storedAnswer(db, identity, hash), looked: null };
      const { stored, card } = await storedAnswerAndCard(db, identity, hash, await svc.vault.hash(db, look.pan));
      return { hash, stored, looked: stored || !card ? null : await look.use(db, card) };
    },
    { needsDisk: (r) => r.stored !== null },
  );
  const copy = (answer: LinkAnswer): LinkAnswer => (m.marksCopies ? { ...answer, replayed: true } : answer);
  if (stored) return copy(stored);
  const answer = async (): Promise<LinkAnswer> => {
    const step = await act({ identity, contentHash: hash, mti: m.mti, request: storedCopy(fields) }, looked);
    if ('code' in step) {
      // A refusal before the verb (the card unknown, expired, its currency) rests on the look, read
      // without waiting for the disk: it is sent once what that read could see is synced.
      if (m.look) await svc.database.afterDurable();
      return step;
    }
    try {
      return await step.verb();
    } catch (err) {
      const decidedAgain = m.again?.(err);
      if (decidedAgain) return decidedAgain;
      if (err instanceof LinkReplay) {
        const first = await svc.database.read((db) => storedAnswer(db, identity, hash));
        return first ? copy(first) : { code: ResponseCode.systemError };
      }
      const code = failureCode(err);
      if (code === ResponseCode.systemError)
        svc.log.error(
          { err: { name: (err as Error).name, message: (err as Error).message }, stan: fields.get(11) },
          `network link: ${m.what} failed`,
        );
      return { code };
    }
  };
  if (!m.gate) return answer();
  // A copy of a message still being decided here joins its decision.
  const key = `${identity.msgClass}\n${identity.acquirer}\n${identity.stan}\n${identity.transmitted}\n${hash}`;
  const pending = deciding(svc);
  const running = pending.get(key);
  if (running) {
    m.gate.join(running.gate);
    return running.answer;
  }
  const decided = answer();
  pending.set(key, { answer: decided, gate: m.gate });
  return decided.finally(() => pending.delete(key));
}

/** Decisions in progress in this process, by identity and content, with their gates. */
type Deciding = Map<string, { answer: Promise<LinkAnswer>; gate: DecisionGate }>;
const inProgress = new WeakMap<Services, Deciding>();
function deciding(svc: Services): Deciding {
  const map = inProgress.get(svc) ?? (new Map() as Deciding);
  inProgress.set(svc, map);
  return map;
}
