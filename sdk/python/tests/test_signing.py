"""Signing, held to the shared vectors of docs/signing.md and to the Node SDK's signer (which the
service's own tests hold to the service's verifier)."""

from __future__ import annotations

import json
import random
import re
import unittest

from .harness import ROOT, node_eval

from cardprogram import canonical_json, signature, signing_string
from cardprogram._rsa import RsaPrivateKey

SECRET = "sk_test_5f3c0d7e9a1b4c2d8e6f0a1b2c3d4e5f"


def doc_vectors():
    """The table under "## Test vectors" in docs/signing.md: body, signing string and sign per row."""
    doc = (ROOT / "docs" / "signing.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Test vectors") : doc.index("## With openssl")]
    rows = []
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [re.sub(r"^\|? *`|` *\|?$", "", c) for c in line.split(" | ")]
            rows.append((json.loads(cells[0]), cells[1], cells[2]))
    return rows


class SharedVectors(unittest.TestCase):
    def test_every_vector_of_docs_signing_md(self):
        rows = doc_vectors()
        self.assertEqual(len(rows), 5, "the five vectors of docs/signing.md")
        for body, string, sign in rows:
            with self.subTest(string=string[:60]):
                self.assertEqual(signing_string(body), string)
                self.assertEqual(signature(SECRET, string), sign)

    def test_a_key_that_is_not_a_field_name_cannot_be_signed(self):
        for key in ("a=b", "", "1abc", "a&b", "x" * 65):
            with self.assertRaisesRegex(ValueError, "not a field name"):
                signing_string({key: 1})

    def test_null_and_empty_are_left_out_at_the_top_only(self):
        self.assertEqual(signing_string({"a": None, "b": "", "c": {"d": None, "e": ""}, "sign": "x"}), 'c={"d":null,"e":""}')

    def test_numbers_are_written_as_javascript_writes_them(self):
        cases = {
            12.5: "12.5", 2.0: "2", -0.0: "0", 1e21: "1e+21", 1e20: "100000000000000000000", 1e-7: "1e-7",
            1e-6: "0.000001", 0.1 + 0.2: "0.30000000000000004", 123456789012345680000.0: "123456789012345680000",
            5e-324: "5e-324", 1.7976931348623157e308: "1.7976931348623157e+308", 2**53 + 1: "9007199254740992",
        }
        for value, text in cases.items():
            with self.subTest(value=value):
                self.assertEqual(canonical_json(value), text)


def random_value(rng: random.Random, depth: int = 0):
    pick = rng.randrange(8 if depth < 3 else 5)
    if pick == 0:
        return rng.choice([None, True, False])
    if pick == 1:
        return rng.randrange(-(2**60), 2**60) if rng.random() < 0.2 else rng.randrange(-1000, 1000)
    if pick == 2:
        exp = rng.randrange(-30, 30)
        return rng.uniform(-1, 1) * 10.0**exp
    if pick in (3, 4):
        alphabet = "aZ09 %&=\"\\\n\t\u0001\u007f\u00e9\u2028\u20ac\U0001f600\ud800"
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
    if pick == 5:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    key = lambda: "".join(rng.choice("aB_é€\U0001f600\ud800") for _ in range(rng.randrange(1, 4)))  # noqa: E731
    return {key(): random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


class SameAsTheNodeSdk(unittest.TestCase):
    def test_any_body_signs_as_the_node_sdk_signs_it(self):
        # The Node SDK's signer is held to the service's by test/client.test.ts (a property over any body).
        rng = random.Random(44)
        bodies = []
        for _ in range(400):
            keys = ["".join(rng.choice("abcXYZ_9") for _ in range(rng.randrange(1, 6))) for _ in range(rng.randrange(1, 6))]
            bodies.append({("k" + k): random_value(rng) for k in keys})
        # Python's JSON (lone surrogates escaped, floats in their shortest form) reads back as the same values in Node.
        out = node_eval(
            "import { signingString } from './client/dist/index.js';"
            "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>console.log(JSON.stringify(JSON.parse(s).map(signingString))));",
            json.dumps(bodies),
        )
        expected = json.loads(out)
        for body, text in zip(bodies, expected):
            self.assertEqual(signing_string(body), text, body)


class Rsa(unittest.TestCase):
    def test_the_same_signature_as_node_crypto_from_pkcs8_and_pkcs1_pem(self):
        out = json.loads(
            node_eval(
                "import { generateKeyPairSync, createSign } from 'node:crypto';"
                "const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });"
                "const data = 'amount=12.5&appId=mch_0123456789abcdef&remark=M%26S';"
                "console.log(JSON.stringify({ pkcs8: privateKey.export({ type: 'pkcs8', format: 'pem' }),"
                " pkcs1: privateKey.export({ type: 'pkcs1', format: 'pem' }), data,"
                " sign: createSign('sha256').update(data, 'utf8').sign(privateKey, 'base64') }));"
            )
        )
        for form in ("pkcs8", "pkcs1"):
            with self.subTest(form=form):
                key = RsaPrivateKey(out[form])
                self.assertEqual(signature(key, out["data"]), out["sign"])
                self.assertNotIn("BEGIN", repr(key))

    def test_an_encrypted_or_public_key_is_refused_with_what_to_do(self):
        with self.assertRaisesRegex(ValueError, "encrypted; decrypt it first"):
            RsaPrivateKey("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----")
        with self.assertRaisesRegex(ValueError, "not an RSA private key"):
            RsaPrivateKey("-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----")
        with self.assertRaisesRegex(ValueError, "not a PEM key"):
            RsaPrivateKey("sk_test_nope")


if __name__ == "__main__":
    unittest.main()
