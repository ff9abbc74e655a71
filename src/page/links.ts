import { createHash, randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Static } from 'typebox';
import type { MerchantCtx, Services, VerbCtx } from '../context.js';
import { sessionFormToken, sessionFormTokenMatches } from '../crypto/form-token.js';
import type { DB } from '../db/schema.js';
import { reapInPages, type SweepDeps } from '../db/sweep.js';
import { DomainError, rateLimited } from '../errors.js';
import { emailHash } from '../holders/identity.js';
import type { OperationInput } from '../operation-input.js';
import { runVerb } from '../runner.js';
import type { LinkBody } from './schemas.js';

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
  ctx,
  input,
}: {
  ctx: MerchantCtx;
  /** The body without its envelope, and `generation`: that of the merchant entry that checked the request's signature. */
  input: OperationInput<Static<typeof LinkBody>> & { generation: number };
}): Promise<string> {
  const { tx, now, merchantId } = ctx;
  const email = input.email ? input.email.toLowerCase() : null;
  // Read in the transaction, as everything a verb reads (on SQLite its one connection is the verb's).
  const merchant = await tx
    .selectFrom('merchants')
    .select(['login_free', 'status', 'credential_gen'])
    .where('id', '=', merchantId)
    .executeTakeFirst();
  // Issue 26.2: this instance's merchant cache may still hold a credential that was rolled, or a
  // merchant that was disabled, by another process (the CLI) a moment ago. The database says which
  // generation is current: a request signed under an earlier one mints nothing.
  if (merchant?.status !== 'active') throw new DomainError('merchantNotFound');
  if (merchant.credential_gen !== input.generation) {
    ctx.svc.merchants.forget(merchantId);
    throw new DomainError('signature', 'sign: the credential that signed this request has been replaced; sign with the current one');
  }
  if (merchant.login_free !== 1) throw new DomainError('notEnabled', 'The login-free page is not enabled for this merchant');
  const token = randomBytes(32).toString('base64url');
  // Only the e-mail's keyed hash (the one cardholders are found by) is stored with the link and its
  // session: the e-mail is identity data, sealed at rest like the rest of it (issue 14.6).
  const emailKey = email === null ? null : await emailHash(ctx.svc.vault, tx, email);
  // The window's count and the insert in one transaction, serialised per merchant and e-mail (SQLite
  // serialises every write transaction; PostgreSQL takes an advisory lock): concurrent requests,
  // on one instance or several, cannot both take the last slot.
  if (ctx.svc.database.dialect === 'postgres') {
    await sql`select pg_advisory_xact_lock(hashtext(${`page-link:${merchantId}:${emailKey ?? ''}`}))`.execute(tx);
  }
  const recent = await tx
    .selectFrom('page_links')
    .select(['created_at'])
    .where('merchant_id', '=', merchantId)
    .where((eb) => (emailKey === null ? eb('email', 'is', null) : eb('email', '=', emailKey)))
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
    .values({
      token_hash: sha256(token),
      merchant_id: merchantId,
      email: emailKey,
      expires_at: now + LINK_TTL_MS,
      used_at: null,
      credential_gen: merchant.credential_gen,
      created_at: now,
    })
    .execute();
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
  host,
}: {
  svc: Services;
  token: string;
  /** The merchant the request's host is mapped to, or null on the unmapped public address. */
  hostMerchantId: string | null;
  /** The host the page was asked on. */
  host: string;
}): Promise<{ sessionId: string } | 'gone' | 'wrongHost'> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return 'gone';
  // A link of a merchant that was disabled or lost the login-free permission since it was issued
  // opens nothing (and stays unspent): the same bound as the merchant's API access.
  const issued = await svc.database.read((db) =>
    db.selectFrom('page_links').select('merchant_id').where('token_hash', '=', sha256(token)).executeTakeFirst(),
  );
  if (!issued || !(await pageAllowed(svc, issued.merchant_id))) return 'gone';
  return runVerb(svc, spendLink, { input: { token, hostMerchantId }, actor: { kind: 'cardholder', via: 'page', host } });
}

/** The write of openLink: the link spent, the session started, in one transaction. */
async function spendLink({
  ctx,
  input: { token, hostMerchantId },
}: {
  ctx: VerbCtx;
  input: { token: string; hostMerchantId: string | null };
}): Promise<{ sessionId: string } | 'gone' | 'wrongHost'> {
  const { tx, now } = ctx;
  const link = await tx
    .selectFrom('page_links')
    .innerJoin('merchants', 'merchants.id', 'page_links.merchant_id')
    .select([
      'page_links.merchant_id',
      'page_links.credential_gen as gen',
      'merchants.credential_gen as current',
      'merchants.status',
      'merchants.login_free',
    ])
    .where('page_links.token_hash', '=', sha256(token))
    .executeTakeFirst();
  if (!link) return 'gone';
  if (hostMerchantId !== null && link.merchant_id !== hostMerchantId) return 'wrongHost';
  // Read from the database, not the merchant cache (issue 26.2): a link of an earlier credential
  // generation (minted before a roll or a disable, or by an instance whose cache was behind) opens
  // nothing, and neither does one of a merchant disabled or without the page this moment.
  if (link.gen !== link.current || link.status !== 'active' || link.login_free !== 1) return 'gone';
  const spent = await tx
    .updateTable('page_links')
    .set({ used_at: now })
    .where('token_hash', '=', sha256(token))
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(['merchant_id', 'email', 'credential_gen'])
    .executeTakeFirst();
  if (!spent) return 'gone';
  const sessionId = randomBytes(32).toString('base64url');
  await tx
    .insertInto('page_sessions')
    .values({
      id_hash: sha256(sessionId),
      merchant_id: spent.merchant_id,
      email: spent.email,
      credential_gen: spent.credential_gen,
      created_at: now,
      last_seen_at: now,
    })
    .execute();
  return { sessionId };
}

