import { randomBytes } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { recordAudit } from '../audit/trail.js';
import type { Services, VerbCtx } from '../context.js';
import { newId } from '../db/ids.js';
import type { DB, OperatorRole, OperatorsTable } from '../db/schema.js';
import { DomainError, invalid } from '../errors.js';
import { sha256 } from '../page/links.js';
import { totpRequired } from './roles.js';
import { matchStep } from './totp.js';

/**
 * Operator accounts of the console: created by an admin (or `cardprogram operator create`) with a
 * one-time set-up link; the operator chooses a password and a second factor (TOTP: in production
 * for every role, in the sandbox for an admin always). After LOCK_AFTER failed logins in a row an
 * account is locked for LOCK_MS.
 */
export const SETUP_TTL_MS = 24 * 3_600_000;
export const LOCK_AFTER = 5;
export const LOCK_MS = 15 * 60_000;

export type OperatorRow = Selectable<OperatorsTable>;

/** An account as the console and the CLI show it: never a hash, a secret or a link. */
export interface OperatorSummary {
  operatorId: string;
  email: string;
  role: OperatorRole;
  status: 'active' | 'disabled';
  /** set up: a password chosen; pending: a set-up link open; none: neither (reset and its link expired). */
  setup: 'done' | 'pending' | 'expired';
  totp: boolean;
  lockedUntil: string | null;
  lastLoginAt: string | null;
  createdAt: string;
}

/** An account with no way in yet: no password, no second factor, no failures, not locked (a new one, or one reset). */
const NO_CREDENTIALS = { password_hash: null, totp_enc: null, totp_last_step: null, failed_logins: 0, locked_until: null } as const;

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

export function operatorSummary(row: OperatorRow, now: number): OperatorSummary {
  return {
    operatorId: row.id,
    email: row.email,
    role: row.role,
    status: row.status,
    setup:
      row.password_hash !== null ? 'done' : row.setup_expires_at !== null && Number(row.setup_expires_at) > now ? 'pending' : 'expired',
    totp: row.totp_enc !== null,
    lockedUntil: row.locked_until !== null && Number(row.locked_until) > now ? iso(row.locked_until) : null,
    lastLoginAt: iso(row.last_login_at),
    createdAt: iso(row.created_at) ?? '',
  };
}

/** An operator's e-mail: one @, no spaces or control characters, a dotted host. */
const EMAIL = /^[^\s@\p{Cc}]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/u;

export function normaliseOperatorEmail(email: string): string {
  const e = email.trim().toLowerCase();
  if (e.length > 254 || !EMAIL.test(e)) throw invalid('email', 'must be an e-mail address');
  return e;
}

/** The TOTP secret is sealed under the master key, bound to its account. */
export const totpContext = (operatorId: string) => `operator-totp:${operatorId}`;

async function byEmail(tx: Kysely<DB>, email: string): Promise<OperatorRow> {
  const row = await tx.selectFrom('operators').selectAll().where('email', '=', email).executeTakeFirst();
  if (!row) throw new DomainError('validation', `email: no operator ${email}`);
  return row;
}

/** A new set-up token: 256 random bits, stored only as its SHA-256. */
function setupToken(now: number) {
  const token = randomBytes(32).toString('base64url');
  return { token, columns: { setup_hash: sha256(token), setup_expires_at: now + SETUP_TTL_MS } };
}

export interface CreatedOperator extends OperatorSummary {
  /** The one-time set-up token (the link is `/console/setup?token=…`): shown once, to the creator. */
  setupToken: string;
}

/** Creates an account; its operator sets it up through the link within 24 hours. */
export async function createOperator({
  ctx,
  input,
}: {
  ctx: VerbCtx;
  input: { email: string; role: OperatorRole };
}): Promise<CreatedOperator> {
  const { tx, now } = ctx;
  const email = normaliseOperatorEmail(input.email);
  const exists = await tx.selectFrom('operators').select('id').where('email', '=', email).executeTakeFirst();
  if (exists) throw new DomainError('validation', `email: an operator ${email} exists already`);
  const { token, columns } = setupToken(now);
  const row: OperatorRow = {
    id: newId('op'),
    email,
    role: input.role,
    status: 'active',
    ...NO_CREDENTIALS,
    ...columns,
    last_login_at: null,
    created_at: now,
    updated_at: now,
  };
  await tx.insertInto('operators').values(row).execute();
  return { ...operatorSummary(row, now), setupToken: token };
}

/**
 * Starts an account over (a forgotten password, a lost phone): the password and second factor are
 * removed, every session ends, and a new set-up link is made.
 */
