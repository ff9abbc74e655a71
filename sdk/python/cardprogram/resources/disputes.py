from __future__ import annotations

import base64
import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from .._operations import Resource, operation
from .._wire import Dispute, DisputePage, DisputeReason, DisputeStatus

#: An evidence file: a path (``str`` or ``pathlib.Path``), a ``(file_name, bytes)`` pair, or the wire's
#: ``{"fileName", "contentType", "data"}`` with ``data`` as bytes or Base64 text.
EvidenceSource = Union[str, "os.PathLike[str]", Tuple[str, bytes], Mapping[str, Any]]

_TYPES = {".pdf": "application/pdf", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}


def _sniff(name: str, data: bytes) -> str:
    """The content type by the file's first bytes (as the service checks it), else by its extension."""
    if data.startswith(b"%PDF-"):
        return "application/pdf"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    guess = _TYPES.get(os.path.splitext(name)[1].lower())
    if guess is None:
        raise ValueError(f"evidence {name!r}: not a PDF, PNG or JPEG")
    return guess


def evidence_file(source: EvidenceSource) -> Dict[str, str]:
    """The wire form of one evidence file (``fileName``, ``contentType``, ``data`` in Base64)."""
    if isinstance(source, Mapping):
        data = source["data"]
        raw = bytes(data) if isinstance(data, (bytes, bytearray, memoryview)) else None
        name = source["fileName"]
        content_type = source.get("contentType") or _sniff(name, raw if raw is not None else base64.b64decode(data))
        return {"fileName": name, "contentType": content_type, "data": base64.b64encode(raw).decode("ascii") if raw is not None else data}
    if isinstance(source, tuple):
        name, raw = source
    else:
        path = os.fspath(source)
        name = os.path.basename(path)
        with open(path, "rb") as f:
            raw = f.read()
    return {"fileName": name, "contentType": _sniff(name, raw), "data": base64.b64encode(raw).decode("ascii")}


def _files(evidence: Optional[Sequence[EvidenceSource]]) -> Optional[List[Dict[str, str]]]:
    if evidence is None:
        return None
    if isinstance(evidence, (str, bytes, tuple)) or isinstance(evidence, Mapping):
        raise TypeError("evidence is a list of files")
    return [evidence_file(f) for f in evidence]


class Disputes(Resource):
    """Disputes and chargebacks (docs/disputes.md): open one on a cleared purchase, add evidence, submit it before its deadline."""

    @operation("disputeCreate", "write")
    def create(
        self,
        *,
        trade_id: str,
        reason: DisputeReason,
        amount: Optional[float] = None,
        explanation: Optional[str] = None,
        evidence: Optional[Sequence[EvidenceSource]] = None,
        random_str: Optional[str] = None,
    ) -> Dispute:
        """Opens a dispute (status ``unsubmitted``) on a cleared purchase, with evidence files given by
        path, as ``(name, bytes)`` or in the wire's form: PDF, PNG or JPEG, at most 5 MB each and 10 in
        all (a request carries at most 8 MiB: add large files one by one with ``update``).

        >>> dispute = client.disputes.create(trade_id="trd_…", reason="fraudulent",  # doctest: +SKIP
        ...     explanation="I never made this purchase", evidence=["statement.pdf"])
        """
        return self._call(
            "disputeCreate",
            {
                "tradeId": trade_id,
                "reason": reason,
                "amount": amount,
                "explanation": explanation,
                "evidence": _files(evidence),
                "randomStr": random_str,
            },
        )

    @operation("disputeUpdate", "write")
    def update(
        self,
        *,
        dispute_id: str,
        reason: Optional[DisputeReason] = None,
        amount: Optional[float] = None,
        explanation: Optional[str] = None,
        evidence: Optional[Sequence[EvidenceSource]] = None,
        remove_evidence: Optional[List[str]] = None,
        random_str: Optional[str] = None,
    ) -> Dispute:
        """Changes an unsubmitted dispute: reason, amount, explanation; removes files (by name), then adds files.

        >>> client.disputes.update(dispute_id="dsp_…", evidence=[("receipt.png", png_bytes)])  # doctest: +SKIP
        """
        return self._call(
            "disputeUpdate",
            {
                "disputeId": dispute_id,
                "reason": reason,
                "amount": amount,
                "explanation": explanation,
                "evidence": _files(evidence),
                "removeEvidence": remove_evidence,
                "randomStr": random_str,
            },
        )

    @operation("disputeSubmit", "write")
    def submit(self, dispute_id: str, *, random_str: Optional[str] = None) -> Dispute:
        """Submits a dispute to the network (before its ``deadline``).

        >>> client.disputes.submit("dsp_…")["status"]  # 'submitted'  # doctest: +SKIP
        """
        return self._call("disputeSubmit", {"disputeId": dispute_id, "randomStr": random_str})

    @operation("disputeWithdraw", "write")
    def withdraw(self, dispute_id: str, *, random_str: Optional[str] = None) -> Dispute:
        """Withdraws a dispute; a submitted one as if lost (its provisional credit taken back).

        >>> client.disputes.withdraw("dsp_…")  # doctest: +SKIP
        """
        return self._call("disputeWithdraw", {"disputeId": dispute_id, "randomStr": random_str})

    @operation("disputeQuery", "read")
    def retrieve(self, dispute_id: str) -> Dispute:
        """One dispute.

        >>> client.disputes.retrieve("dsp_…")["deadline"]  # doctest: +SKIP
        """
        return self._call("disputeQuery", {"disputeId": dispute_id})

    @operation("disputeList", "read")
    def page(
        self,
        *,
        start: int = 0,
        limit: Optional[int] = None,
        card_id: Optional[str] = None,
        status: Optional[DisputeStatus] = None,
        from_: Optional[str] = None,
        to: Optional[str] = None,
    ) -> DisputePage:
        """One page of the merchant's disputes, newest first; ``from_`` and ``to`` are days of creation.

        >>> client.disputes.page(status="submitted")["total"]  # doctest: +SKIP
        """
        return self._call(
            "disputeList",
            {"start": start, "limit": limit, "cardId": card_id, "status": status, "from": from_, "to": to},
        )

    def list(
        self,
        *,
        card_id: Optional[str] = None,
        status: Optional[DisputeStatus] = None,
        from_: Optional[str] = None,
        to: Optional[str] = None,
        page_size: int = 30,
    ) -> Iterator[Dispute]:
        """Every dispute matching the filters, newest first: pages are fetched as you iterate.

        >>> for d in client.disputes.list(status="submitted"):  # doctest: +SKIP
        ...     print(d["disputeId"], d["deadline"])
        """
        size = min(100, max(1, page_size))

        def walk() -> Iterator[Dispute]:
            start = 0
            while True:
                page = self.page(card_id=card_id, status=status, from_=from_, to=to, start=start, limit=size)
                yield from page["disputes"]
                if len(page["disputes"]) < size or start + size >= page["total"]:
                    return
                start += size

        return walk()