/**
 * Whether a merchant's page may be used now: it exists, is active and keeps the login-free
 * permission. Read through the merchant directory on every link open and page request, so taking
 * access away (the CLI, another process) ends open links and sessions within the directory's cache
 * bound (CARDPROGRAM_MERCHANT_CACHE_MS, 5 s by default) on every instance, as it ends API access.
 */
export async function pageAllowed(svc: Services, merchantId: string): Promise<boolean> {
  const merchant = await svc.merchants.get(merchantId);
  return merchant?.active === true && merchant.loginFree;
}

/** The live session for a cookie value (and it is touched), or null. */
export async function loadSession({ svc, sessionId, host }: { svc: Services; sessionId: string | undefined; host: string }) {
  if (!sessionId || !/^[A-Za-z0-9_-]{43}$/.test(sessionId)) return null;
  const now = svc.clock();
  const row = await svc.database.read((db) =>
    db
      .selectFrom('page_sessions')
      .innerJoin('merchants', 'merchants.id', 'page_sessions.merchant_id')
      .select([
        'page_sessions.id_hash',
        'page_sessions.merchant_id',
        'page_sessions.email',
        'page_sessions.created_at',
        'page_sessions.last_seen_at',
        'page_sessions.credential_gen as gen',
        'merchants.credential_gen as current',
        'merchants.status',
        'merchants.login_free',
      ])
      .where('page_sessions.id_hash', '=', sha256(sessionId))
      .executeTakeFirst(),
  );
  if (!row || now - row.last_seen_at > SESSION_IDLE_MS || now - row.created_at > SESSION_MAX_MS) return null;
  // The merchant as the database has it now, in the same read (issue 26.2): a session of an earlier
  // credential generation, or of a merchant disabled or without the page, shows nothing, whatever
  // the merchant cache of this instance still holds.
  if (row.gen !== row.current || row.status !== 'active' || row.login_free !== 1) return null;
  // Bookkeeping: losing it in a crash only shortens a session's idle time.
  await runVerb(svc, touchSession, {
    input: { idHash: row.id_hash },
    merchantId: row.merchant_id,
    actor: { kind: 'cardholder', via: 'page', host },
    now,
    durable: false,
  });
  // A session opened before e-mails were stored hashed holds the e-mail itself (for at most 12 hours).
  const email = row.email;
  const emailKey = email?.includes('@') ? await svc.database.read((db) => emailHash(svc.vault, db, email)) : email;
  return { idHash: row.id_hash, merchantId: row.merchant_id, emailHash: emailKey };
}

/** A session's last use, which its idle bound counts from. */
async function touchSession({ ctx, input }: { ctx: VerbCtx; input: { idHash: string } }): Promise<void> {
  await ctx.tx.updateTable('page_sessions').set({ last_seen_at: ctx.now }).where('id_hash', '=', input.idHash).execute();
}

/**
 * Deletes links past their expiry and sessions past their idle or 12-hour bound: they open nothing
 * any more, and keeping them would keep, for ever, which merchant's user asked for the page when.
 * Run with the idempotency reaper. Returns how many rows went.
 */
/**
 * Ends every page link and session of a merchant: its access was taken away (disabled, login-free
 * turned off) or its credentials rolled after a leak. Deleted, not suspended: turning access back on
 * brings none of them back, so a link or session an attacker got with a leaked secret is gone for good.
 */
export async function endPageAccess(tx: Kysely<DB>, merchantId: string): Promise<void> {
  // The credential generation moves on (issue 26.2): a link or session made under the old one by an
  // instance whose merchant cache is behind, after the rows below are gone, opens nothing either.
  await tx
    .updateTable('merchants')
    .set((eb) => ({ credential_gen: eb('credential_gen', '+', 1) }))
    .where('id', '=', merchantId)
    .execute();
  await tx.deleteFrom('page_sessions').where('merchant_id', '=', merchantId).execute();
  await tx.deleteFrom('page_links').where('merchant_id', '=', merchantId).execute();
}

/** Spent or expired links and sessions past their bounds, deleted in pages (src/db/sweep.ts); returns how many went. */
export async function reapPage(deps: SweepDeps, now: number): Promise<number> {
  const links = await reapInPages(deps, 'reap_page_links', { table: 'page_links', key: ['token_hash'], where: sql`expires_at < ${now}` });
  const sessions = await reapInPages(deps, 'reap_page_sessions', {
    table: 'page_sessions',
    key: ['id_hash'],
    where: sql`(last_seen_at < ${now - SESSION_IDLE_MS} or created_at < ${now - SESSION_MAX_MS})`,
  });
  return links + sessions;
}

export type PageSession = NonNullable<Awaited<ReturnType<typeof loadSession>>>;

const PAGE_FORM = 'cardprogram page form';

/** The form token of a card page session (src/crypto/form-token.ts): forms carry it; a cross-site form cannot. */
export const formToken = (sessionId: string): string => sessionFormToken(sessionId, PAGE_FORM);

export const formTokenMatches = (sessionId: string, sent: unknown): boolean => sessionFormTokenMatches(sessionId, PAGE_FORM, sent);
