"""Every error family, as the real service answers it: the class, code, msg, trace_id, field and hint."""

from __future__ import annotations

import re
import secrets
import unittest

from .harness import FlakyProxy, funded_card, holder_fields, service

from cardprogram import (
    APIConnectionError,
    APIConnectionTimeoutError,
    APIError,
    AuthenticationError,
    BadRequestError,
    CardProgramError,
    Client,
    ConflictError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    WebhookVerificationError,
)


class Errors(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.svc = service()

    def setUp(self) -> None:
        self.retries = []
        self.client = self.svc.client(on_retry=self.retries.append)

    def tearDown(self) -> None:
        self.assertEqual(self.retries, [], "none of these is retried")

    def test_bad_request_names_the_field_and_the_rule(self):
        with self.assertRaises(BadRequestError) as bad:
            self.client.holders.create(**holder_fields(date_of_birth="1990-02-30"))
        e = bad.exception
        self.assertEqual([e.status, e.code, e.field], [400, "1002", "dateOfBirth"])
        self.assertRegex(e.msg, r"^dateOfBirth: ")
        self.assertRegex(e.trace_id or "", r"^[0-9a-f]{32}$")
        self.assertIn(e.trace_id, str(e))

    def test_an_unknown_field_gets_the_did_you_mean_hint(self):
        with self.assertRaises(BadRequestError) as bad:
            self.client.request("/api/network/cardQuery.html", {"cardID": "card_x"}, "read")
        self.assertEqual([bad.exception.field, bad.exception.hint], ["cardID", "cardId"])
        self.assertIn("did you mean cardId?", bad.exception.msg)
        card_id = funded_card(self.client, 0)["card"]["cardId"]
        with self.assertRaises(BadRequestError) as nested:
            self.client.cards.update_controls(card_id=card_id, controls={"spendingLimit": [{"amount": 5, "interval": "daily"}]})  # type: ignore[typeddict-unknown-key]
        self.assertEqual(nested.exception.field, "controls.spendingLimit")
        self.assertEqual(nested.exception.hint, "spendingLimits")

    def test_a_body_over_1_mib_is_a_bad_request_too(self):
        card_id = funded_card(self.client, 0)["card"]["cardId"]
        with self.assertRaises(BadRequestError) as big:
            self.client.cards.freeze(card_id=card_id, reason="x" * 1_100_000)
        self.assertEqual([big.exception.status, big.exception.code], [413, "1002"])

    def test_authentication_signature_timestamp_and_unknown_merchant(self):
        card_id = funded_card(self.client, 0)["card"]["cardId"]
        wrong = self.svc.client(secret="sk_test_wrong")
        with self.assertRaises(AuthenticationError) as signed:
            wrong.cards.get(card_id)
        self.assertEqual([signed.exception.status, signed.exception.code], [401, "1006"])
        # The sandbox says what it signed; the SDK hands it over as .detail (never the secret).
        detail = signed.exception.detail
        self.assertEqual(detail["signedFields"], ["appId", "cardId", "randomStr", "timestamp"])
        self.assertRegex(detail["signingString"], rf"^appId={self.svc.demo['appId']}&cardId={card_id}&randomStr=[0-9A-Za-z]{{32}}&timestamp=\d+$")
        unstamped = self.svc.client(sign_timestamp=False)
        with self.assertRaises(AuthenticationError) as stamp:
            unstamped.cards.get(card_id)
        self.assertEqual(stamp.exception.code, "1007")
        self.assertRegex(stamp.exception.msg, r"^timestamp is required")
        stranger = Client("mch_0000000000000000", "sk_test_x", self.svc.url)
        with self.assertRaises(AuthenticationError) as unknown:
            stranger.cards.get(card_id)
        self.assertEqual(unknown.exception.code, "2601")

    def test_permission_denied_not_found_and_conflicts(self):
        no_page = self.svc.client(self.svc.new_merchant(login_free=False, fund=0))
        with self.assertRaises(PermissionDeniedError) as denied:
            no_page.page.link(email="alice@example.com")
        self.assertEqual([denied.exception.status, denied.exception.code], [403, "2605"])
        with self.assertRaises(NotFoundError) as missing:
            self.client.cards.get("card_nope")
        self.assertEqual([missing.exception.status, missing.exception.code], [404, "2648"])

        card_id = funded_card(self.client, 5)["card"]["cardId"]
        with self.assertRaises(ConflictError) as broke:
            self.client.sandbox.authorize(card_id=card_id, amount=50)
        self.assertEqual(broke.exception.code, "2725")
        decline = broke.exception.decline
        self.assertEqual(decline["declineReason"], "insufficient_funds")
        declined = self.client.trades.get(decline["tradeId"])
        self.assertIsNone(declined["trade"])
        self.assertEqual([declined["authorization"]["decision"]["approved"], declined["authorization"]["decision"]["code"]], [False, "2725"])

        key = secrets.token_hex(16)
        self.client.cards.top_up(card_id=card_id, amount=1, random_str=key)
        self.assertEqual(self.client.cards.top_up(card_id=card_id, amount=1, random_str=key)["amount"], 1, "the same request: replayed")
        with self.assertRaises(ConflictError) as reused:
            self.client.cards.top_up(card_id=card_id, amount=2, random_str=key)
        self.assertEqual(reused.exception.code, "1008")
        self.assertEqual(self.client.cards.get(card_id)["availableBalance"], 6, "one top-up of 1")

    def test_rate_limited_with_retry_after(self):
        once = self.svc.client(max_retries=0)
        email = f"carol-{secrets.token_hex(3)}@example.com"
        for _ in range(10):
            once.page.link(email=email)
        with self.assertRaises(RateLimitError) as limited:
            once.page.link(email=email)
        self.assertEqual([limited.exception.status, limited.exception.code], [429, "1009"])
        self.assertRegex(limited.exception.headers.get("retry-after", ""), r"^\d+$")

    def test_server_errors_and_no_answer(self):
        proxy = FlakyProxy(self.svc.url)
        self.addCleanup(proxy.close)
        through = self.svc.client(base_url=proxy.url, max_retries=0, timeout=0.5)
        proxy.script.append("answer_503")
        with self.assertRaises(InternalServerError) as unavailable:
            through.holders.get("hld_x")
        self.assertEqual([unavailable.exception.status, unavailable.exception.code, unavailable.exception.headers["retry-after"]], [503, "1", "1"])
        proxy.script.append("forward_then_502")
        with self.assertRaises(InternalServerError) as gateway:
            through.holders.get("hld_x")
        self.assertEqual([gateway.exception.status, gateway.exception.code, gateway.exception.msg], [502, "", "HTTP 502"])
        proxy.script.append("hang")
        with self.assertRaises(APIConnectionTimeoutError):
            through.holders.get("hld_x")
        proxy.script.append("lose_answer")
        with self.assertRaises(APIConnectionError):
            through.holders.get("hld_x")

    def test_one_hierarchy(self):
        for cls in (BadRequestError, AuthenticationError, PermissionDeniedError, NotFoundError, ConflictError, RateLimitError, InternalServerError):
            self.assertTrue(issubclass(cls, APIError))
        for cls in (APIError, APIConnectionError, APIConnectionTimeoutError, WebhookVerificationError):
            self.assertTrue(issubclass(cls, CardProgramError))
        with self.assertRaisesRegex(CardProgramError, "exactly one of secret"):
            Client("mch_x", None, "http://127.0.0.1:1")
        with self.assertRaisesRegex(CardProgramError, "base_url is required"):
            Client("mch_x", "sk_x")
        self.assertTrue(re.match(r"cardprogram-python/", self.client._user_agent))


if __name__ == "__main__":
    unittest.main()
