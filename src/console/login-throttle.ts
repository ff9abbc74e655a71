import { isIP } from 'node:net';
import { type Kysely, sql } from 'kysely';
import { recordAudit } from '../audit/trail.js';
import type { Database } from '../db/index.js';
import type { DB } from '../db/schema.js';

/** Login attempts per client per window, whatever the account: guessing across accounts is slow too. */
export const LOGIN_ATTEMPTS = 20;
export const LOGIN_WINDOW_MS = 10 * 60_000;

/** The eight 16-bit groups of an IPv6 address (`::`, an IPv4 tail and a zone written any way), or null. */
export function ipv6Groups(ip: string): number[] | null {
  const addr = ip.replace(/%.*$/, '');
  if (isIP(addr) !== 6) return null;
  let text = addr;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const part = (s: string) => (s === '' ? [] : s.split(':').map((g) => Number.parseInt(g, 16)));
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  const groups = [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 ? groups : null;
}

/**
 * Who is counted: an IPv4 address, or an IPv6 address's /64 (one host usually holds a whole /64).
 * The /64 is the address's first 64 bits, not the first groups of its text: `2001:db8::1` and
 * `2001:db8:0:0::2` are one client (issue 26, finding 6). An IPv4-mapped address is its IPv4 address.
 */
export function clientKey(ip: string): string {
  const groups = ipv6Groups(ip);
  if (!groups) return `v4:${ip}`.slice(0, 64);
  if (groups.slice(0, 6).join(':') === '0:0:0:0:0:65535') {
    const [hi = 0, lo = 0] = groups.slice(6);
    return `v4:${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return `v6:${groups
    .slice(0, 4)
    .map((g) => g.toString(16).padStart(4, '0'))
    .join(':')}::/64`;
}

/** The summary record of a client's refused logins in a window that is over (after an attack pass on issue 26). */
export const LOGIN_THROTTLED = 'operator.login_throttled';

/**
 * Counts one login attempt of a client in the database, so the limit holds across instances (one
 * statement: an insert, or an update of the row's current window). A window that is over is first
 * taken out (one statement, so of two instances one takes it) and, if the client was refused more
 * than once in it, summed up in one record (recordThrottleSummary). True when the client is past
 * LOGIN_ATTEMPTS in the window: the attempt is refused.
 */
export async function throttleLogin(tx: Kysely<DB>, key: string, now: number): Promise<boolean> {
  const over = now - LOGIN_WINDOW_MS;
  const ended = await tx
    .deleteFrom('console_login_throttle')
    .where('client_key', '=', key)
    .where('window_start', '<=', over)
    .returning(['client_key', 'window_start', 'refusals'])
    .executeTakeFirst();
  if (ended) await recordThrottleSummary(tx, ended, now);
  const row = await tx
    .insertInto('console_login_throttle')
    .values({ client_key: key, window_start: now, attempts: 1 })
    .onConflict((oc) =>
      oc.column('client_key').doUpdateSet({
        attempts: sql<number>`case when console_login_throttle.window_start <= ${over} then 1 else console_login_throttle.attempts + 1 end`,
        window_start: sql<number>`case when console_login_throttle.window_start <= ${over} then ${now} else console_login_throttle.window_start end`,
      }),
    )
    .returning('attempts')
    .executeTakeFirstOrThrow();
  return Number(row.attempts) > LOGIN_ATTEMPTS;
}

/**
 * Counts a refused login (throttled, or the hashing queue full) on the client's row of the window.
 * True for the window's first refusal, which is recorded on its own; the others are only counted
 * here, and summed up in one record when the window is over: one address can no longer write an
 * audit row per request. (Attempts whose credentials were checked are each still recorded.)
 */
export async function countRefusal(tx: Kysely<DB>, key: string): Promise<boolean> {
  const row = await tx
    .updateTable('console_login_throttle')
    .set({ refusals: sql<number>`refusals + 1` })
    .where('client_key', '=', key)
    .returning('refusals')
    .executeTakeFirst();
  return row === undefined || Number(row.refusals) === 1;
}

/** One record for a window's refusals beyond its first (which has its own): how many in all, and when. */
async function recordThrottleSummary(
  tx: Kysely<DB>,
  ended: { client_key: string; window_start: number | string; refusals: number | string },
  now: number,
): Promise<void> {
  const refusals = Number(ended.refusals);
  if (refusals < 2) return;
  const start = Number(ended.window_start);
  await recordAudit(
    tx,
    {
      by: { kind: 'operator', via: 'console', who: '(unauthenticated)', origin: ended.client_key },
      action: LOGIN_THROTTLED,
      target: ended.client_key,
    },
    now,
    null,
    {
      refusals,
      recordedOneByOne: 1,
      windowStart: new Date(start).toISOString(),
      windowEnd: new Date(start + LOGIN_WINDOW_MS).toISOString(),
    },
  );
}

/**
 * Whether a client is already past its attempts in the window, read without counting: a throttled
 * client is refused before it takes a place in the hashing queue (throttleLogin, in the login's
 * transaction, then counts the attempt).
 */
export async function isThrottled(db: Kysely<DB>, key: string, now: number): Promise<boolean> {
  const row = await db
    .selectFrom('console_login_throttle')
    .select('attempts')
    .where('client_key', '=', key)
    .where('window_start', '>', now - LOGIN_WINDOW_MS)
    .executeTakeFirst();
  return row !== undefined && Number(row.attempts) >= LOGIN_ATTEMPTS;
}

/** Windows that are over, deleted with the reaper's pass, each with its summary record if it needs one. */
export async function reapLoginThrottle(database: Database, now: number): Promise<number> {
  return database.withTx(async (tx) => {
    const ended = await tx
      .deleteFrom('console_login_throttle')
      .where('window_start', '<=', now - LOGIN_WINDOW_MS)
      .returning(['client_key', 'window_start', 'refusals'])
      .execute();
    for (const row of ended) await recordThrottleSummary(tx, row, now);
    return ended.length;
  });
}

/**
 * The network a client's places in the hashing queue are counted by (src/console/hashing.ts): an
 * IPv4 address's /24, an IPv6 address's /64 (clientKey's). Addresses rotated inside one network hold
 * one place between them.
 */
export function queueKey(ip: string): string {
  const key = clientKey(ip);
  const v4 = /^v4:(\d+)\.(\d+)\.(\d+)\.\d+$/.exec(key);
  return v4 ? `v4:${v4[1]}.${v4[2]}.${v4[3]}.0/24` : key;
}
