import type { Requester } from '../request.js';
import type { TradeDetail, TradePage, TradeRecord, TradeStatusValue } from '../types.js';

/** The service's limit on one query's range: endDate at most 30 days after beginDate. */
export const MAX_WINDOW_DAYS = 30;
const DAY = 86_400_000;

export interface TradePageParams {
  cardId?: string;
  cardNo?: string;
  currency?: 'EUR' | 'USDT';
  beginDate: string;
  endDate: string;
  start: number;
  maxSize?: number;
  tradeStatusList?: TradeStatusValue[];
}

export interface TradeListParams {
  cardId?: string;
  cardNo?: string;
  currency?: 'EUR' | 'USDT';
  /** First day (yyyy-MM-dd or a Date, UTC). */
  from: string | Date;
  /** Last day, included. Any distance from `from`: longer ranges are split into 30-day windows. */
  to: string | Date;
  /** Statuses to list; the service's default is 1 and 10. */
  statuses?: TradeStatusValue[];
  /** Records per request, at most 30. Default 30. */
  pageSize?: number;
}

function day(d: string | Date): number {
  const text = typeof d === 'string' ? d : d.toISOString().slice(0, 10);
  const t = Date.parse(`${text}T00:00:00Z`);
  // The round trip refuses days that do not exist (2026-02-30), which Date.parse would roll over.
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== text) {
    throw new TypeError(`not a date: ${String(d)}`);
  }
  return t;
}
const iso = (t: number) => new Date(t).toISOString().slice(0, 10);

export class Trades {
  constructor(private readonly client: Requester) {}

  /**
   * One page of the transaction list (interface 4.1), as the service returns it.
   *
   * @example
   * const { total, tradeList } = await client.trades.page({ cardId, beginDate: '2026-11-01', endDate: '2026-11-21', start: 0 });
   */
  page(params: TradePageParams): Promise<TradePage> {
    return this.client.request<TradePage>('/api/network/networkAuthTradeList.html', { ...params }, 'read');
  }

  /**
   * One transaction by id (tradeQuery): its record and, for an authorization, the acceptor and the
   * decision. A declined authorization's id (`dcl_…`, from the decline's `detail.tradeId` or an
   * `authorization.declined` callback) gives `trade: null` and the authorization.
   *
   * @example
   * const { trade, authorization } = await client.trades.get('trd_…');
   * if (authorization && !authorization.decision.approved) console.log(authorization.decision.declineReason);
   */
  get(tradeId: string): Promise<TradeDetail> {
    return this.client.request<TradeDetail>('/api/network/tradeQuery.html', { tradeId }, 'read');
  }

  /**
   * Every transaction of a card from `from` to `to`, newest first: pages are fetched as you
   * iterate, and a range longer than 30 days is split into windows for you. A transaction written
   * while you iterate may shift a page by one record (the list pages by offset).
   *
   * @example
   * for await (const trade of client.trades.list({ cardId, from: '2026-01-01', to: '2026-11-21' })) {
   *   console.log(trade.businessDate, trade.tradeType, trade.amount);
   * }
   */
  async *list(params: TradeListParams): AsyncGenerator<TradeRecord, void, undefined> {
    const first = day(params.from);
    const last = day(params.to);
    if (last < first) throw new TypeError('to must not be before from');
    const maxSize = Math.min(30, Math.max(1, params.pageSize ?? 30));
    if (params.cardId === undefined && params.cardNo === undefined) throw new TypeError('give cardId or cardNo');
    const card = params.cardId !== undefined ? { cardId: params.cardId } : { cardNo: params.cardNo as string };
    // Windows from the newest back, so the whole iteration is newest first.
    for (let end = last; end >= first; end -= (MAX_WINDOW_DAYS + 1) * DAY) {
      const begin = Math.max(first, end - MAX_WINDOW_DAYS * DAY);
      for (let start = 0; ; start += maxSize) {
        const page = await this.page({
          ...card,
          ...(params.currency === undefined ? {} : { currency: params.currency }),
          ...(params.statuses === undefined ? {} : { tradeStatusList: params.statuses }),
          beginDate: iso(begin),
          endDate: iso(end),
          start,
          maxSize,
        });
        yield* page.tradeList;
        if (page.tradeList.length < maxSize || start + maxSize >= page.total) break;
      }
    }
  }
}
