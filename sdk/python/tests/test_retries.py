"""Retries that never act twice: a write's retry reuses its randomStr, a read's gets a new one; the
1007 of a request signed before the service's replay store started is signed again once."""

from __future__ import annotations

import time
import unittest
from unittest import mock

from .harness import FlakyProxy, closed_port, funded_card, service

import cardprogram._client as client_module
from cardprogram import (
    APIConnectionError,
    APIConnectionTimeoutError,
    AuthenticationError,
    Client,
    InternalServerError,
    WATERMARK_REFUSAL,
)


class Retries(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.svc = service()
        cls.client = cls.svc.client()

    def setUp(self) -> None:
        self.proxy = FlakyProxy(self.svc.url)
        self.addCleanup(self.proxy.close)
        self.retries = []
        self.via_proxy = self.svc.client(base_url=self.proxy.url, timeout=0.5, on_retry=self.retries.append)

    def test_a_write_whose_answer_is_lost_is_sent_again_with_its_randomStr_and_acts_once(self):
        card_id = funded_card(self.client, 10)["card"]["cardId"]
        self.proxy.script.append("lose_answer")
        topped = self.via_proxy.cards.top_up(card_id=card_id, amount=25)
        self.assertEqual(topped["amount"], 25)
        first, second = self.proxy.seen[-2:]
        self.assertEqual(first["behaviour"], "lose_answer", "the service acted on the first attempt")
        self.assertEqual(first["body"]["randomStr"], second["body"]["randomStr"], "the retry reuses the randomStr")
        self.assertNotEqual(first["body"]["sign"], second["body"]["sign"], "each attempt signed anew (its own timestamp)")
        self.assertIsInstance(self.retries[-1].error, APIConnectionError)
        self.assertEqual(self.client.cards.get(card_id)["availableBalance"], 35, "applied once")
        page = self.client.trades.page(card_id=card_id, begin_date="2000-01-01", end_date="2000-01-31")
        self.assertEqual(page["total"], 0)
        today = time.strftime("%Y-%m-%d", time.gmtime())
        top_ups = [t for t in self.client.trades.page(card_id=card_id, begin_date=today, end_date=today)["tradeList"] if t["tradeType"] == 100]
        self.assertEqual([t["amount"] for t in top_ups], [25, 10], "the first top-up and this one, once")
        self.assertEqual(topped["tradeId"], top_ups[0]["tradeId"], "the retry got the first attempt's answer")

    def test_a_read_whose_answer_is_lost_is_retried_with_a_new_randomStr(self):
        card_id = funded_card(self.client, 10)["card"]["cardId"]
        self.proxy.script.append("forward_then_502")
        self.assertEqual(self.via_proxy.cards.get(card_id)["availableBalance"], 10)
        first, second = self.proxy.seen[-2:]
        self.assertNotEqual(first["body"]["randomStr"], second["body"]["randomStr"])
        self.assertIsInstance(self.retries[-1].error, InternalServerError)

    def test_retry_after_is_honoured_a_hang_times_out_and_the_last_error_is_raised(self):
        card_id = funded_card(self.client, 10)["card"]["cardId"]
        self.proxy.script.append("answer_503")
        self.via_proxy.cards.get(card_id)
        self.assertEqual(self.retries[-1].delay, 1.0, "Retry-After: 1")
        self.proxy.script.append("hang")
        started = time.monotonic()
        self.via_proxy.cards.get(card_id)
        self.assertIsInstance(self.retries[-1].error, APIConnectionTimeoutError)
        self.assertLess(time.monotonic() - started, 2.5, "the 0.5 s timeout, then a retry")
        self.proxy.script.extend(["answer_503"] * 3)
        waits = []
        with mock.patch.object(client_module, "_sleep", waits.append), self.assertRaises(InternalServerError) as gave_up:
            self.via_proxy.cards.get(card_id)
        self.assertEqual(waits, [1.0, 1.0])
        self.assertEqual(gave_up.exception.status, 503)
        self.assertEqual([r.attempt for r in self.retries[-2:]], [1, 2], "max_retries (2) retries, then the error")

    def test_no_answer_at_all(self):
        nowhere = Client("mch_x", "sk_x", f"http://127.0.0.1:{closed_port()}", max_retries=1, on_retry=self.retries.append)
        with self.assertRaises(APIConnectionError):
            nowhere.holders.get("hld_x")
        self.assertEqual(len(self.retries), 1)

    def test_calls_that_succeed_are_sent_once_over_one_kept_alive_connection(self):
        client = self.svc.client(on_retry=self.retries.append)
        card_id = funded_card(client, 10)["card"]["cardId"]
        for _ in range(5):
            client.cards.get(card_id)
        self.assertEqual(self.retries, [])
        self.assertEqual(len(client._transport._idle), 1)


class StaleTimestamp(unittest.TestCase):
    """A read signed before the service's replay store last started empty (here: before the service
    started) is refused with 1007; the SDK signs it again with the current time, once."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.svc = service()
        cls.card_id = funded_card(cls.svc.client(), 10)["card"]["cardId"]

    def stale(self) -> int:
        at = int(self.svc.started_at * 1000) - 10_000
        if time.time() * 1000 - at > 280_000:
            self.skipTest("the service started too long ago for a timestamp before it to be fresh")
        return at

    def test_signed_again_once_with_a_fresh_timestamp(self):
        retries = []
        client = self.svc.client(on_retry=retries.append)
        stamps = iter([self.stale()])
        real = client_module._now_ms
        with mock.patch.object(client_module, "_now_ms", lambda: next(stamps, None) or real()):
            self.assertEqual(client.cards.get(self.card_id)["cardId"], self.card_id)
        self.assertEqual(len(retries), 1)
        self.assertIsInstance(retries[0].error, AuthenticationError)
        self.assertEqual(retries[0].error.code, "1007")
        self.assertTrue(retries[0].error.msg.startswith(WATERMARK_REFUSAL))
        self.assertEqual(retries[0].delay, 0)

    def test_only_once(self):
        client = self.svc.client()
        stale = self.stale()
        calls = []

        def always_stale() -> int:
            calls.append(1)
            return stale

        with mock.patch.object(client_module, "_now_ms", always_stale):
            with self.assertRaises(AuthenticationError) as refused:
                client.cards.get(self.card_id)
        self.assertEqual(refused.exception.code, "1007")
        self.assertEqual(len(calls), 2, "the first attempt and one retry")


if __name__ == "__main__":
    unittest.main()
