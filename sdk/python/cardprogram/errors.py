"""Every error the SDK raises is a :class:`CardProgramError`; the service's refusals are an
:class:`APIError` subclass per family (docs/errors.md), the same families as the Node SDK's."""

from __future__ import annotations

import re
from typing import Any, List, Mapping, Optional, Type, TypedDict

from ._wire import DeclineReasonValue


class SignatureDetail(TypedDict):
    """What a sandbox service answers with a ``1006``: compare ``signingString`` with the string you signed."""

    signingString: str
    signedFields: List[str]
    unsignedFields: List[str]
    signType: str


class DeclineDetail(TypedDict):
    """What a declined sandbox authorization answers: read it back with ``client.trades.get(trade_id)``."""

    tradeId: str
    declineReason: DeclineReasonValue


# "cardID: is not a known field; did you mean cardId?", "evidence[0].data: …", "individualInfo.dob: …"
_FIELD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(?:\[\d+\]|\.[A-Za-z_][A-Za-z0-9_]*)*): ")
_HINT = re.compile(r"did you mean ([A-Za-z_][A-Za-z0-9_.\[\]]*)\?")


class CardProgramError(Exception):
    """The base of every error the SDK raises."""


class APIError(CardProgramError):
    """The service answered with an error envelope (or an answer that was not JSON).

    Attributes:
        status: the HTTP status.
        code: the service's result code (docs/errors.md), e.g. ``"1002"``; ``""`` when the body was not an envelope.
        msg: the service's message; for a bad field it starts with the field's name and the rule.
        trace_id: the request's trace id: quote it to the service's operator.
        field: the field the message names (``"dateOfBirth"``, ``"individualInfo.dob"``, ``"evidence[0].data"``), or None.
        hint: the known field the service suggests for an unknown one (``"did you mean cardId?"``), or None.
        detail: sandbox only, on a ``1006``: what the service signed (:class:`SignatureDetail`). Never the secret.
        decline: on a declined sandbox authorization: its ``tradeId`` and ``declineReason`` (:class:`DeclineDetail`).
        headers: the answer's headers (``Retry-After``, ``x-trace-id``, …).
        body: the parsed answer, as it came.
    """

    def __init__(
        self,
        status: int,
        code: str,
        msg: str,
        trace_id: Optional[str],
        headers: Optional[Mapping[str, str]] = None,
        detail: Optional[SignatureDetail] = None,
        decline: Optional[DeclineDetail] = None,
        body: Any = None,
    ) -> None:
        self.status = status
        self.code = code
        self.msg = msg
        self.trace_id = trace_id
        self.headers: Mapping[str, str] = headers if headers is not None else {}
        self.detail = detail
        self.decline = decline
        self.body = body
        field = _FIELD.match(msg)
        self.field: Optional[str] = field.group(1) if field else None
        hint = _HINT.search(msg)
        self.hint: Optional[str] = hint.group(1) if hint else None
        super().__init__(f"{code + ' ' if code else ''}{msg}{f' (traceId {trace_id})' if trace_id else ''}")

    @staticmethod
    def from_response(status: int, body: Any, headers: Mapping[str, str]) -> "APIError":
        """The error of the right family for an answer."""
        env = body if isinstance(body, dict) else {}
        code = "" if env.get("code") is None else str(env["code"])
        msg = env["msg"] if isinstance(env.get("msg"), str) else f"HTTP {status}"
        trace_id = env["traceId"] if isinstance(env.get("traceId"), str) else headers.get("x-trace-id")
        raw = env.get("detail")
        detail = raw if _is_signature_detail(raw) else None
        decline = raw if _is_decline_detail(raw) else None
        return error_class(status)(status, code, msg, trace_id, headers, detail, decline, body)


class BadRequestError(APIError):
    """400 or 413: ``1002`` a field broke a rule (``field`` names it), ``2720``, ``2723``, ``2744``. Not retried."""


class AuthenticationError(APIError):
    """401: ``1006`` signature, ``1007`` timestamp, ``2601`` unknown or disabled merchant. Not retried, but for
    the ``1007`` of a request signed before the service's read-nonce store last started empty (retried once,
    signed again with the current time)."""


class PermissionDeniedError(APIError):
    """403: ``2605`` the operation is not enabled for this merchant."""


class NotFoundError(APIError):
    """404: ``1004`` no such operation, ``2606`` cardholder, ``2613`` KYC request, ``2648`` card, ``2740`` dispute, ``2750`` 3-D Secure authentication."""


class ConflictError(APIError):
    """409: ``1008`` randomStr reused with another request, or a state conflict (``2607``, ``2724``, ``2725``, …)."""


class RateLimitError(APIError):
    """429: ``1009`` too many requests; retried after ``Retry-After``."""


class InternalServerError(APIError):
    """5xx: retried (a write with its randomStr, so it acts once)."""


class APIConnectionError(CardProgramError):
    """No answer: the connection failed or was cut. Retried (a write is replayed by its randomStr)."""


class APIConnectionTimeoutError(APIConnectionError):
    """No answer within the client's ``timeout``. Retried."""


class WebhookVerificationError(CardProgramError):
    """A callback whose signature or timestamp does not verify: do not trust its body."""


def error_class(status: int) -> Type[APIError]:
    """The family of an HTTP status."""
    if status in (400, 413):
        return BadRequestError
    if status == 401:
        return AuthenticationError
    if status == 403:
        return PermissionDeniedError
    if status == 404:
        return NotFoundError
    if status == 409:
        return ConflictError
    if status == 429:
        return RateLimitError
    if status >= 500:
        return InternalServerError
    return APIError


def _is_signature_detail(v: Any) -> bool:
    return (
        isinstance(v, dict)
        and isinstance(v.get("signingString"), str)
        and isinstance(v.get("signedFields"), list)
        and isinstance(v.get("unsignedFields"), list)
        and isinstance(v.get("signType"), str)
    )


def _is_decline_detail(v: Any) -> bool:
    return isinstance(v, dict) and isinstance(v.get("tradeId"), str) and isinstance(v.get("declineReason"), str)
