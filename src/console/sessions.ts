import { sql } from 'kysely';
import type { Services, VerbCtx } from '../context.js';
import { sessionFormToken, sessionFormTokenMatches } from '../crypto/form-token.js';
import type { OperatorRole } from '../db/schema.js';
import { reapInPages, type SweepDeps } from '../db/sweep.js';
import { sha256 } from '../page/links.js';
import { runVerb } from '../runner.js';
import { reapLoginThrottle } from './login-throttle.js';

/** A console session ends after 30 minutes without a request, and after 12 hours whatever happens. */
export const CONSOLE_IDLE_MS = 30 * 60_000;
export const CONSOLE_MAX_MS = 12 * 3_600_000;
/** A session's last use is written at most this often (bookkeeping, not a write per page view). */
const TOUCH_EVERY_MS = 60_000;

export interface ConsoleSession {
  idHash: string;
  operatorId: string;
  email: string;
  role: OperatorRole;
  /** Whether the account has a second factor (an admin always has one). */
  totp: boolean;
}

/** The live session of a cookie value (its account active), or null. Touched when it is a minute old. */
export async function loadConsoleSession(svc: Services, sessionId: string | undefined, origin: string): Promise<ConsoleSession | null> {
  if (!sessionId || !/^[A-Za-z0-9_-]{43}$/.test(sessionId)) return null;
  const now = svc.clock();
  const row = await svc.database.read((db) =>
    db
      .selectFrom('operator_sessions as s')
      .innerJoin('operators as o', 'o.id', 's.operator_id')
      .select(['s.id_hash', 's.created_at', 's.last_seen_at', 'o.id', 'o.email', 'o.role', 'o.status', 'o.totp_enc'])
      .where('s.id_hash', '=', sha256(sessionId))
      .executeTakeFirst(),
  );
  if (row?.status !== 'active') return null;
  const lastSeen = Number(row.last_seen_at);
  if (now - lastSeen > CONSOLE_IDLE_MS || now - Number(row.created_at) > CONSOLE_MAX_MS) return null;
  if (now - lastSeen >= TOUCH_EVERY_MS) {
    // Losing this in a crash only shortens the session's idle time.
    await runVerb(svc, touchConsoleSession, {
      input: { idHash: row.id_hash },
      actor: { kind: 'operator', via: 'console', who: row.email, origin },
      now,
      durable: false,
    });
  }
  return { idHash: row.id_hash, operatorId: row.id, email: row.email, role: row.role, totp: row.totp_enc !== null };
}

async function touchConsoleSession({ ctx, input }: { ctx: VerbCtx; input: { idHash: string } }): Promise<void> {
  await ctx.tx.updateTable('operator_sessions').set({ last_seen_at: ctx.now }).where('id_hash', '=', input.idHash).execute();
}

/** Logging out ends the session in the database, not only in the browser. */
export async function endConsoleSession({ ctx, input }: { ctx: VerbCtx; input: { idHash: string } }): Promise<void> {
  await ctx.tx.deleteFrom('operator_sessions').where('id_hash', '=', input.idHash).execute();
}

/** Sessions past their bounds, and the login limit's windows that are over, are deleted with the idempotency reaper's pass. */
export async function reapConsoleSessions(deps: SweepDeps, now: number): Promise<number> {
  const sessions = await reapInPages(deps, 'reap_console_sessions', {
    table: 'operator_sessions',
    key: ['id_hash'],
    where: sql`(last_seen_at < ${now - CONSOLE_IDLE_MS} or created_at < ${now - CONSOLE_MAX_MS})`,
  });
  return sessions + (await reapLoginThrottle(deps.database, now));
}

const CONSOLE_FORM = 'cardprogram console form';

/** The CSRF token of a console session (src/crypto/form-token.ts): every form carries it. */
export const csrfToken = (sessionId: string): string => sessionFormToken(sessionId, CONSOLE_FORM);

export const csrfMatches = (sessionId: string, sent: unknown): boolean => sessionFormTokenMatches(sessionId, CONSOLE_FORM, sent);