export async function resetOperator({ ctx, input }: { ctx: VerbCtx; input: { email: string } }): Promise<CreatedOperator> {
  const { tx, now } = ctx;
  const row = await byEmail(tx, normaliseOperatorEmail(input.email));
  const { token, columns } = setupToken(now);
  const changed = { ...NO_CREDENTIALS, ...columns, updated_at: now };
  await tx.updateTable('operators').set(changed).where('id', '=', row.id).execute();
  await tx.deleteFrom('operator_sessions').where('operator_id', '=', row.id).execute();
  return { ...operatorSummary({ ...row, ...changed }, now), setupToken: token };
}

/**
 * Changes an account's role or status. Any change ends the account's sessions: a demoted or
 * disabled operator's open console loses its rights at once, not at its next login. A new role, or
 * disabling, also ends an open set-up link: a link is for the role it was issued for, and a
 * viewer's link must not set up an admin (issue 26, finding 10); `reset` issues a new one. The last
 * active admin can be neither demoted nor disabled (nobody could manage operators then).
 */
export async function updateOperator({
  ctx,
  input,
}: {
  ctx: VerbCtx;
  input: { email: string; role?: OperatorRole | undefined; status?: 'active' | 'disabled' | undefined };
}): Promise<OperatorSummary> {
  const { tx, now } = ctx;
  const row = await byEmail(tx, normaliseOperatorEmail(input.email));
  const next = { role: input.role ?? row.role, status: input.status ?? row.status };
  if (next.role === 'admin' && row.role !== 'admin' && row.totp_enc === null && row.password_hash !== null) {
    // An admin always has a second factor: this account must enrol one first (a reset's set-up asks for it).
    throw new DomainError(
      'validation',
      `email: ${row.email} has no second factor; an admin must: reset the account, and make it admin once it has set one up`,
    );
  }
  if (row.role === 'admin' && row.status === 'active' && (next.role !== 'admin' || next.status !== 'active')) {
    // Counted under the lock of every admin row, so two admins cannot demote each other at once.
    const admins = await lockedActiveAdmins(ctx);
    if (admins <= 1) throw new DomainError('validation', 'email: the last active admin stays an active admin');
  }
  const changed = {
    ...next,
    // Setting an account active also unlocks it (a lock-out someone caused by guessing its e-mail).
    ...(input.status === 'active' ? { failed_logins: 0, locked_until: null } : {}),
    // A disabled account's open set-up link dies with it: enabling it again does not revive the link.
    // So does one issued for another role: whoever holds it was given the old role, not the new one.
    ...(next.status === 'disabled' || next.role !== row.role ? { setup_hash: null, setup_expires_at: null } : {}),
    updated_at: now,
  };
  await tx.updateTable('operators').set(changed).where('id', '=', row.id).execute();
  await tx.deleteFrom('operator_sessions').where('operator_id', '=', row.id).execute();
  return operatorSummary({ ...row, ...changed }, now);
}

async function lockedActiveAdmins(ctx: VerbCtx): Promise<number> {
  let q = ctx.tx.selectFrom('operators').select('id').where('role', '=', 'admin').where('status', '=', 'active').orderBy('id');
  if (ctx.svc.database.dialect === 'postgres') q = q.forUpdate();
  return (await q.execute()).length;
}

export async function listOperators(db: Kysely<DB>, now: number): Promise<OperatorSummary[]> {
  const rows = await db.selectFrom('operators').selectAll().orderBy('created_at').orderBy('id').execute();
  return rows.map((r) => operatorSummary(r, now));
}

