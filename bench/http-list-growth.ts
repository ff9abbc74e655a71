// The list over HTTP as the trades table grows, for the HTTP benchmark.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { holderBody } from '../test/helpers/app.js';
import type { isolatedDatabase } from '../test/helpers/db.js';
import { drive, type Operation, quick, type Signer } from './http-drive.js';
import { dayBefore, seedTrades } from './seed.js';

export const FLAT_SIZES = quick ? [1_000, 3_000] : [10_000, 100_000, 1_000_000];
export const FLAT_SECONDS = quick ? 1 : 5;

/**
 * The list over HTTP as the table grows: at each size (stored trades in all), a hot card holding
 * 20 % of them in the 30-day window and an ordinary card with its demo history, both listed at
 * random pages. Trades are seeded straight into the tables (the same rows and per-day counts the
 * verbs keep), as the ledger benchmark does.
 */
export async function flatCost(
  database: Awaited<ReturnType<typeof isolatedDatabase>>['database'],
  dialectName: string,
  base: string,
  sign: Signer,
  merchantId: string,
  hotCard: string,
  ordinaryCard: string,
  startTotal: number,
) {
  const call = async (path: string, body: Record<string, unknown>, withRandomStr = true) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: sign(body, withRandomStr),
    });
    const json = (await res.json()) as Record<string, any>;
    if (!res.ok) throw new Error(`${path}: ${json.code} ${json.msg}`);
    return json.model ?? json;
  };
  const holder = await call(
    '/api/network/holderCreate.html',
    holderBody({ email: 'filler@example.com', idnoType: 2, idno: `F${randomBytes(4).toString('hex')}`.toUpperCase() }),
  );
  await call('/sandbox/holder/review', { holderId: holder.holderId, auditStatus: 2 });
  const today = new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
  const window = { beginDate: dayBefore(today, 29), endDate: dayBefore(today, 0), tradeStatusList: [1, 2, 3, 6, 7, 10] };
  const listTotal = async (cardId: string) =>
    (await call('/api/network/networkAuthTradeList.html', { cardId, ...window, start: 0, maxSize: 1 })).total as number;
  let stored = startTotal;
  let hot = 0;
  let round = 0;
  const rows = [];
  for (const size of FLAT_SIZES) {
    const hotAdd = Math.max(0, Math.round(size * 0.2) - hot);
    await seedTrades(database, merchantId, hotCard, hotAdd, 30, `hot${round}`, today);
    hot += hotAdd;
    stored += hotAdd;
    for (let c = 0; stored < size; c++) {
      const n = Math.min(50_000, size - stored);
      const card = await call('/api/network/cardApply.html', { holderId: holder.holderId, currency: 'EUR' });
      await seedTrades(database, merchantId, card.cardId, n, 365, `fill${round}_${c}`, today);
      stored += n;
    }
    round++;
    if (dialectName === 'postgres') await sql`vacuum analyze`.execute(database.db);
    const measure = async (cardId: string) => {
      const total = await listTotal(cardId);
      const op: Operation = {
        name: 'list',
        path: '/api/network/networkAuthTradeList.html',
        randomStr: true,
        body: () => ({ cardId, ...window, start: Math.floor(Math.random() * total), maxSize: 30 }),
      };
      await drive(base, op, sign, '', 1); // warm-up
      return { total, ...(await drive(base, op, sign, '', FLAT_SECONDS)) };
    };
    const hotM = await measure(hotCard);
    const ordM = await measure(ordinaryCard);
    rows.push({ storedTrades: stored, hotCard: hotM, ordinaryCard: ordM });
    process.stderr.write(
      `[${dialectName}] list at ${stored} stored trades: hot card (${hotM.total} in 30 days) p50 ${hotM.p50} ms p99 ${hotM.p99} ms ${hotM.rps} req/s; ordinary (${ordM.total}) p50 ${ordM.p50} ms p99 ${ordM.p99} ms ${ordM.rps} req/s\n`,
    );
  }
  return rows;
}
