import { type AuditSpec, recordAudit } from './audit/trail.js';
import { type Actor, actorLabel, type Services, type Verb, type VerbCtx } from './context.js';
import { CommittedFailure, type DomainError } from './errors.js';
import { claimsKey, type KeyInStatements, type RequestKey, runWrite } from './idempotency/keys.js';

/** How a verb is to be run: its input, who asks, and for which merchant. */
export interface Run<I, O = unknown> {
  input: I;
  /**
   * Who acts: an operator, a merchant or the network (Actor), or the name of a party the audit
   * trail does not record (the page's `cardholder`, the sandbox's reviewer `sandbox-auto`). The
   * verb is given its label as `ctx.actor`.
   */
  actor: Actor | string;
  merchantId?: string;
  /**
   * Run at most once per key (decisions §4: a signed write's randomStr, for the merchant named
   * above): a repeat answers the first answer, stored with the effect, and `onReplay` is told.
   */
  once?: Omit<RequestKey, 'merchantId'> & { onReplay?: () => void };
  /** The moment the verb happens at, when the caller has fixed it (a worker's pass); else the clock's now. */
  now?: number;
  /** Bookkeeping whose loss in a crash is harmless (see Database.withTx). */
  durable?: false;
  /**
   * A verb of one write statement (the sandbox's claim of an authorization's randomStr, the
   * endpoint's answer kept with it): run as Database.write runs one, on PostgreSQL on its own
   * (autocommit, no BEGIN and COMMIT round trips), on SQLite in the group commit.
   */
  statement?: true;
  /**
   * A change that needs a record (an operator's; a merchant's, through signedWrite's `audit`):
   * recorded in the audit trail (src/audit/trail.ts) in the verb's own transaction, with the actor,
   * the state before (read first, in the transaction) and the verb's result after.
   */
  audit?: AuditSpec<O>;
}

/**
 * Runs a verb: opens its transaction (retried on PostgreSQL after a lost deadlock or serialization
 * conflict, src/db/index.ts), applies idempotency when asked, and after the commit wakes the
 * callback worker if the verb left it work (an event). Routes, the CLI, the page and the worker all call
 * verbs through here.
 */
export async function runVerb<I, O, C extends VerbCtx>(
  svc: Services,
  verb: Verb<I, O, C>,
  run: Run<I, O> & Pick<C, 'merchantId'>,
): Promise<O> {
  const now = run.now ?? svc.clock();
  const wake = { worker: false };
  let after: Array<() => void> = [];
  const afterCommit = (fn: () => void) => {
    after.push(fn);
  };
  // Who the audit record names: checked before anything runs, so a run that cannot be recorded does nothing.
  const auditedBy = run.audit ? (run.audit.by ?? (typeof run.actor === 'string' ? undefined : run.actor)) : undefined;
  if (run.audit && !auditedBy) throw new Error('runVerb: an audited run needs a typed actor (or audit.by)');
  const ctx = {
    svc,
    now,
    wake,
    afterCommit,
    actor: actorLabel(run.actor),
    ...(typeof run.actor === 'string' ? {} : { by: run.actor }),
    ...(run.merchantId === undefined ? {} : { merchantId: run.merchantId }),
  };
  // A recorded decline (CommittedFailure) commits what the verb wrote before it: its afterCommit
  // work and the worker's wake-up are owed too (src/idempotency/keys.ts commits it, then throws its error).
  let committed: DomainError | null = null;
  const effect = async (tx: VerbCtx['tx'], once?: KeyInStatements) => {
    // A transaction tried again starts from nothing.
    wake.worker = false;
    after = [];
    committed = null;
    const verbCtx = { ...ctx, tx, ...(once ? { once } : {}) } as C;
    if (!run.audit || !auditedBy) {
      try {
        return await verb({ ctx: verbCtx, input: run.input });
      } catch (err) {
        if (err instanceof CommittedFailure) committed = err.error;
        throw err;
      }
    }
    const before = await run.audit.before?.(tx);
    const result = await verb({ ctx: verbCtx, input: run.input });
    await recordAudit(tx, { ...run.audit, by: auditedBy }, now, before, result);
    return result;
  };
  const started = performance.now();
  const done = () => {
    for (const fn of after) fn();
    if (wake.worker) svc.notifier.poke();
  };
  let result: O;
  try {
    if (run.once) {
      if (run.merchantId === undefined) throw new Error('runVerb: an idempotent run needs its merchant');
      const { onReplay, ...key } = run.once;
      const outcome = await runWrite(svc.database, { ...key, merchantId: run.merchantId }, now, effect, svc.box, claimsKey(verb));
      if (outcome.replayed) {
        // Nothing of this run was committed: its afterCommit work, if any, is not done.
        onReplay?.();
        return outcome.body;
      }
      result = outcome.body;
    } else if (run.statement) {
      result = await svc.database.write((db) => effect(db));
    } else {
      result = await svc.database.withTx(effect, run.durable === false ? { durable: false } : undefined);
    }
  } catch (err) {
    // Only the failure runWrite committed and then threw was committed; any other error rolled back.
    if (committed !== null && err === committed) done();
    throw err;
  }
  svc.metrics.transaction((performance.now() - started) / 1000);
  done();
  return result;
}

/**
 * Runs a verb's pre-check: the reads a verb would make, without locks and outside any transaction,
 * before the run that decides (an AReq's pre-check, asked of the merchant's decision endpoint before
 * the transaction opens; an authorization's, the link's and the sandbox's, before its authorization
 * endpoint is asked). fn is given a context as a verb is, its `tx` the read's connection
 * (`svc.database.read`: on SQLite the read batch), or `db` when given (PostgreSQL's urgent lane). It
 * decides nothing and writes nothing: nothing wakes the worker, nothing runs after a commit. The one
 * other place a context is made.
 */
export function runPrecheck<O>(
  svc: Services,
  fn: (ctx: VerbCtx) => Promise<O>,
  run: { actor: Actor | string; merchantId?: string; now?: number; db?: VerbCtx['tx'] },
): Promise<O> {
  const now = run.now ?? svc.clock();
  const ctx = (tx: VerbCtx['tx']): VerbCtx => ({
    svc,
    tx,
    now,
    wake: { worker: false },
    afterCommit: () => {},
    actor: actorLabel(run.actor),
    ...(typeof run.actor === 'string' ? {} : { by: run.actor }),
    ...(run.merchantId === undefined ? {} : { merchantId: run.merchantId }),
  });
  return run.db ? fn(ctx(run.db)) : svc.database.read((tx) => fn(ctx(tx)));
}
