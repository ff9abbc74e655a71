from __future__ import annotations

import datetime
from typing import Iterator, List, Literal, Optional, Union

from .._operations import Resource, operation
from .._wire import TradeDetail, TradePage, TradeRecord, TradeStatusValue

#: The service's limit on one query's range: end_date at most 30 days after begin_date.
MAX_WINDOW_DAYS = 30

Day = Union[str, datetime.date]


def _day(value: Day, name: str) -> datetime.date:
    if isinstance(value, datetime.datetime):
        # An aware datetime's day in UTC, as the service counts days; a naive one as it is.
        return (value.astimezone(datetime.timezone.utc) if value.tzinfo else value).date()
    if isinstance(value, datetime.date):
        return value
    try:
        if len(value) != 10:
            raise ValueError
        return datetime.date.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: not a date (YYYY-MM-DD): {value!r}") from None


class Trades(Resource):
    """Transactions: the 4.1 list, and one transaction by id (tradeQuery)."""

    @operation("tradeList", "read")
    def page(
        self,
        *,
        begin_date: str,
        end_date: str,
        start: int = 0,
        card_id: Optional[str] = None,
        card_no: Optional[str] = None,
        currency: Optional[Literal["EUR", "USDT"]] = None,
        max_size: Optional[int] = None,
        trade_status_list: Optional[List[TradeStatusValue]] = None,
    ) -> TradePage:
        """One page of the transaction list (interface 4.1), as the service returns it (at most 30 days).

        >>> client.trades.page(card_id="card_…", begin_date="2026-11-01", end_date="2026-11-21")["total"]  # doctest: +SKIP
        """
        return self._call(
            "tradeList",
            {
                "cardId": card_id,
                "cardNo": card_no,
                "currency": currency,
                "beginDate": begin_date,
                "endDate": end_date,
                "start": start,
                "maxSize": max_size,
                "tradeStatusList": trade_status_list,
            },
        )

    @operation("tradeQuery", "read")
    def get(self, trade_id: str) -> TradeDetail:
        """One transaction by id: its record and, for an authorization, the acceptor and the decision.
        A declined authorization's id (``dcl_…``, from a decline's ``error.decline`` or an
        ``authorization.declined`` callback) gives ``trade: None`` and the authorization.

        >>> detail = client.trades.get("trd_…")  # doctest: +SKIP
        """
        return self._call("tradeQuery", {"tradeId": trade_id})

    def list(
        self,
        *,
        from_: Day,
        to: Day,
        card_id: Optional[str] = None,
        card_no: Optional[str] = None,
        currency: Optional[Literal["EUR", "USDT"]] = None,
        statuses: Optional[List[TradeStatusValue]] = None,
        page_size: int = 30,
    ) -> Iterator[TradeRecord]:
        """Every transaction of a card from ``from_`` to ``to`` (days, included), newest first: pages are
        fetched as you iterate, and a range longer than 30 days is split into windows for you. A
        transaction written while you iterate may shift a page by one record (the list pages by offset).

        >>> for trade in client.trades.list(card_id="card_…", from_="2026-01-01", to=datetime.date.today()):  # doctest: +SKIP
        ...     print(trade["businessDate"], trade["tradeType"], trade["amount"])
        """
        first, last = _day(from_, "from_"), _day(to, "to")
        if last < first:
            raise ValueError("to must not be before from_")
        if card_id is None and card_no is None:
            raise ValueError("give card_id or card_no")
        size = min(30, max(1, page_size))
        return self._walk(first, last, card_id, card_no, currency, statuses, size)

    def _walk(
        self,
        first: datetime.date,
        last: datetime.date,
        card_id: Optional[str],
        card_no: Optional[str],
        currency: Optional[Literal["EUR", "USDT"]],
        statuses: Optional[List[TradeStatusValue]],
        size: int,
    ) -> Iterator[TradeRecord]:
        # Windows from the newest back, so the whole iteration is newest first.
        end = last
        while end >= first:
            begin = max(first, end - datetime.timedelta(days=MAX_WINDOW_DAYS))
            start = 0
            while True:
                page = self.page(
                    card_id=card_id,
                    card_no=card_no,
                    currency=currency,
                    trade_status_list=statuses,
                    begin_date=begin.isoformat(),
                    end_date=end.isoformat(),
                    start=start,
                    max_size=size,
                )
                yield from page["tradeList"]
                if len(page["tradeList"]) < size or start + size >= page["total"]:
                    break
                start += size
            end = begin - datetime.timedelta(days=1)
