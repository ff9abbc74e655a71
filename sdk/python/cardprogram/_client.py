"""The client: signs every request, retries what may be retried without acting twice, raises typed errors."""

from __future__ import annotations

import email.utils
import json
import os
import platform
import random
import secrets
import ssl
import time
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional, Union

from ._http import Answer, Transport
from ._operations import Requester
from ._rsa import RsaPrivateKey
from ._signing import Credentials, signature, signing_string, to_json_value
from ._version import __version__
from .errors import APIConnectionError, APIError, AuthenticationError, CardProgramError
from .resources.cards import Cards
from .resources.disputes import Disputes
from .resources.funding import AuthorizationEndpointSettings, Funding
from .resources.holders import Holders
from .resources.kyc import Kyc
from .resources.page import Page
from .resources.sandbox import Sandbox
from .resources.three_ds import ThreeDs
from .resources.tokens import Tokens
from .resources.trades import Trades
from .webhooks import Webhooks

_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S = 60.0
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

#: How the service's ``1007`` begins when the request was signed before its store of spent read
#: ``randomStr`` values last started empty (a restart, or its database's crash recovery): signed
#: again with the current time, the request is served (docs/idempotency.md).
WATERMARK_REFUSAL = "timestamp is before the replay store's watermark"


class RetryInfo(NamedTuple):
    """What ``on_retry`` is told before each retry."""

    path: str
    #: 1 for the first retry; 0 for the one re-signing of a request refused as signed before the
    #: service's replay store started (a watermark ``1007``), which is not counted.
    attempt: int
    #: seconds it waits before the retry.
    delay: float
    error: CardProgramError


def new_random_str() -> str:
    """32 letters and digits: a ``randomStr``."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(32))


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# The wait before a retry (a module attribute: the tests replace it to run without waiting).
_sleep = time.sleep


class Client(Requester):
    """The cardprogram merchant API.

    >>> client = Client("mch_…", "sk_test_…", "http://127.0.0.1:8080")   # doctest: +SKIP
    >>> holder = client.holders.create(first_name="Alice", …)              # doctest: +SKIP

    Args:
        app_id: the merchant's ``appId``.
        secret: its HMAC-SHA256 secret (``sk_…``). Give this or ``private_key``.
        base_url: the service's address, e.g. ``http://127.0.0.1:8080``.
        private_key: an RSA-SHA256 merchant's private key, PEM (text, bytes, or a path to the file).
        webhook_secret: the ``whsec_…`` secret ``client.webhooks.verify`` checks callbacks with.
        max_retries: retries after a failure that may be temporary (connection, timeout, 408, 429, 5xx). Default 2.
        timeout: seconds per attempt, from connecting to the answer's last byte. Default 30.
        sign_timestamp: sign a ``timestamp`` into every request (production refuses a request without one). Default True.
        on_retry: called with a :class:`RetryInfo` before each retry, for logs and metrics.
        ssl_context: for an ``https`` service with its own certificate authority.
    """

    def __init__(
        self,
        app_id: str,
        secret: Optional[str] = None,
        base_url: Optional[str] = None,
        *,
        private_key: Union[str, bytes, "os.PathLike[str]", RsaPrivateKey, None] = None,
        webhook_secret: Optional[str] = None,
        max_retries: int = 2,
        timeout: float = 30.0,
        sign_timestamp: bool = True,
        on_retry: Optional[Callable[[RetryInfo], None]] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        if not app_id:
            raise CardProgramError("app_id is required")
        if not base_url:
            raise CardProgramError("base_url is required")
        if (secret is None) == (private_key is None):
            raise CardProgramError("give exactly one of secret (HMAC-SHA256) and private_key (RSA-SHA256)")
        if max_retries < 0 or timeout <= 0:
            raise CardProgramError("max_retries must be 0 or more and timeout more than 0")
        self.app_id = app_id
        self._credentials: Credentials = secret if secret is not None else _rsa_key(private_key)
        self.max_retries = max_retries
        self.timeout = timeout
        self.sign_timestamp = sign_timestamp
        self.on_retry = on_retry
        self._transport = Transport(base_url, timeout, ssl_context)
        self._user_agent = f"cardprogram-python/{__version__} (Python {platform.python_version()})"
        self.holders = Holders(self)
        self.cards = Cards(self)
        self.funding = Funding(self)
        self.authorization_endpoint = AuthorizationEndpointSettings(self)
        self.trades = Trades(self)
        self.disputes = Disputes(self)
        self.three_ds = ThreeDs(self)
        self.tokens = Tokens(self)
        self.kyc = Kyc(self)
        self.page = Page(self)
        self.sandbox = Sandbox(self)
        self.webhooks = Webhooks(webhook_secret)

    @classmethod
    def from_file(cls, path: Union[str, "os.PathLike[str]"], **options: Any) -> "Client":
        """A client from a credentials file as the service writes it (``data/demo-merchant.json``:
        ``appId``, ``secret``, ``webhookSecret``, ``baseUrl``); ``options`` as the constructor's."""
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return cls(
            data["appId"],
            data.get("secret"),
            options.pop("base_url", data.get("baseUrl")),
            webhook_secret=options.pop("webhook_secret", data.get("webhookSecret")),
            **options,
        )

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    def close(self) -> None:
        """Closes the kept-alive connections (a later request opens a new one)."""
        self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, path: str, body: Mapping[str, Any], kind: str) -> Any:
        """Signs and sends any operation; returns the envelope's ``model``, or the bare body of the
        operations without an envelope (4.1, 4.2). Raises an :class:`APIError` subclass on an error.

        ``kind`` is how it may be retried: ``"write"`` keeps one ``randomStr`` for every attempt (given
        in ``body``, or made here), ``"read"`` makes a new one per attempt, ``"keyed"`` carries its own key.

        >>> client.request("/api/network/cardQuery.html", {"cardId": card_id}, "read")  # doctest: +SKIP
        """
        if kind not in ("write", "read", "keyed"):
            raise ValueError(f"kind must be write, read or keyed, not {kind!r}")
        base: Dict[str, Any] = dict(body)
        # One randomStr per intended write, kept for every retry of it: the service replays instead of acting twice.
        if kind == "write" and base.get("randomStr") is None:
            base["randomStr"] = new_random_str()
        attempt = 0
        fresh_timestamp_tried = False
        while True:
            payload = {**base, "randomStr": new_random_str()} if kind == "read" else base
            try:
                return self._attempt(path, payload)
            except CardProgramError as error:
                if _before_watermark(error) and not fresh_timestamp_tried and self.sign_timestamp:
                    # Signed again now, it is served: once, at once, and not counted as a retry.
                    fresh_timestamp_tried = True
                    self._tell(path, 0, 0.0, error)
                    continue
                if attempt >= self.max_retries or not _retryable(error):
                    raise
                delay = retry_delay(error, attempt)
                attempt += 1
                self._tell(path, attempt, delay, error)
                _sleep(delay)

    def _tell(self, path: str, attempt: int, delay: float, error: CardProgramError) -> None:
        if self.on_retry is not None:
            self.on_retry(RetryInfo(path, attempt, delay, error))

    def _attempt(self, path: str, body: Mapping[str, Any]) -> Any:
        payload: Dict[str, Any] = to_json_value({**body, "appId": self.app_id})
        if self.sign_timestamp:
            payload["timestamp"] = _now_ms()
        payload["sign"] = signature(self._credentials, signing_string(payload))
        data = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode("utf-8")
        headers = {"content-type": "application/json", "accept": "application/json", "user-agent": self._user_agent}
        answer = self._transport.post(path, data, headers)
        return _unwrap(answer)


