import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { sql } from 'kysely';
import type { Services } from '../context.js';
import { DomainError, rateLimited } from '../errors.js';
import type { MerchantCredentials } from '../merchants/directory.js';

/** A link opens the page once, within 10 minutes (decisions §8). */
export const LINK_TTL_MS = 10 * 60 * 1000;
/** A session ends after 15 minutes without a request, and after 12 hours whatever happens. */
export const SESSION_IDLE_MS = 15 * 60 * 1000;
export const SESSION_MAX_MS = 12 * 3_600_000;
/** Links per merchant and e-mail per minute: a leaked signing key cannot mint them in bulk. */
export const LINKS_PER_MINUTE = 10;

export const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * Issues a one-time page link for a merchant's user (interface 4.4). The token has 256 random bits
 * and is stored only as its SHA-256: a copy of the database opens no page.
 */
export async function issueLink({
  svc,
  merchant,
  email,
}: {
  svc: Services;
  merchant: MerchantCredentials;
  email: string | null;
}): Promise<string> {
  if (!merchant.loginFree) throw new DomainError('notEnabled', 'The login-free page is not enabled for this merchant');
  const merchantId = merchant.appId;
  const now = svc.clock();
  const token = randomBytes(32).toString('base64url');
  // The window's count and the insert in one transaction, serialised per merchant and e-mail (SQLite
  // serialises every write transaction; PostgreSQL takes an advisory lock): concurrent requests,
  // on one instance or several, cannot both take the last slot.
  await svc.database.withTx(async (tx) => {
    if (svc.database.dialect === 'postgres') {
      await sql`select pg_advisory_xact_lock(hashtext(${`page-link:${merchantId}:${email ?? ''}`}))`.execute(tx);
    }
    const recent = await tx
      .selectFrom('page_links')
      .select(['created_at'])
      .where('merchant_id', '=', merchantId)
      .where((eb) => (email === null ? eb('email', 'is', null) : eb('email', '=', email)))
      .where('created_at', '>', now - 60_000)
      .orderBy('created_at')
      .execute();
    if (recent.length >= LINKS_PER_MINUTE) {
      const oldest = Number(recent[0]?.created_at ?? now);
      const seconds = Math.max(1, Math.ceil((oldest + 60_000 - now) / 1000));
      throw rateLimited(`email: at most ${LINKS_PER_MINUTE} page links a minute; try again in ${seconds} s`, seconds);
    }
    await tx
      .insertInto('page_links')
      .values({ token_hash: sha256(token), merchant_id: merchantId, email, expires_at: now + LINK_TTL_MS, used_at: null, created_at: now })
      .execute();
  });
  return token;
}

/**
 * Spends a link and starts a session. Spending is one conditional update, so of two concurrent
 * opens exactly one wins; an unknown, expired or used token gets nothing (`gone`). On a host mapped
 * to a merchant, another merchant's link is refused and stays unspent (`wrongHost`). Returns the
 * session id (for the cookie; only its hash is stored).
 */
export async function openLink({
  svc,
  token,
  hostMerchantId,
}: {
  svc: Services;
  token: string;
  /** The merchant the request's host is mapped to, or null on the unmapped public address. */
  hostMerchantId: string | null;
}): Promise<{ sessionId: string } | 'gone' | 'wrongHost'> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return 'gone';
  const now = svc.clock();
  return svc.database.withTx(async (tx) => {
    if (hostMerchantId !== null) {
      const link = await tx.selectFrom('page_links').select('merchant_id').where('token_hash', '=', sha256(token)).executeTakeFirst();
      if (link && link.merchant_id !== hostMerchantId) return 'wrongHost' as const;
    }
    const spent = await tx
      .updateTable('page_links')
      .set({ used_at: now })
      .where('token_hash', '=', sha256(token))
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning(['merchant_id', 'email'])
      .executeTakeFirst();
    if (!spent) return 'gone' as const;
    const sessionId = randomBytes(32).toString('base64url');
    await tx
      .insertInto('page_sessions')
      .values({ id_hash: sha256(sessionId), merchant_id: spent.merchant_id, email: spent.email, created_at: now, last_seen_at: now })
      .execute();
    return { sessionId };
  });
}

/** The live session for a cookie value (and it is touched), or null. */
export async function loadSession({ svc, sessionId }: { svc: Services; sessionId: string | undefined }) {
  if (!sessionId || !/^[A-Za-z0-9_-]{43}$/.test(sessionId)) return null;
  const now = svc.clock();
  const row = await svc.database.db.selectFrom('page_sessions').selectAll().where('id_hash', '=', sha256(sessionId)).executeTakeFirst();
  if (!row || now - row.last_seen_at > SESSION_IDLE_MS || now - row.created_at > SESSION_MAX_MS) return null;
  // Bookkeeping: losing it in a crash only shortens a session's idle time.
  await svc.database.withTx(
    (tx) => tx.updateTable('page_sessions').set({ last_seen_at: now }).where('id_hash', '=', row.id_hash).execute(),
    {
      durable: false,
    },
  );
  return { idHash: row.id_hash, merchantId: row.merchant_id, email: row.email };
}

export type PageSession = NonNullable<Awaited<ReturnType<typeof loadSession>>>;

/**
 * The form token of a session: an HMAC of a fixed label under the session id, which only the
 * cookie's holder knows. Forms carry it; a cross-site form cannot.
 */
export function formToken(sessionId: string): string {
  return createHmac('sha256', sessionId).update('cardprogram page form').digest('base64url');
}

export function formTokenMatches(sessionId: string, sent: unknown): boolean {
  if (typeof sent !== 'string') return false;
  const a = Buffer.from(formToken(sessionId));
  const b = Buffer.from(sent);
  return a.length === b.length && timingSafeEqual(a, b);
}
