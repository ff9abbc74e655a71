"""Disputes with evidence files from paths, bytes and Base64, against the real service."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import struct
import tempfile
import unittest
import zlib
from pathlib import Path

from .harness import funded_card, service

from cardprogram import BadRequestError, ConflictError, evidence_file


def png(width: int = 1, height: int = 1) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * (width + 1) * height)) + chunk(b"IEND", b"")


def pdf(pad: int = 0) -> bytes:
    return b"%PDF-1.4\n1 0 obj <<>> endobj\n%" + b"A" * pad + b"\ntrailer <<>>\n%%EOF\n"


def jpeg() -> bytes:
    return b"\xff\xd8" + b"\xff\xe0\x00\x04\x4a\x46" + bytes([0xFF, 0xC0, 0x00, 0x0B, 0x08, 0, 1, 0, 1, 0x01, 0x01, 0x11, 0x00]) + b"\xff\xd9"


class Disputes(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.svc = service()
        cls.client = cls.svc.client()
        cls.dir = tempfile.mkdtemp(prefix="cardprogram-py-evidence-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)

    def purchases(self, count: int):
        card_id = funded_card(self.client, 100)["card"]["cardId"]
        out = []
        for _ in range(count):
            auth = self.client.sandbox.authorize(card_id=card_id, amount=2)
            out.append(self.client.sandbox.clear(trade_id=auth["tradeId"])["tradeId"])
        return card_id, out

    def test_evidence_from_a_path_bytes_and_base64_then_submit_list_withdraw(self):
        card_id, payments = self.purchases(4)
        statement = Path(self.dir, "statement.pdf")
        statement.write_bytes(pdf(5))
        receipt = png(2, 3)
        created = self.client.disputes.create(
            trade_id=payments[0],
            reason="duplicate",
            explanation="charged twice",
            evidence=[str(statement), ("receipt.png", receipt)],
        )
        self.assertEqual(created["status"], "unsubmitted")
        files = {e["fileName"]: e for e in created["evidence"]}
        self.assertEqual(sorted(files), ["receipt.png", "statement.pdf"])
        self.assertEqual(files["statement.pdf"]["sha256"], hashlib.sha256(pdf(5)).hexdigest(), "the file's bytes, as read from its path")
        self.assertEqual([files["receipt.png"]["contentType"], files["receipt.png"]["size"]], ["image/png", len(receipt)])

        updated = self.client.disputes.update(
            dispute_id=created["disputeId"],
            remove_evidence=["receipt.png"],
            evidence=[{"fileName": "photo.jpg", "data": base64.b64encode(jpeg()).decode()}],
        )
        self.assertEqual(sorted(e["fileName"] for e in updated["evidence"]), ["photo.jpg", "statement.pdf"])
        self.assertEqual(self.client.disputes.retrieve(created["disputeId"])["explanation"], "charged twice")

        submitted = self.client.disputes.submit(created["disputeId"])
        self.assertEqual(submitted["status"], "submitted")
        with self.assertRaises(ConflictError) as again:
            self.client.disputes.submit(created["disputeId"])
        self.assertEqual(again.exception.code, "2742")

        others = [self.client.disputes.create(trade_id=t, reason="not_received")["disputeId"] for t in payments[1:]]
        listed = [d["disputeId"] for d in self.client.disputes.list(card_id=card_id, page_size=2)]
        self.assertEqual(sorted(listed), sorted([created["disputeId"], *others]), "every one, each once, across pages of 2")
        page = self.client.disputes.page(card_id=card_id, status="unsubmitted", limit=10)
        self.assertEqual(page["total"], 3)
        self.assertEqual(self.client.disputes.withdraw(others[0])["status"], "withdrawn")
        decided = self.client.sandbox.decide_dispute(dispute_id=created["disputeId"], outcome="won")
        self.assertEqual([decided["status"], decided["outcomeAmount"]], ["won", 2])

    def test_a_file_that_is_not_what_it_says_is_refused_naming_it(self):
        _, [payment] = self.purchases(1)
        dispute = self.client.disputes.create(trade_id=payment, reason="fraudulent")
        with self.assertRaises(BadRequestError) as refused:
            self.client.disputes.update(
                dispute_id=dispute["disputeId"], evidence=[{"fileName": "x.pdf", "contentType": "application/pdf", "data": b"<html>"}]
            )
        self.assertEqual(refused.exception.code, "2744")
        self.assertEqual(refused.exception.field, "evidence[0].data")
        self.assertEqual(self.client.disputes.retrieve(dispute["disputeId"])["evidence"], [], "nothing was added")

    def test_evidence_file_forms(self):
        path = os.path.join(self.dir, "scan.jpeg")
        with open(path, "wb") as f:
            f.write(jpeg())
        self.assertEqual(evidence_file(path)["contentType"], "image/jpeg")
        self.assertEqual(evidence_file(Path(path))["fileName"], "scan.jpeg")
        self.assertEqual(evidence_file(("a.bin", pdf()))["contentType"], "application/pdf", "by its bytes, whatever its name")
        with self.assertRaisesRegex(ValueError, "not a PDF, PNG or JPEG"):
            evidence_file(("notes.txt", b"hello"))
        with self.assertRaisesRegex(TypeError, "a list of files"):
            self.client.disputes.create(trade_id="trd_x", reason="other", evidence="statement.pdf")  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