def _unwrap(answer: Answer) -> Any:
    try:
        parsed = json.loads(answer.body) if answer.body else None
    except ValueError:
        parsed = None
    envelope = parsed if isinstance(parsed, dict) and "success" in parsed and "code" in parsed else None
    if 200 <= answer.status < 300 and (envelope is None or envelope.get("success") is True):
        if parsed is None:
            raise APIError.from_response(answer.status, {"msg": "the answer was not JSON"}, answer.headers)
        return envelope["model"] if envelope is not None else parsed
    raise APIError.from_response(answer.status, parsed, answer.headers)


def _before_watermark(error: CardProgramError) -> bool:
    return isinstance(error, AuthenticationError) and error.code == "1007" and error.msg.startswith(WATERMARK_REFUSAL)


def _retryable(error: CardProgramError) -> bool:
    # A write is retried only because it carries its randomStr (or its requestNo): a retry can then
    # only replay what the first attempt did. Client errors (4xx but 408 and 429) are never retried.
    if isinstance(error, APIConnectionError):
        return True
    return isinstance(error, APIError) and error.status in _RETRYABLE_STATUS


def retry_delay(error: CardProgramError, attempt: int) -> float:
    """Seconds before a retry: the service's ``Retry-After`` when usable, else capped exponential backoff with jitter."""
    if isinstance(error, APIError):
        header = error.headers.get("retry-after")
        if header is not None:
            seconds: Optional[float]
            try:
                seconds = float(header)
            except ValueError:
                try:
                    seconds = email.utils.parsedate_to_datetime(header).timestamp() - time.time()
                except (TypeError, ValueError):
                    seconds = None
            if seconds is not None and 0 <= seconds <= _MAX_RETRY_AFTER_S:
                return seconds
    ceiling = min(8.0, 0.5 * 2**attempt)
    # Jitter spreads the retries of many clients that failed together.
    return ceiling * (1 - random.random() * 0.25)


def _rsa_key(key: Union[str, bytes, "os.PathLike[str]", RsaPrivateKey, None]) -> RsaPrivateKey:
    if isinstance(key, RsaPrivateKey):
        return key
    if isinstance(key, bytes) and b"-----BEGIN" in key:
        return RsaPrivateKey(key)
    if isinstance(key, str) and "-----BEGIN" in key:
        return RsaPrivateKey(key)
    if key is None:
        raise CardProgramError("private_key is required")
    with open(os.fspath(key), "rb") as f:  # a path to the PEM file
        return RsaPrivateKey(f.read())
