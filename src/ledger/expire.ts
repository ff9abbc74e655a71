import type { AuditSpec } from '../audit/trail.js';
import { maskedCardNo } from '../cards/model.js';
import { type Actor, type Services, system } from '../context.js';
import { releaseSpend } from '../controls/spending.js';
import { sweep } from '../db/sweep.js';
import { runVerb } from '../runner.js';
import { holdingAuthorizations } from '../trades/books.js';
import { type TradeRecord, toTradeRecord } from '../trades/record.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { allocatePart } from './amounts.js';
import { book, tradeRow } from './book.js';
import { settlingBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { Account } from './journal.js';
import { lockedTrade } from './locks.js';
import { updateTrade } from './trade-rows.js';

/**
 * Hold expiry (decisions §12.9): an authorization not cleared within its window is released, as a
 * full reversal is (a 150/2 record of what was still held, the authorization becomes 3, its fee
 * returned), the record's remark saying why (`Hold expired`), with its `trade` callback. A clearing
 * that arrives afterwards is a forced post (src/ledger/forced.ts).
 */

const DAY_MS = 86_400_000;

/** The remark of the record an expiry adds: what the 4.1 list and tradeQuery show of why. */
export const HOLD_EXPIRED = 'Hold expired';

/** The days an authorization with this MCC holds: 31 for lodging and car rental (MCC 3351–3999, 7011, 7512, 7513), else the program's. */
export function holdWindowDays(mcc: string | null | undefined, defaultDays: number): number {
  const n = mcc && /^\d{4}$/.test(mcc) ? Number(mcc) : -1;
  if ((n >= 3351 && n <= 3999) || n === 7011 || n === 7512 || n === 7513) return 31;
  return defaultDays;
}

export interface ExpireHoldInput {
  tradeId: string;
  /** The authorization's window, in days (holdWindowDays). */
  days: number;
  /** The moment the window is judged at (the pass's `now`; the records are written at the clock's). */
  asOf: number;
}

/**
 * Releases one authorization's hold if it still holds and its window is over at `asOf`; null when
 * not (cleared, reversed or released meanwhile, by this pass or another instance's). The card's row
 * lock (lockedTrade) and the conditional update of the authorization (updateTrade) make two passes
 * at once release it once: the second reads it released and does nothing.
 */
export async function expireHold({ ctx, input }: { ctx: LedgerCtx; input: ExpireHoldInput }): Promise<TradeRecord | null> {
  const { trade: auth, card } = await lockedTrade(ctx, input.tradeId);
  if (auth.trade_type !== TradeType.authorization || auth.trade_status !== TradeStatus.success || auth.held <= 0) return null;
  if (auth.created_at + input.days * DAY_MS > input.asOf) return null;
  const amount = auth.held;
  const record = tradeRow(
    {
      card,
      type: TradeType.authorization,
      status: TradeStatus.reversal,
      amount,
      fee: auth.fee,
      currencyTxn: auth.currency_txn,
      txnAmount: allocatePart(auth.txn_amount, auth.amount - auth.held, amount, auth.amount),
      businessDate: settlingBusinessDate(undefined, ctx.now, auth),
      authCode: auth.auth_code,
      remark: HOLD_EXPIRED,
      originalId: auth.id,
    },
    ctx.now,
  );
  await updateTrade(ctx, auth, { held: 0, status: TradeStatus.reversed });
  await book(
    ctx,
    card.currency,
    [
      { account: Account.held(card.id), amount: -amount },
      { account: Account.available(card.id), amount: amount + auth.fee },
      { account: Account.fees, amount: -auth.fee },
    ],
    [record],
    { holdExpired: true },
  );
  await releaseSpend(ctx, card, auth.id, amount);
  return toTradeRecord(record, maskedCardNo(card));
}

type Holding = Awaited<ReturnType<typeof holdingAuthorizations>>[number];

/** The pass's name in the log, the metrics and `sweep_failures`. */
export const HOLD_EXPIRY = 'hold_expiry';

/**
 * One pass (the reaper's, hourly, and `cardprogram holds expire`): every authorization still holding
 * whose window is over at `now` is released, each in its own transaction, read in pages (oldest
 * first). A release that throws (a row the ledger cannot book, a bug) is recorded and skipped
 * (src/db/sweep.ts): every other due hold is still released, and the next pass tries that one
 * again. Returns how many were released, their ids, and those that failed.
 */
export async function expireHolds(
  svc: Services,
  now: number,
  /** Who runs the pass (the CLI's operator, audited per release); the reaper's runs are the system's. */
  by: { actor: Actor; audit?: (tradeId: string) => AuditSpec } = { actor: system('system:hold-expiry') },
  opts: { pageSize?: number } = {},
): Promise<{ released: number; tradeIds: string[]; failed: Array<{ tradeId: string; error: string; failures: number }> }> {
  const defaultDays = svc.config.program.holdDays ?? 7;
  // The shortest window any authorization has: nothing younger can be due.
  const youngest = now - Math.min(defaultDays, 31) * DAY_MS;
  const { done, failed } = await sweep<Holding, string>(svc, HOLD_EXPIRY, {
    ...opts,
    page: (after, limit) => svc.database.read((db) => holdingAuthorizations(db, youngest, { after, limit })),
    id: (row) => row.id,
    each: async (row) => {
      const days = holdWindowDays(row.mcc, defaultDays);
      if (row.created_at + days * DAY_MS > now) return null;
      const released = await runVerb(svc, expireHold, {
        input: { tradeId: row.id, days, asOf: now },
        actor: by.actor,
        merchantId: row.merchant_id,
        ...(by.audit ? { audit: by.audit(row.id) } : {}),
      });
      return released ? row.id : null;
    },
  });
  return { released: done.length, tradeIds: done, failed: failed.map((f) => ({ tradeId: f.id, error: f.error, failures: f.failures })) };
}
