"""RSASSA-PKCS1-v1_5 with SHA-256 (RFC 8017 §8.2), in the standard library only.

Python's standard library has no RSA; its integers do the arithmetic. What makes this safe to use
on a server: each signature is blinded (RFC 8017 leaves it to implementations; OpenSSL does the
same), so the time ``pow`` takes does not follow the message an attacker may choose, and each signature is checked with
the public key before it is returned, so a fault in the computation cannot leak a factor of the key.
The key is read from an unencrypted PEM file: PKCS#8 (``BEGIN PRIVATE KEY``, what ``openssl
genpkey`` writes) or PKCS#1 (``BEGIN RSA PRIVATE KEY``).
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import secrets
from typing import List, Tuple

# DER of the DigestInfo prefix for SHA-256 (RFC 8017 §9.2, note 1).
_SHA256_PREFIX = bytes.fromhex("3031300d060960864801650304020105000420")
# 1.2.840.113549.1.1.1, rsaEncryption.
_RSA_OID = bytes.fromhex("2a864886f70d010101")
_PEM = re.compile(r"-----BEGIN ([A-Z ]+)-----(.*?)-----END \1-----", re.S)


class RsaPrivateKey:
    """An RSA private key read from PEM; ``sign_base64`` gives the service's ``sign`` for RSA-SHA256."""

    __slots__ = ("_n", "_e", "_d", "_p", "_q", "_dp", "_dq", "_qinv", "size")

    def __init__(self, pem: "str | bytes") -> None:
        text = pem.decode("ascii", "replace") if isinstance(pem, bytes) else pem
        match = _PEM.search(text)
        if match is None:
            raise ValueError("private_key: not a PEM key (-----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----)")
        label, body = match.group(1), match.group(2)
        if label == "ENCRYPTED PRIVATE KEY" or "Proc-Type:" in body:
            raise ValueError("private_key: the key is encrypted; decrypt it first (openssl pkey -in key.pem -out plain.pem)")
        try:
            der = base64.b64decode("".join(line for line in body.split() if ":" not in line), validate=True)
        except ValueError as err:
            raise ValueError("private_key: the PEM body is not Base64") from err
        if label == "PRIVATE KEY":
            der = _pkcs8_rsa(der)
        elif label != "RSA PRIVATE KEY":
            raise ValueError(f"private_key: a {label}, not an RSA private key")
        fields = _sequence(der)
        if len(fields) < 9 or fields[0] != 0:
            raise ValueError("private_key: not a two-prime RSA private key")
        self._n, self._e, self._d, self._p, self._q, self._dp, self._dq, self._qinv = fields[1:9]
        if self._p * self._q != self._n:
            raise ValueError("private_key: its primes do not make its modulus")
        self.size = (self._n.bit_length() + 7) // 8

    def __repr__(self) -> str:
        # Never the key itself.
        return f"<RsaPrivateKey {self._n.bit_length()} bits>"

    def sign_base64(self, message: bytes) -> str:
        encoded = _emsa_pkcs1_v1_5(hashlib.sha256(message).digest(), self.size)
        m = int.from_bytes(encoded, "big")
        n, e = self._n, self._e
        # Blinding: sign m·r^e instead of m, then divide by r.
        while True:
            r = secrets.randbelow(n - 2) + 2
            if math.gcd(r, n) == 1:
                break
        blinded = (m * pow(r, e, n)) % n
        s = (self._crt(blinded) * pow(r, -1, n)) % n
        if pow(s, e, n) != m:
            raise ArithmeticError("RSA signature failed its own check")
        return base64.b64encode(s.to_bytes(self.size, "big")).decode("ascii")

    def _crt(self, c: int) -> int:
        m1 = pow(c, self._dp, self._p)
        m2 = pow(c, self._dq, self._q)
        h = (self._qinv * (m1 - m2)) % self._p
        return m2 + h * self._q


def _emsa_pkcs1_v1_5(digest: bytes, size: int) -> bytes:
    t = _SHA256_PREFIX + digest
    if size < len(t) + 11:
        raise ValueError("private_key: too short for SHA-256")
    return b"\x00\x01" + b"\xff" * (size - len(t) - 3) + b"\x00" + t


def _pkcs8_rsa(der: bytes) -> bytes:
    # PrivateKeyInfo ::= SEQUENCE { version, AlgorithmIdentifier, OCTET STRING privateKey, … }
    tag, content, rest = _tlv(der)
    if tag != 0x30 or rest:
        raise ValueError("private_key: not a PKCS#8 key")
    tag, _version, content = _tlv(content)
    tag_alg, algorithm, content = _tlv(content)
    if tag_alg != 0x30:
        raise ValueError("private_key: not a PKCS#8 key")
    tag_oid, oid, _ = _tlv(algorithm)
    if tag_oid != 0x06 or oid != _RSA_OID:
        raise ValueError("private_key: not an RSA key")
    tag, key, _ = _tlv(content)
    if tag != 0x04:
        raise ValueError("private_key: not a PKCS#8 key")
    return key


def _sequence(der: bytes) -> List[int]:
    tag, content, rest = _tlv(der)
    if tag != 0x30 or rest:
        raise ValueError("private_key: not an RSA private key")
    out = []
    while content:
        tag, value, content = _tlv(content)
        if tag != 0x02:
            raise ValueError("private_key: not an RSA private key")
        out.append(int.from_bytes(value, "big", signed=True))
    return out


def _tlv(data: bytes) -> Tuple[int, bytes, bytes]:
    """One DER tag-length-value: (tag, value, what follows)."""
    if len(data) < 2:
        raise ValueError("private_key: truncated DER")
    tag, length, at = data[0], data[1], 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or len(data) < 2 + count:
            raise ValueError("private_key: bad DER length")
        length, at = int.from_bytes(data[2 : 2 + count], "big"), 2 + count
    if len(data) < at + length:
        raise ValueError("private_key: truncated DER")
    return tag, data[at : at + length], data[at + length :]
