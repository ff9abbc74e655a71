import { type Kysely, sql } from 'kysely';
import { IDENTITY_FIELDS, KYC_SEALED_FIELDS } from '../codes/sealed-fields.js';
import type { Actor } from '../context.js';
import { newId } from '../db/ids.js';
import type { DB } from '../db/schema.js';

/** An operator: who changed something from the CLI (user and machine) or the console (account and address). */
export type Operator = Extract<Actor, { kind: 'operator' }>;

/**
 * What a change is recorded as: its action, what it acted on, and the state before it (read in its
 * transaction). Who did it is the run's actor (src/runner.ts); `by` names it when the run's actor is
 * only a label (the console keeps its account's e-mail, the CLI `cli`, in what its verbs record).
 */
export interface AuditSpec<After = unknown> {
  action: string;
  /** What it acted on; or, when the change makes it (a new key's id), taken from the result. */
  target: string | ((after: After) => string);
  before?: (tx: Kysely<DB>) => Promise<unknown>;
  by?: Actor;
}

/** What the trail stores of an actor: who, how (`source`), and from where. */
function actorColumns(actor: Actor): { actor: string; source: string; origin: string } {
  switch (actor.kind) {
    case 'operator':
      return { actor: actor.who, source: actor.via, origin: actor.origin };
    case 'merchant':
      return { actor: actor.appId, source: 'merchant', origin: actor.origin };
    case 'network':
      return { actor: actor.peer, source: 'network', origin: actor.peer };
    case 'cardholder':
      return { actor: actor.holderId ?? 'cardholder', source: 'page', origin: actor.host };
    case 'system':
      return { actor: actor.job, source: 'system', origin: 'service' };
  }
}

/** Values never written to the trail, whatever they are called in a record: secrets, keys, certificates, tokens, sessions. */
const SECRET_KEY = /secret|password|token|session|privateKey|publicKeyPem|pem|cert|^key$|_enc$/i;
/**
 * A cardholder's identity data and a KYC request's e-mail and data, sealed at rest
 * (src/holders/identity.ts, src/kyc/email.ts): never in the trail either, where every role of the
 * console reads it and a copy of the database would show it (issue 26.9: a `kyc.review` record
 * held the request's e-mail). The lists are src/codes/sealed-fields.ts's, which the modules that
 * seal them check against their types, so a new sealed field is redacted here too.
 */
const IDENTITY_KEYS: ReadonlySet<string> = new Set([...IDENTITY_FIELDS, ...KYC_SEALED_FIELDS, 'email']);

/**
 * A record with every secret-looking or identity field replaced by "[redacted]", at any depth. A
 * bare string is redacted whole: nothing says what it is (a session id, a token), so it is not kept.
 */
export function redact(value: unknown): unknown {
  if (typeof value === 'string') return '[redacted]';
  if (Array.isArray(value)) return value.map(redactField);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, SECRET_KEY.test(k) || IDENTITY_KEYS.has(k) ? '[redacted]' : redactField(v)]),
    );
  }
  return value;
}

/** A field's value: strings inside a record are kept (their name said what they are). */
const redactField = (value: unknown): unknown => (typeof value === 'string' ? value : redact(value));

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(redact(v)));

/** Appends one record, in the transaction of the change it records: both commit or neither does. */
export async function recordAudit<After>(
  tx: Kysely<DB>,
  spec: AuditSpec<After> & { by: Actor },
  now: number,
  before: unknown,
  after: After,
): Promise<void> {
  const who = actorColumns(spec.by);
  const target = typeof spec.target === 'function' ? spec.target(after) : spec.target;
  await tx
    .insertInto('audit_events')
    .values({
      id: newId('aud'),
      created_at: now,
      actor: who.actor.slice(0, 200),
      source: who.source,
      origin: who.origin.slice(0, 200),
      action: spec.action,
      target: target.slice(0, 200),
      before_json: json(before),
      after_json: json(after),
    })
    .execute();
}

export interface AuditEntry {
  id: string;
  at: string;
  actor: string;
  source: string;
  origin: string;
  action: string;
  target: string;
  before: unknown;
  after: unknown;
}

export interface AuditFilter {
  actor?: string | undefined;
  action?: string | undefined;
  target?: string | undefined;
  /** actor and target match any part (`ada` finds ada@bank.example), action its start (`card` finds card.freeze). */
  partial?: boolean | undefined;
  /** From this moment on (ms). */
  since?: number | undefined;
  limit?: number | undefined;
}

/** The trail, newest first, filtered. A read: no transaction of its own. */
export async function listAudit(db: Kysely<DB>, filter: AuditFilter = {}): Promise<AuditEntry[]> {
  let q = db.selectFrom('audit_events').selectAll();
  const like = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
  if (filter.partial) {
    if (filter.actor) q = q.where(sql<boolean>`lower(actor) like ${`%${like(filter.actor.toLowerCase())}%`} escape '\\'`);
    if (filter.action) q = q.where(sql<boolean>`action like ${`${like(filter.action)}%`} escape '\\'`);
    if (filter.target) q = q.where(sql<boolean>`lower(target) like ${`%${like(filter.target.toLowerCase())}%`} escape '\\'`);
  } else {
    if (filter.actor) q = q.where('actor', '=', filter.actor);
    if (filter.action) q = q.where('action', '=', filter.action);
    if (filter.target) q = q.where('target', '=', filter.target);
  }
  if (filter.since !== undefined) q = q.where('created_at', '>=', filter.since);
  const rows = await q
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(Math.min(Math.max(filter.limit ?? 100, 1), 10_000))
    .execute();
  return rows.map((r) => ({
    id: r.id,
    at: new Date(Number(r.created_at)).toISOString(),
    actor: r.actor,
    source: r.source,
    origin: r.origin,
    action: r.action,
    target: r.target,
    before: r.before_json === null ? null : JSON.parse(r.before_json),
    after: r.after_json === null ? null : JSON.parse(r.after_json),
  }));
}

/**
 * A read worth a record of its own (an operator opening sealed identity data): nothing changes,
 * and the audit record the runner writes with it says who looked at what, from where.
 */
export async function recordView({ input }: { input: { what: string } }): Promise<{ viewed: string }> {
  return { viewed: input.what };
}
