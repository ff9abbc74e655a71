"""trades.list: every page of any date range, newest first, each record once."""

from __future__ import annotations

import datetime
import unittest

from .harness import funded_card, service


def day(offset: int) -> datetime.date:
    return datetime.datetime.now(datetime.timezone.utc).date() - datetime.timedelta(days=offset)


class TradeList(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.svc = service()
        cls.client = cls.svc.client()
        cls.card_id = funded_card(cls.client, 1000)["card"]["cardId"]
        # 40 payments spread over 100 days (several on some days), plus today's top-up.
        cls.offsets = [(i * 37) % 100 for i in range(40)]
        for i, offset in enumerate(cls.offsets):
            cls.client.sandbox.authorize(card_id=cls.card_id, amount=(100 + i) / 100, remark=f"Shop {i}", business_date=day(offset))

    def test_a_range_of_100_days_in_pages_of_7(self):
        pages = []
        original = self.client.trades.page

        def counted(**kw):
            pages.append((kw["begin_date"], kw["end_date"], kw["start"]))
            return original(**kw)

        self.client.trades.page = counted  # type: ignore[method-assign]
        try:
            seen = list(self.client.trades.list(card_id=self.card_id, from_=day(100), to=datetime.datetime.now(datetime.timezone.utc), page_size=7))
        finally:
            del self.client.trades.page
        self.assertEqual(len(seen), 41)
        self.assertEqual(len({t["tradeId"] for t in seen}), 41, "no duplicates")
        dates = [t["businessDate"] for t in seen]
        self.assertEqual(dates, sorted(dates, reverse=True), "newest first")
        windows = sorted({(b, e) for b, e, _ in pages}, reverse=True)
        self.assertEqual(len(windows), 4, "101 days in windows of at most 31")
        for begin, end in windows:
            self.assertLessEqual((datetime.date.fromisoformat(end) - datetime.date.fromisoformat(begin)).days, 30)
        self.assertEqual(windows[0][1], day(0).isoformat())
        self.assertEqual(windows[-1][0], day(100).isoformat())

    def test_a_range_sees_only_what_it_covers(self):
        recent = list(self.client.trades.list(card_id=self.card_id, from_=day(30).isoformat(), to=day(0).isoformat()))
        self.assertEqual(len(recent), len([o for o in self.offsets if o <= 30]) + 1)
        by_no = list(self.client.trades.list(card_no=None, card_id=self.card_id, from_=day(5), to=day(5)))
        self.assertEqual(len(by_no), self.offsets.count(5))

    def test_bad_ranges_are_refused_before_any_request(self):
        with self.assertRaisesRegex(ValueError, "not a date"):
            self.client.trades.list(card_id=self.card_id, from_="2026-02-30", to=day(0))
        with self.assertRaisesRegex(ValueError, "to must not be before from_"):
            self.client.trades.list(card_id=self.card_id, from_=day(0), to=day(1))
        with self.assertRaisesRegex(ValueError, "card_id or card_no"):
            self.client.trades.list(from_=day(1), to=day(0))


if __name__ == "__main__":
    unittest.main()
