"""Callback verification: Standard Webhooks (https://www.standardwebhooks.com/), standard library only."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any, Iterable, Mapping, Optional, Tuple, Union, cast

from ._wire import AuthorizationRequest
from .errors import CardProgramError, WebhookVerificationError
from .events import CallbackEvent

#: How far a callback's ``webhook-timestamp`` may be from your clock, in seconds (either way).
TOLERANCE_S = 5 * 60

Headers = Union[Mapping[str, Any], Iterable[Tuple[str, str]]]
"""A callback's headers: a dict (any case), ``http.server``'s ``self.headers``, Flask's or Django's ``request.headers``."""

RawBody = Union[bytes, bytearray, memoryview, str]


class Webhooks:
    """``client.webhooks``: checks that a callback came from the service, untouched and recent."""

    def __init__(self, secret: Optional[str] = None) -> None:
        self._secret = secret

    def verify(self, raw_body: RawBody, headers: Headers, secret: Optional[str] = None, *, tolerance: int = TOLERANCE_S) -> CallbackEvent:
        """Verifies a callback (its signature over id, timestamp and the raw body; its timestamp within
        ``tolerance`` seconds) and returns its event. Verify the raw body, before any JSON parsing.
        Delivery is at least once: drop an ``eventId`` you have already handled.

        Raises :class:`WebhookVerificationError` when it does not verify.

        >>> event = client.webhooks.verify(request.get_data(), request.headers)  # Flask  # doctest: +SKIP
        >>> if event["type"] == "trade": record(event["tradeId"], event["amount"])  # doctest: +SKIP
        """
        return cast(CallbackEvent, _verified(raw_body, headers, secret or self._secret, tolerance, "webhooks.verify"))

    def authorization_request(
        self, raw_body: RawBody, headers: Headers, secret: Optional[str] = None, *, tolerance: int = TOLERANCE_S
    ) -> AuthorizationRequest:
        """Verifies a request your authorization endpoint received (signed as callbacks are) and returns
        it: the authorization under the id it will have, its card, cardholder and acceptor, before any
        decision. Answer within your deadline with :meth:`Webhooks.decide` as a 200 JSON body.
        """
        event = _verified(raw_body, headers, secret or self._secret, tolerance, "webhooks.authorization_request")
        if event.get("type") != "authorization.request":
            raise WebhookVerificationError(f"not an authorization.request but {event.get('type')}")
        return cast(AuthorizationRequest, event)

    @staticmethod
    def decide(approved: bool, reason: Optional[str] = None) -> str:
        """The answer to an ``authorization.request``: ``{"approved": …, "reason": …}`` as JSON text (a
        reason is kept at most 200 characters; it is kept with the decline, shown to the merchant)."""
        answer: dict = {"approved": bool(approved)}
        if reason is not None:
            answer["reason"] = reason[:200]
        return json.dumps(answer, separators=(",", ":"))


def _header(headers: Headers, name: str) -> Optional[str]:
    items = headers.items() if hasattr(headers, "items") else headers
    for key, value in cast(Iterable[Tuple[str, Any]], items):
        if key.lower() == name:
            if isinstance(value, (list, tuple)):
                value = value[0] if value else None
            return None if value is None else str(value)
    return None


def _verified(raw_body: RawBody, headers: Headers, secret: Optional[str], tolerance: int, what: str) -> dict:
    if not secret:
        raise CardProgramError(f"{what} needs the webhook secret (whsec_…): Client(webhook_secret=…) or as an argument")
    try:
        key = base64.b64decode(secret[len("whsec_") :] if secret.startswith("whsec_") else secret, validate=True)
    except (binascii.Error, ValueError) as err:
        raise CardProgramError("the webhook secret is not whsec_ followed by Base64") from err
    msg_id = _header(headers, "webhook-id")
    stamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not msg_id or not stamp or not signatures:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        sent_at = int(stamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not a number") from None
    now = int(time.time())
    if sent_at < now - tolerance:
        raise WebhookVerificationError("the message's timestamp is too old")
    if sent_at > now + tolerance:
        raise WebhookVerificationError("the message's timestamp is too new")
    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else bytes(raw_body)
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest())
    # The header may carry several signatures (a secret being rotated): any v1 one that matches.
    for candidate in signatures.split(" "):
        version, _, value = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(value.encode(), expected):
            break
    else:
        raise WebhookVerificationError("no matching signature found")
    try:
        event = json.loads(body)
    except ValueError:
        raise WebhookVerificationError("the body is not JSON") from None
    if not isinstance(event, dict):
        raise WebhookVerificationError("the body is not a JSON object")
    return event
