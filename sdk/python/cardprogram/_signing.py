"""The signing string of docs/signing.md, the same as the service's and the Node SDK's.

Top-level fields except ``sign``, without ``None`` or ``""`` values, keys sorted by UTF-16 code
unit, ``key=value`` joined by ``&``; strings as sent (Base64 fields as Base64), numbers and
booleans as JSON text, objects and arrays as canonical JSON (RFC 8785); in each value's text ``%``
is written ``%25`` and ``&`` ``%26`` (so a value cannot pass for two fields).
"""

from __future__ import annotations

import datetime
import decimal
import enum
import hashlib
import hmac
import math
import re
from typing import Any, Mapping, Union

from ._rsa import RsaPrivateKey

FIELD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}\Z")

# The largest integer a JSON number keeps exactly once the service has parsed it (a double).
_MAX_SAFE_INTEGER = 2**53 - 1

Credentials = Union[str, RsaPrivateKey]
"""An HMAC secret (``sk_…``), or an RSA private key (RSA-SHA256 merchants)."""


def signing_string(body: Mapping[str, Any]) -> str:
    """The string ``sign`` is computed over.

    >>> signing_string({"appId": "mch_0123456789abcdef", "remark": "rent&bills"})
    'appId=mch_0123456789abcdef&remark=rent%26bills'
    """
    parts = []
    for key in sorted(body, key=_code_units):
        if key == "sign":
            continue
        if not isinstance(key, str) or not FIELD_NAME.match(key):
            raise ValueError(f"cannot sign the field {str(key)[:64]!r}: not a field name")
        value = body[key]
        if value is None or (isinstance(value, str) and value == ""):
            continue
        text = value if isinstance(value, str) else canonical_json(value)
        parts.append(f"{key}={text.replace('%', '%25').replace('&', '%26')}")
    return "&".join(parts)


def canonical_json(value: Any) -> str:
    """RFC 8785 canonical JSON of a JSON value: as the service writes it (JavaScript's number form)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        if abs(value) > _MAX_SAFE_INTEGER:
            # The service reads it as a double and signs that double's text.
            return _number(float(value))
        return str(int(value))
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    if isinstance(value, Mapping):
        for k in value:
            if not isinstance(k, str):
                raise TypeError(f"cannot sign an object key of type {type(k).__name__}")
        keys = sorted(value, key=_code_units)
        return "{" + ",".join(f"{_string(k)}:{canonical_json(value[k])}" for k in keys) + "}"
    raise TypeError(f"cannot sign a {type(value).__name__}")


def to_json_value(value: Any) -> Any:
    """What the SDK sends for a value: plain JSON types, so that what is signed is what is sent.

    ``Decimal`` becomes a number, a ``date`` its ``YYYY-MM-DD``, a tuple a list; ``None`` values stay
    (``null`` is sent, and not signed at the top level).
    """
    if isinstance(value, enum.Enum):
        return to_json_value(value.value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("cannot send a non-finite number")
        return value
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError("cannot send a non-finite number")
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, datetime.datetime):
        raise TypeError("give a date (datetime.date or 'YYYY-MM-DD'), not a datetime")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, Mapping):
        return {k: to_json_value(v) for k, v in value.items()}
    raise TypeError(f"cannot send a {type(value).__name__}")


def signature(credentials: Credentials, data: str) -> str:
    """``sign`` for a signing string: lowercase hex HMAC-SHA256, or Base64 RSASSA-PKCS1-v1_5 SHA-256."""
    if isinstance(credentials, RsaPrivateKey):
        return credentials.sign_base64(data.encode("utf-8"))
    return hmac.new(credentials.encode("utf-8"), data.encode("utf-8"), hashlib.sha256).hexdigest()


def _code_units(text: str) -> bytes:
    # Big-endian UTF-16 bytes compare exactly as the code units do (RFC 8785's order); a lone
    # surrogate is kept as its own code unit.
    return text.encode("utf-16-be", "surrogatepass")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _string(text: str) -> str:
    # JSON.stringify's output: the two JSON escapes, short forms for five controls, \u00XX for the
    # other controls and for lone surrogates, every other character as itself.
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _number(value: float) -> str:
    """ECMAScript's Number::toString (RFC 8785 §3.2.2.3): the shortest digits that read back, as JS places them."""
    if not math.isfinite(value):
        raise ValueError("cannot sign a non-finite number")
    if value == 0:
        return "0"  # -0 too
    sign = "-" if value < 0 else ""
    # repr gives the shortest digits that read back, as ECMAScript requires; only the layout differs.
    parsed = decimal.Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, parsed.digits)).lstrip("0")
    exponent = int(parsed.exponent)
    while len(digits) > 1 and digits.endswith("0"):
        digits, exponent = digits[:-1], exponent + 1
    # value = 0.DIGITS × 10^n
    n = exponent + len(digits)
    k = len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        text = (digits if k == 1 else digits[0] + "." + digits[1:]) + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + text
