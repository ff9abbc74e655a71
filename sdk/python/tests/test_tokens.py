"""Wallet tokens through the SDK against the real service: the settings (a field left out kept,
None restoring), an empty list walked by the iterator, and a token that is not the merchant's
refused as unknown (2760) by every operation on it."""

from __future__ import annotations

import unittest

from .harness import service

from cardprogram import BadRequestError, NotFoundError


class Tokens(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.svc = service()
        cls.client = cls.svc.client(cls.svc.new_merchant(fund=0))

    def test_settings_a_field_left_out_is_kept_and_none_restores(self):
        client = self.client
        self.assertEqual(client.tokens.settings_query(), {"decisionUrl": None, "methods": None})
        self.assertEqual(client.tokens.settings_update(methods=["app", "otp_sms"]), {"decisionUrl": None, "methods": ["app", "otp_sms"]})
        url = "http://127.0.0.1:9/token-decision"  # the sandbox allows http on loopback
        self.assertEqual(client.tokens.settings_update(decision_url=url), {"decisionUrl": url, "methods": ["app", "otp_sms"]})
        self.assertEqual(client.tokens.settings_update(methods=None), {"decisionUrl": url, "methods": None})
        self.assertEqual(client.tokens.settings_update(decision_url=None), {"decisionUrl": None, "methods": None})
        with self.assertRaises(BadRequestError) as bad:
            client.tokens.settings_update(methods=["app", "app"])
        self.assertEqual(bad.exception.code, "1002")

    def test_list_and_page_of_a_merchant_without_tokens(self):
        self.assertEqual(list(self.client.tokens.list(page_size=2)), [])
        self.assertEqual(self.client.tokens.page(status="active"), {"total": 0, "tokens": []})

    def test_an_unknown_token_is_not_found_for_every_operation(self):
        for call in (
            lambda: self.client.tokens.retrieve("tok_nosuchtoken"),
            lambda: self.client.tokens.suspend("tok_nosuchtoken", reason="lost"),
            lambda: self.client.tokens.resume("tok_nosuchtoken"),
            lambda: self.client.tokens.delete("tok_nosuchtoken"),
            lambda: self.client.tokens.activate("tok_nosuchtoken"),
        ):
            with self.assertRaises(NotFoundError) as nf:
                call()
            self.assertEqual(nf.exception.code, "2760")


if __name__ == "__main__":
    unittest.main()
