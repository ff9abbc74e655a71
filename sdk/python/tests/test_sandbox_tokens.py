"""The sandbox's TSP through the SDK against the real service: a token approved and paid with, a
step-up finished with the code the token.otp callback carried, a declined payment with a token that
is not active, and a card that is not the merchant's refused as unknown."""

from __future__ import annotations

import unittest

from .harness import Receiver, eventually, funded_card, note_secret, service

from cardprogram import ConflictError, NotFoundError


class SandboxTokens(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.svc = service()
        # A step-up by code needs a notify URL (its token.otp callback).
        cls.rx = Receiver()
        cls.client = cls.svc.client(cls.svc.new_merchant(extra=("--notify-url", cls.rx.url)))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.rx.close()

    def test_approve_pay_step_up_verify_and_decline(self):
        card_id = funded_card(self.client, 100)["card"]["cardId"]
        green = self.client.sandbox.provision_token(card_id=card_id, wallet_provider="apple_pay", device={"type": "phone", "name": "Py phone"})
        self.assertEqual([green["decision"], green["token"]["status"], green["codeSent"]], ["approve", "active", None])
        paid = self.client.sandbox.authorize(card_id=card_id, amount=2.5, channel="pos", token_id=green["tokenId"])
        detail = self.client.trades.get(paid["tradeId"])
        self.assertEqual(detail["token"], {"tokenId": green["tokenId"], "walletProvider": "apple_pay", "device": {"type": "phone", "name": "Py phone"}})

        yellow = self.client.sandbox.provision_token(card_id=card_id, wallet_provider="google_pay", wallet_risk_score=5)
        self.assertEqual([yellow["decision"], yellow["token"]["status"]], ["require_authentication", "pending"])
        self.assertEqual(yellow["codeSent"]["type"], yellow["authenticationMethods"][0]["type"])
        with self.assertRaises(ConflictError) as declined:
            self.client.sandbox.authorize(card_id=card_id, amount=1, token_id=yellow["tokenId"])
        self.assertEqual(declined.exception.code, "2734")

        def otp_sent() -> bool:
            return any(r["body"].get("type") == "token.otp" and r["body"].get("tokenId") == yellow["tokenId"] for r in self.rx.received)

        eventually(otp_sent, 15, "the token.otp callback")
        code = next(r for r in self.rx.received if r["body"].get("tokenId") == yellow["tokenId"] and r["body"].get("type") == "token.otp")["body"]["code"]
        note_secret("otp", code)  # the run's audit checks no log holds it
        done = self.client.sandbox.verify_token(token_id=yellow["tokenId"], code=code)
        self.assertEqual([done["valid"], done["token"]["status"]], [True, "active"])
        self.assertEqual(self.client.sandbox.authorize(card_id=card_id, amount=1, token_id=yellow["tokenId"])["tradeType"], 150)

    def test_another_merchants_card_is_not_found(self):
        other = self.svc.client(self.svc.new_merchant())
        card_id = funded_card(other, 10)["card"]["cardId"]
        with self.assertRaises(NotFoundError) as nf:
            self.client.sandbox.provision_token(card_id=card_id, wallet_provider="apple_pay")
        self.assertEqual(nf.exception.code, "2648")


if __name__ == "__main__":
    unittest.main()
