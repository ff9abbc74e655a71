import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Config } from './config.js';
import type { SecretBox } from './crypto/secretbox.js';
import type { Database } from './db/index.js';
import type { ReplicaRouter } from './db/replica.js';
import type { DB } from './db/schema.js';
import type { DomainDirectory } from './directories/domains.js';
import type { MerchantDirectory } from './directories/merchants.js';
import type { KeyInStatements } from './idempotency/keys.js';
import type { ReadNonceStore } from './idempotency/read-nonces.js';
import type { Metrics } from './metrics.js';
import type { PanVault } from './vault/pan-vault.js';

/** The service's long-lived parts. Built once in src/app.ts or the CLI; verbs reach them as `ctx.svc`. */
export interface Services {
  config: Config;
  database: Database;
  /**
   * Where a read that may be a moment stale goes (docs/operations.md, "Read replica"): the replica
   * while it is at most CARDPROGRAM_REPLICA_MAX_LAG_MS behind, else the primary. Only reads that
   * decide nothing: never in a write transaction, never a signature, nonce, balance or status check.
   */
  reads(): Kysely<DB>;
  /** The replica (DATABASE_REPLICA_URL), when there is one. */
  replica: ReplicaRouter | null;
  box: SecretBox;
  merchants: MerchantDirectory;
  /** Merchants' own host names for the card page, with their TLS contexts. */
  domains: DomainDirectory;
  vault: PanVault;
  log: FastifyBaseLogger;
  clock: () => number;
  /** Told after a commit that wrote callback events (src/runner.ts); the in-process worker listens. */
  notifier: { poke(): void };
  /** What a monitoring system scrapes at /metrics (src/metrics.ts). */
  metrics: Metrics;
  /**
   * Where reads spend their randomStr when a signed timestamp is required (src/idempotency/read-nonces.ts);
   * null: in `idempotency_keys`, durably (the sandbox's default, and the CLI, which serves no reads).
   */
  readNonces: ReadNonceStore | null;
  /**
   * What follows each change of a card's status in its transaction, after the card's row is written
   * (decisions §15.4: its wallet tokens suspended, resumed or deleted). Handed in by src/services.ts,
   * so that the cards domain imports nothing of the domains that follow it.
   */
  cardLife: CardLifeHook;
}

/** A card's status change as the domains that follow it see it: the card, its new status and why. */
export type CardLifeHook = (ctx: VerbCtx, change: { cardId: string; status: 'active' | 'frozen' | 'closed' }) => Promise<void>;

/**
 * One unit of work: the open transaction and the moment it happens. The part of a verb's context
 * that helpers inside a verb (locks, the journal, the outbox) are given.
 */
export interface TxCtx {
  tx: Kysely<DB>;
  now: number;
  /**
   * Set when the transaction leaves work for the callback worker: an event (notifyMerchant,
   * src/callbacks/merchant-event.ts), or a KYC request for the sandbox's reviewer. The runner wakes the
   * worker after the commit only then.
   */
  wake: { worker: boolean };
}

/**
 * What every verb is given, by the runner (src/runner.ts): `verb({ ctx, input })`. The verb never
 * sees HTTP, a CLI flag or a transaction it must open itself.
 */
export interface VerbCtx extends TxCtx {
  svc: Services;
  /**
   * The merchant the verb acts for: the signer of a request, the owner of a page session. Absent
   * for the operator (the CLI) and the worker, who may act on any merchant's rows.
   */
  merchantId?: string;
  /**
   * Runs fn once the transaction has committed (never if it rolls back): for caches outside the
   * database, such as the merchant directory, that must not be refreshed with what is not yet committed.
   */
  afterCommit(fn: () => void): void;
  /**
   * The run's idempotency key, for a verb marked with claimsItsKey (src/idempotency/keys.ts) run once
   * per key: it claims the key in its first statement and stores its answer in its last.
   */
  once?: KeyInStatements;
  /** Who acts, kept where a verb records it: `merchant:<appId>`, `sandbox:<appId>`, `cli` or the operator's name, `sandbox-auto`, `cardholder`. */
  actor: string;
  /** The run's actor when it is typed (src/runner.ts): for a record a verb appends itself (a security freeze's, src/cards/verification.ts). */
  by?: Actor;
}

/**
 * Who acts, typed (docs/adr/0003-actor.md): an operator, from the command line or the console (their
 * name: the operating-system user or the console account; where from: the machine or the address);
 * a merchant, by a signed request (its appId, the request's address; `sandbox` for a sandbox-only
 * simulation); the card network, over its link (the peer); a cardholder on the login-free page
 * (its holder id; where from: the page's host, not the cardholder's address, which is personal data);
 * the service itself (a periodic job, the sandbox's reviewer and set-up: `system`).
 * The runner records it in the audit trail (`source` is `cli`, `console`, `merchant`, `network` or `page`).
 */
export type Actor =
  | { kind: 'operator'; via: 'cli' | 'console'; who: string; origin: string }
  | { kind: 'merchant'; appId: string; origin: string; sandbox?: boolean }
  | { kind: 'network'; peer: string }
  | {
      kind: 'cardholder';
      via: 'page';
      /** Once the page knows the cardholder (a card of theirs); absent while it knows only a link or a session. */
      holderId?: string;
      host: string;
    }
  | { kind: 'system'; job: string };

/**
 * The service itself as the actor of its own runs: a periodic job (`dispute-expiry`,
 * `system:hold-expiry`, the ACS's `acs` expiry), the sandbox's reviewer (`sandbox-auto`) and set-up
 * (`sandbox`), the ACS's pre-check (`ds`). Its label is the job's name, as these runs were labelled before.
 */
export function system(job: string): Actor {
  return { kind: 'system', job };
}

/** How an actor is named where a verb keeps it (`ctx.actor`: holder_reviews, `card.status` events). */
export function actorLabel(actor: Actor | string): string {
  if (typeof actor === 'string') return actor;
  switch (actor.kind) {
    case 'operator':
      return actor.via === 'cli' ? 'cli' : actor.who;
    case 'merchant':
      return `${actor.sandbox ? 'sandbox' : 'merchant'}:${actor.appId}`;
    case 'network':
      return `network:${actor.peer}`;
    case 'cardholder':
      return 'cardholder';
    case 'system':
      return actor.job;
  }
}

/** The context of a verb that only a merchant calls (every money verb): the merchant is known. */
export interface MerchantCtx extends VerbCtx {
  merchantId: string;
}

/** The one shape of a business operation. */
export type Verb<I, O, C extends VerbCtx = VerbCtx> = (call: { ctx: C; input: I }) => Promise<O>;