/** The account a set-up token opens, while it is valid. */
export async function findSetup(db: Kysely<DB>, token: unknown, now: number): Promise<OperatorRow | null> {
  if (typeof token !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
  const row = await db.selectFrom('operators').selectAll().where('setup_hash', '=', sha256(token)).executeTakeFirst();
  if (!row || row.setup_expires_at === null || Number(row.setup_expires_at) <= now || row.status !== 'active') return null;
  return row;
}

export interface SetupInput {
  token: string;
  /** The scrypt hash of the chosen password (hashed before the transaction: it takes ~100 ms). */
  passwordHash: string;
  /** The TOTP secret shown on the set-up page and the code the operator read from the app; both absent: no second factor. */
  totp: { secret: string; code: string } | null;
  /** Where the set-up came from, for its audit record. */
  origin: string;
}

/** The audit record of an operator's own act (set-up, login, lock-out), written only when it happened. */
function ownRecord(ctx: VerbCtx, email: string, origin: string, action: string, after: unknown): Promise<void> {
  return recordAudit(ctx.tx, { by: { kind: 'operator', via: 'console', who: email, origin }, action, target: email }, ctx.now, null, after);
}

/**
 * Completes a set-up: the link is spent (a conditional update, so it works once), the password and
 * second factor are stored. An admin (in production, anyone) must enrol a second factor; a code that does not match the
 * secret refuses it (the app was not set up right). Returns the account, or null for a spent link;
 * only a set-up that happened is in the audit trail.
 */
export async function completeSetup({
  ctx,
  input,
}: {
  ctx: VerbCtx;
  input: SetupInput;
}): Promise<OperatorSummary | 'badCode' | 'totpRequired' | null> {
  const { tx, now } = ctx;
  const row = await findSetup(tx, input.token, now);
  if (!row) return null;
  if (input.totp === null && totpRequired(row.role, ctx.svc.config.env)) return 'totpRequired';
  const step = input.totp ? matchStep(input.totp.secret, input.totp.code, now, null) : null;
  if (input.totp && step === null) return 'badCode';
  const changed = {
    password_hash: input.passwordHash,
    totp_enc: input.totp ? ctx.svc.box.seal(input.totp.secret, totpContext(row.id)) : null,
    totp_last_step: step,
    failed_logins: 0,
    locked_until: null,
    setup_hash: null,
    setup_expires_at: null,
    updated_at: now,
  };
  const res = await tx
    .updateTable('operators')
    .set(changed)
    .where('id', '=', row.id)
    .where('setup_hash', '=', row.setup_hash)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) return null;
  const summary = operatorSummary({ ...row, ...changed }, now);
  await ownRecord(ctx, row.email, input.origin, 'operator.setup', { role: summary.role, totp: summary.totp });
  return summary;
}

/**
 * Takes one login attempt on an account, before its password is checked: one conditional update,
 * so concurrent guesses all count and none slips past the lock. The attempt after LOCK_AFTER
 * failures in a row locks the account for LOCK_MS (recorded as `operator.locked`) and is refused;
 * so is any attempt while it is locked or disabled. A success (recordLogin) starts the count over.
 * An unknown account (null) costs the same statement, which finds no row: timing tells nothing.
 */
export async function takeLoginAttempt({
  ctx,
  input,
}: {
  ctx: VerbCtx;
  input: { operatorId: string | null; email: string; origin: string };
}): Promise<'open' | 'locked'> {
  const { tx, now } = ctx;
  const row = await tx
    .updateTable('operators')
    .set((eb) => ({ failed_logins: eb('failed_logins', '+', 1), updated_at: now }))
    .where('id', '=', input.operatorId ?? '')
    .where('status', '=', 'active')
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]))
    .returning('failed_logins')
    .executeTakeFirst();
  if (!row) return 'locked';
  if (row.failed_logins <= LOCK_AFTER) return 'open';
  await tx
    .updateTable('operators')
    .set({ locked_until: now + LOCK_MS, failed_logins: 0 })
    .where('id', '=', input.operatorId ?? '')
    .execute();
  await ownRecord(ctx, input.email, input.origin, 'operator.locked', { lockedMinutes: LOCK_MS / 60_000 });
  return 'locked';
}

/**
 * A successful login: the failure count starts over, the TOTP step is spent (conditionally: of two
 * logins with one code, one wins), a session starts and the login is recorded. Refused (null) when
 * the code was used meanwhile, or the account was locked or disabled meanwhile.
 */
export async function recordLogin({
  ctx,
  input,
}: {
  ctx: VerbCtx;
  input: { operatorId: string; email: string; step: number | null; origin: string };
}): Promise<{ sessionId: string } | null> {
  const { tx, now } = ctx;
  let q = tx
    .updateTable('operators')
    .set({
      failed_logins: 0,
      last_login_at: now,
      updated_at: now,
      ...(input.step === null ? {} : { totp_last_step: input.step }),
    })
    .where('id', '=', input.operatorId)
    .where('status', '=', 'active')
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]));
  if (input.step !== null) q = q.where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', input.step as number)]));
  const res = await q.executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) return null;
  const sessionId = randomBytes(32).toString('base64url');
  await tx
    .insertInto('operator_sessions')
    .values({
      id_hash: sha256(sessionId),
      operator_id: input.operatorId,
      origin: input.origin.slice(0, 200),
      created_at: now,
      last_seen_at: now,
    })
    .execute();
  // The record names the account and the address; never the session (every role reads the trail).
  await ownRecord(ctx, input.email, input.origin, 'operator.login', { secondFactor: input.step !== null });
  return { sessionId };
}

/** The TOTP secret of an account, opened; null when it has none. */
export function totpSecretOf(svc: Services, row: Pick<OperatorRow, 'id' | 'totp_enc'>): string | null {
  return row.totp_enc === null ? null : svc.box.open(row.totp_enc, totpContext(row.id));
}
