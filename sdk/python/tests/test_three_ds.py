"""3-D Secure: the settings (a decision URL set, kept, removed), the sandbox's directory server
(frictionless and challenged), reading the authentications, and another merchant refused, against
the real service."""

from __future__ import annotations

import unittest

from .harness import Receiver, eventually, funded_card, note_secret, service

from cardprogram import NotFoundError


class ThreeDs(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.svc = service()
        # A challenge needs a notify URL (its threeDs.otp callback); without one it is N/13.
        cls.rx = Receiver()
        cls.merchant = cls.svc.new_merchant(extra=("--notify-url", cls.rx.url))
        cls.client = cls.svc.client(cls.merchant)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.rx.close()

    def test_settings_a_field_left_out_is_kept_and_none_removes_the_decision_url(self):
        client = self.svc.client(self.svc.new_merchant(fund=0))
        self.assertEqual(client.three_ds.settings_query(), {"decisionUrl": None, "challengeMethod": "otp"})
        url = "http://127.0.0.1:9/3ds-decision"  # the sandbox allows http on loopback
        self.assertEqual(client.three_ds.settings_update(decision_url=url), {"decisionUrl": url, "challengeMethod": "otp"})
        # decision_url left out: the service keeps it.
        self.assertEqual(client.three_ds.settings_update(challenge_method="oob"), {"decisionUrl": url, "challengeMethod": "oob"})
        self.assertEqual(client.three_ds.settings_query(), {"decisionUrl": url, "challengeMethod": "oob"})
        # None is sent as null: the endpoint is removed, the challenge method kept.
        self.assertEqual(client.three_ds.settings_update(decision_url=None), {"decisionUrl": None, "challengeMethod": "oob"})
        self.assertEqual(client.three_ds.settings_query(), {"decisionUrl": None, "challengeMethod": "oob"})

    def test_frictionless_and_challenged_authentications_then_get_and_list(self):
        card_id = funded_card(self.client, 100)["card"]["cardId"]
        small = self.client.sandbox.authenticate(card_id=card_id, amount=1.5, merchant_name="Py Shop")
        ares = small["ares"]
        self.assertEqual([ares["messageType"], ares["transStatus"], ares["eci"]], ["ARes", "Y", "05"], ares)
        self.assertEqual(len(ares["authenticationValue"]), 28)
        self.assertIsNone(small["challenge"])

        mandated = self.client.sandbox.authenticate(card_id=card_id, amount=2, challenge_ind="04")
        self.assertEqual(mandated["ares"]["transStatus"], "C")
        self.assertEqual(mandated["challenge"]["acsURL"], mandated["ares"]["acsURL"])
        self.assertEqual(mandated["challenge"]["method"], "POST")

        got = self.client.three_ds.get(ares["acsTransID"])
        self.assertEqual(
            [got["acsTransID"], got["cardId"], got["transStatus"], got["decidedBy"], got["merchantName"], got["amount"], got["currency"]],
            [ares["acsTransID"], card_id, "Y", "exemption", "Py Shop", 1.5, "EUR"],
        )
        self.assertIsNotNone(got["completedAt"])
        challenged = self.client.three_ds.get(mandated["ares"]["acsTransID"])
        self.assertEqual([challenged["transStatus"], challenged["decidedBy"], challenged["challengeMethod"]], ["C", "mandate", "otp"])
        self.assertIsNone(challenged["completedAt"], "a challenge under way")
        # The code to deliver came to the notify URL, signed as every callback.
        def otp_sent() -> bool:
            return any(r["body"].get("acsTransID") == challenged["acsTransID"] for r in self.rx.received)

        eventually(otp_sent, 15, "the threeDs.otp callback")
        sent = next(r for r in self.rx.received if r["body"].get("acsTransID") == challenged["acsTransID"])
        event = self.client.webhooks.verify(sent["raw"], sent["headers"])
        note_secret("otp", event["code"])  # the run's audit checks no log holds it
        self.assertEqual([event["type"], event["cardId"], len(event["code"])], ["threeDs.otp", card_id, 6])

        third = self.client.sandbox.authenticate(card_id=card_id, amount=3)["ares"]["acsTransID"]
        newest_first = [third, mandated["ares"]["acsTransID"], ares["acsTransID"]]
        # One per page: the iterator fetches three pages.
        self.assertEqual([a["acsTransID"] for a in self.client.three_ds.list(card_id=card_id, page_size=1)], newest_first)
        page = self.client.three_ds.page(card_id=card_id, start=1, limit=1)
        self.assertEqual([page["total"], [a["acsTransID"] for a in page["authentications"]]], [3, newest_first[1:2]])
        today = got["createdAt"][:10]
        self.assertEqual(len(list(self.client.three_ds.list(card_id=card_id, from_=today, to=today))), 3)
        self.assertEqual(list(self.client.three_ds.list(card_id=card_id, to="2000-01-01")), [])

    def test_a_challenge_finished_with_the_code_and_an_out_of_band_one_answered(self):
        card_id = funded_card(self.client, 100)["card"]["cardId"]
        acs_trans_id = self.client.sandbox.authenticate(card_id=card_id, amount=4, challenge_ind="04")["ares"]["acsTransID"]

        def otp_sent() -> bool:
            return any(r["body"].get("acsTransID") == acs_trans_id for r in self.rx.received)

        eventually(otp_sent, 15, "the threeDs.otp callback")
        sent = next(r for r in self.rx.received if r["body"].get("acsTransID") == acs_trans_id)
        code = self.client.webhooks.verify(sent["raw"], sent["headers"])["code"]
        note_secret("otp", code)
        wrong = self.client.sandbox.complete_challenge(acs_trans_id=acs_trans_id, otp="000000" if code != "000000" else "111111")
        self.assertEqual([wrong["authentication"]["transStatus"], wrong["attemptsLeft"], wrong["cres"]], ["C", 2, None])
        done = self.client.sandbox.complete_challenge(acs_trans_id=acs_trans_id, otp=code)
        self.assertEqual([done["authentication"]["transStatus"], done["authentication"]["eci"]], ["Y", "05"])
        self.assertIsNotNone(done["cres"])

        client = self.svc.client(self.svc.new_merchant(extra=("--notify-url", self.rx.url)))
        client.three_ds.settings_update(challenge_method="oob")
        oob_card = funded_card(client, 100)["card"]["cardId"]
        oob = client.sandbox.authenticate(card_id=oob_card, amount=4, challenge_ind="04")["ares"]
        self.assertEqual([oob["transStatus"], oob["authenticationType"]], ["C", "03"])
        answered = client.three_ds.challenge_respond(acs_trans_id=oob["acsTransID"], result="declined")
        self.assertEqual([answered["transStatus"], answered["transStatusReason"]], ["N", "01"])

    def test_another_merchant_can_neither_read_nor_authenticate_with_the_card(self):
        card_id = funded_card(self.client, 50)["card"]["cardId"]
        acs_trans_id = self.client.sandbox.authenticate(card_id=card_id, amount=4)["ares"]["acsTransID"]
        stranger = self.svc.client(self.svc.new_merchant(fund=0))
        with self.assertRaises(NotFoundError) as unread:
            stranger.three_ds.get(acs_trans_id)
        self.assertEqual([unread.exception.status, unread.exception.code], [404, "2750"])
        self.assertEqual(stranger.three_ds.page(card_id=card_id), {"total": 0, "authentications": []})
        self.assertEqual(list(stranger.three_ds.list()), [])
        with self.assertRaises(NotFoundError) as foreign:
            stranger.sandbox.authenticate(card_id=card_id, amount=4)
        self.assertEqual(foreign.exception.code, "2648", "another merchant's card is not found")
        # Nothing was written for the card: its owner still sees the one authentication.
        self.assertEqual([a["acsTransID"] for a in self.client.three_ds.list(card_id=card_id)], [acs_trans_id])

    def test_an_unknown_authentication_is_not_found(self):
        with self.assertRaises(NotFoundError) as missing:
            self.client.three_ds.get("00000000-0000-4000-8000-000000000000")
        self.assertEqual(missing.exception.code, "2750")


if __name__ == "__main__":
    unittest.main()
