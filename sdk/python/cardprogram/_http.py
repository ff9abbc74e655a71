"""One POST with a deadline, over kept-alive connections (``http.client``, standard library only)."""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import time
import urllib.parse
from typing import Dict, List, Optional, Tuple

from .errors import APIConnectionError, APIConnectionTimeoutError

# A connection idle longer than this is not reused: a server or proxy in between may have dropped
# it without a word (Node's own keep-alive timeout is 5 s, Fastify's 72 s, many proxies' 60 s).
_MAX_IDLE_S = 20.0
_MAX_IDLE_CONNECTIONS = 8


class Answer:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: Dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


class Transport:
    """POSTs to one service; thread-safe (each request takes a connection of its own from the pool)."""

    def __init__(self, base_url: str, timeout: float, ssl_context: Optional[ssl.SSLContext] = None) -> None:
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base_url must be an http:// or https:// address, not {base_url!r}")
        if url.query or url.fragment:
            raise ValueError("base_url must not have a query or a fragment")
        self.base_url = base_url.rstrip("/")
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port or (443 if self._https else 80)
        self._prefix = url.path.rstrip("/")
        self._timeout = timeout
        self._ssl = ssl_context if ssl_context is not None else (ssl.create_default_context() if self._https else None)
        self._idle: List[Tuple[http.client.HTTPConnection, float]] = []
        self._lock = threading.Lock()

    def post(self, path: str, body: bytes, headers: Dict[str, str]) -> Answer:
        """Sends one request and reads its whole answer, all within the timeout."""
        deadline = time.monotonic() + self._timeout

        def left() -> float:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise socket.timeout("deadline")
            return remaining

        conn = self._take()
        try:
            if conn.sock is None:
                conn.timeout = left()
                conn.connect()
            # Kept: http.client lets go of conn.sock when the answer closes the connection.
            sock = conn.sock
            if sock is None:
                raise OSError("not connected")
            sock.settimeout(left())
            try:
                conn.request("POST", self._prefix + path, body=body, headers=headers)
            except OSError as unsent:
                # The service may have answered (a 413) and closed before taking the whole body:
                # its answer, if it arrived, says more than the broken pipe.
                try:
                    sock.settimeout(min(left(), 1.0))
                    response = conn.getresponse()
                except (OSError, http.client.HTTPException):
                    raise unsent from None
            else:
                sock.settimeout(left())
                response = conn.getresponse()
            chunks = []
            while True:
                sock.settimeout(left())
                chunk = response.read1(65536)
                if not chunk:
                    break
                chunks.append(chunk)
            # Read to its end and closed, the answer leaves the connection ready for the next request.
            response.close()
            answer = Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, b"".join(chunks))
        except socket.timeout as err:
            conn.close()
            raise APIConnectionTimeoutError(f"no answer from {path} within {self._timeout:g} s") from err
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            raise APIConnectionError(f"cannot reach {self.base_url}{path}: {_describe(err)}") from err
        except BaseException:
            conn.close()
            raise
        if response.will_close:
            conn.close()
        else:
            self._give_back(conn)
        return answer

    def __del__(self) -> None:
        # A client dropped without close(): its idle connections go with it, quietly.
        try:
            self.close()
        except Exception:  # noqa: BLE001 - the interpreter may be shutting down
            pass

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()

    def _take(self) -> http.client.HTTPConnection:
        now = time.monotonic()
        while True:
            with self._lock:
                if not self._idle:
                    break
                conn, since = self._idle.pop()
            if now - since < _MAX_IDLE_S and _still_open(conn):
                return conn
            conn.close()
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port)

    def _give_back(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < _MAX_IDLE_CONNECTIONS:
                self._idle.append((conn, time.monotonic()))
                return
        conn.close()


def _still_open(conn: http.client.HTTPConnection) -> bool:
    """An idle connection the server has closed reads as ready (its end of file): not reusable."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def _describe(err: BaseException) -> str:
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
