"""Webhook verification with the service's real callbacks, one of each type, and an authorization
endpoint written with the SDK's helpers."""

from __future__ import annotations

import json
import secrets
import time
import unittest

from .harness import Receiver, eventually, funded_card, holder_fields, service

from cardprogram import CardProgramError, ConflictError, Webhooks, WebhookVerificationError
from cardprogram.events import EVENT_TYPES


class Callbacks(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.svc = service()
        cls.rx = Receiver()
        cls.merchant = cls.svc.new_merchant(extra=("--notify-url", cls.rx.url))
        cls.client = cls.svc.client(cls.merchant)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.rx.close()

    def wait_for(self, check, what):
        eventually(lambda: any(check(r["body"]) for r in self.rx.received), 15, what)
        return next(r for r in self.rx.received if check(r["body"]))

    def test_every_callback_type_verifies_and_is_typed(self):
        made = funded_card(self.client, 30)
        card_id = made["card"]["cardId"]
        auth = self.client.sandbox.authorize(card_id=card_id, amount=12.5, mcc="5814")
        with self.assertRaises(ConflictError):
            self.client.sandbox.authorize(card_id=card_id, amount=500)
        self.client.cards.freeze(card_id=card_id, reason="lost")
        self.client.cards.unfreeze(card_id=card_id)
        payment = self.client.sandbox.clear(trade_id=auth["tradeId"])
        self.client.disputes.create(trade_id=payment["tradeId"], reason="fraudulent")
        request_no = f"REQ-PY-{secrets.token_hex(4)}"
        self.client.kyc.share(
            request_no=request_no,
            email=f"kim+manual-{secrets.token_hex(3)}@example.com",
            kyc_platform="SUMSUB",
            callback_url=self.rx.url,
            individual_info={
                "firstName": "Kim", "lastName": "Lee", "dob": "1988-01-02", "country": "DE", "gender": 2, "idDocType": "2",
                "number": f"C0{secrets.token_hex(4).upper()}", "validUntil": "2099-01-01", "ipAddress": "203.0.113.9",
                "address": {"country": "DE", "state": "Berlin", "city": "Berlin", "address": "Unter den Linden 2", "zipCode": "10117"},
            },
        )
        # Taken into review at once by the sandbox's reviewer (a kyc.result of its own), then decided.
        eventually(lambda: self.client.kyc.get(request_no)["kycStatus"] == "reviewing", 10, "the request in review")
        self.client.sandbox.review_kyc(request_no=request_no, kyc_status="approved")

        holder_id = made["holder"]["holderId"]
        got = {
            "holder.audit": self.wait_for(lambda b: b.get("type") == "holder.audit" and b.get("holderId") == holder_id, "holder.audit"),
            "trade": self.wait_for(lambda b: b.get("type") == "trade" and b.get("tradeId") == auth["tradeId"], "the authorization's trade"),
            "authorization.declined": self.wait_for(lambda b: b.get("type") == "authorization.declined", "authorization.declined"),
            "card.status": self.wait_for(lambda b: b.get("type") == "card.status" and b.get("status") == "frozen", "card.status"),
            "dispute.updated": self.wait_for(lambda b: b.get("type") == "dispute.updated", "dispute.updated"),
            "kyc.result": self.wait_for(lambda b: b.get("type") == "kyc.result" and b.get("kycStatus") == "approved", "kyc.result"),
        }
        self.assertEqual(sorted(got), sorted(EVENT_TYPES), "one of each callback type")
        for kind, request in got.items():
            with self.subTest(kind=kind):
                # http.server's headers object as it is; the raw bytes, before any parsing.
                event = self.client.webhooks.verify(request["raw"], request["headers"])
                self.assertEqual(event["type"], kind)
                self.assertEqual(event, request["body"])
                self.assertEqual(set(EVENT_TYPES[kind].__required_keys__) - set(event), set(), "every key its TypedDict requires")
        trade = self.client.webhooks.verify(got["trade"]["raw"], got["trade"]["headers"])
        self.assertEqual([trade["cardId"], trade["amount"], trade["authorization"]["merchant"]["mcc"]], [card_id, 12.5, "5814"])

    def test_tampered_resigned_stale_or_unsigned_callbacks_are_refused(self):
        card_id = funded_card(self.client, 7)["card"]["cardId"]
        request = self.wait_for(lambda b: b.get("type") == "trade" and b.get("cardId") == card_id and b.get("tradeType") == 100, "a top-up")
        raw = request["raw"]
        headers = {k: v for k, v in request["headers"].items()}
        self.assertEqual(self.client.webhooks.verify(raw.decode(), {k.upper(): v for k, v in headers.items()})["amount"], 7, "a str body, headers in any case")
        tampered = raw.replace(b'"amount":7', b'"amount":700')
        self.assertNotEqual(tampered, raw)
        with self.assertRaisesRegex(WebhookVerificationError, "no matching signature"):
            self.client.webhooks.verify(tampered, headers)
        with self.assertRaises(WebhookVerificationError):
            self.client.webhooks.verify(raw, headers, "whsec_" + "A" * 32)
        stale = {**headers, "webhook-timestamp": str(int(time.time()) - 3600)}
        with self.assertRaisesRegex(WebhookVerificationError, "too old"):
            self.client.webhooks.verify(raw, stale)
        ahead = {**headers, "webhook-timestamp": str(int(time.time()) + 3600)}
        with self.assertRaisesRegex(WebhookVerificationError, "too new"):
            self.client.webhooks.verify(raw, ahead)
        with self.assertRaisesRegex(WebhookVerificationError, "missing"):
            self.client.webhooks.verify(raw, {"webhook-id": headers["webhook-id"]})
        with self.assertRaisesRegex(CardProgramError, "needs the webhook secret"):
            Webhooks().verify(raw, headers)


class AuthorizationEndpoint(unittest.TestCase):
    def test_an_endpoint_written_with_authorization_request_and_decide(self):
        svc = service()
        client = svc.client(svc.new_merchant())
        seen = []

        def answer(request):
            try:
                authorization = client.webhooks.authorization_request(request["raw"], request["headers"])["authorization"]
            except WebhookVerificationError as err:
                return 400, str(err).encode()
            seen.append(authorization["id"])
            ok = authorization["amount"] <= 50
            return 200, Webhooks.decide(ok, None if ok else "over 50").encode()

        endpoint = Receiver()
        self.addCleanup(endpoint.close)
        endpoint.answer = answer
        client.authorization_endpoint.update(authorization_url=endpoint.url, timeout_ms=2000)
        card_id = funded_card(client, 200)["card"]["cardId"]
        approved = client.sandbox.authorize(card_id=card_id, amount=40, mcc="5411")
        self.assertEqual(seen[0], approved["tradeId"], "the endpoint saw the id the authorization got")
        with self.assertRaises(ConflictError) as declined:
            client.sandbox.authorize(card_id=card_id, amount=60)
        self.assertEqual(declined.exception.code, "2729")
        self.assertIn("over 50", declined.exception.msg)
        detail = client.trades.get(declined.exception.decline["tradeId"])
        self.assertEqual(detail["authorization"]["decision"]["endpoint"]["outcome"], "declined")
        self.assertEqual(json.loads(Webhooks.decide(False, "x" * 300)), {"approved": False, "reason": "x" * 200})


if __name__ == "__main__":
    unittest.main()
