"""The real service for the SDK's tests, as the Node SDK's tests have it: the built ``cardprogram
serve`` started as its own process on a free port, on a fresh database of its own.

- ``DATABASE_URL`` unset or ``file:…``: a new SQLite file in a temporary folder.
- ``DATABASE_URL=postgres://…``: a new schema in that database (``test/helpers/pg-schema.mjs``, as
  the Node tests isolate themselves), dropped afterwards.

One service serves every test of a run (started by the first that needs it); each test makes its own
cardholders and cards. ``npm test`` (scripts/test.mjs) runs this suite once per database.
``CARDPROGRAM_TEST_LOG_DIR`` (set by ``npm test``) gets the service's trace-level log and the
secrets the tests were handed, for the run's secrets audit (test/helpers/log-audit.ts).
"""

from __future__ import annotations

import atexit
import http.client
import http.server
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[3]
SDK = ROOT / "sdk" / "python"
if str(SDK) not in sys.path:
    sys.path.insert(0, str(SDK))

import cardprogram  # noqa: E402

NODE = os.environ.get("CARDPROGRAM_NODE") or shutil.which("node") or "node"
LOG_DIR = os.environ.get("CARDPROGRAM_TEST_LOG_DIR") or ""
READY = re.compile(r'"url":"(http://[^"]+)".*"msg":"cardprogram ready"')


def note_secret(kind: str, value: Any) -> None:
    """Tells the secrets audit a value no log may contain (test/helpers/log-audit.ts, noteSecret)."""
    if LOG_DIR and isinstance(value, str) and value:
        with open(os.path.join(LOG_DIR, f"secrets-py-{os.getpid()}.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps({"kind": kind, "value": value}) + "\n")


_built = False


def ensure_built() -> None:
    """The built service and Node SDK (dist/, client/dist/), rebuilt when a source is newer (milliseconds when current)."""
    global _built
    if not _built and os.environ.get("CARDPROGRAM_TEST_BUILT") != "1":
        res = subprocess.run([NODE, "scripts/build.mjs", "--if-stale"], cwd=ROOT, capture_output=True, text=True, timeout=600)
        if res.returncode != 0:
            raise RuntimeError(f"the build failed:\n{res.stdout}\n{res.stderr}")
    _built = True


def node_eval(script: str, stdin: str = "") -> str:
    """Runs an ES module script with Node in the repository (it may import ./client/dist/index.js); its output."""
    ensure_built()
    res = subprocess.run(
        [NODE, "--input-type=module", "-e", script], cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=120
    )
    if res.returncode != 0:
        raise RuntimeError(f"node failed:\n{res.stderr}")
    return res.stdout


class Service:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="cardprogram-py-")
        self.schema: Optional[str] = None
        url = os.environ.get("DATABASE_URL", "")
        if url.startswith("postgres"):
            self.admin_url = url
            self.schema = self._node("test/helpers/pg-schema.mjs", "create", url).strip()
            self.database_url = f"{url}?options={urllib.parse.quote(f'-c search_path={self.schema}')}"
        else:
            self.database_url = f"file:{os.path.join(self.dir, 'cardprogram.sqlite')}"
        self.dialect = "PostgreSQL" if self.schema else "SQLite"
        self.env = {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "CARDPROGRAM_DATA_DIR": os.path.join(self.dir, "data"),
        }
        self.output: List[str] = []
        self._log = open(os.path.join(LOG_DIR, f"service-py-{os.getpid()}.log"), "a", encoding="utf-8") if LOG_DIR else None
        self.process = self._start()
        self.demo: Dict[str, str] = json.loads(Path(self.env["CARDPROGRAM_DATA_DIR"], "demo-merchant.json").read_text())
        for kind, key in (("merchant-secret", "secret"), ("webhook-secret", "webhookSecret")):
            note_secret(kind, self.demo[key])

    def _node(self, *args: str) -> str:
        res = subprocess.run([NODE, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            raise RuntimeError(f"node {' '.join(args)} failed:\n{res.stdout}\n{res.stderr}")
        return res.stdout

    def _start(self) -> subprocess.Popen:
        ensure_built()
        env = {
            **self.env,
            "PORT": "0",
            "HOST": "127.0.0.1",
            "CARDPROGRAM_WORKER_POLL_MS": "50",
            # As in production: every request must sign a timestamp (the SDK does).
            "CARDPROGRAM_REQUIRE_TIMESTAMP": "on",
            # The tests are not about the per-merchant limit (the page link's own limit is tested).
            "CARDPROGRAM_RATE_LIMIT": "5000",
            "LOG_LEVEL": "trace" if LOG_DIR else "info",
        }
        env.pop("CARDPROGRAM_PUBLIC_URL", None)  # the address it listens on is the one the tests use
        process = subprocess.Popen(
            [NODE, "bin/cardprogram.js", "serve"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        found = threading.Event()

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                self.output.append(line)
                if self._log:
                    self._log.write(line)
                    self._log.flush()
                m = READY.search(line)
                if m and not found.is_set():
                    self.url = m.group(1)
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        self.started_at = time.time()
        if not found.wait(30):
            process.kill()
            raise RuntimeError("the service did not become ready:\n" + "".join(self.output[-50:]))
        return process

    def cli(self, *args: str) -> str:
        """``cardprogram <args>`` on this service's database; its standard output."""
        res = subprocess.run(
            [NODE, "bin/cardprogram.js", *args],
            cwd=ROOT,
            env={**self.env, "LOG_LEVEL": "trace" if LOG_DIR else "warn"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        if self._log:
            self._log.write(res.stderr)
        if res.returncode != 0:
            raise RuntimeError(f"cardprogram {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
        return res.stdout

    def new_merchant(self, *, login_free: bool = True, fund: int = 100_000, extra: tuple = ()) -> Dict[str, str]:
        """A merchant of its own (``merchant create``), funded in EUR."""
        args = ["merchant", "create", "--name", f"py-{secrets.token_hex(3)}", "--json", *extra]
        if login_free:
            args.append("--login-free")
        created = json.loads(self.cli(*args))
        for kind, key in (("merchant-secret", "secret"), ("webhook-secret", "webhookSecret")):
            note_secret(kind, created.get(key))
        if fund:
            self.cli("merchant", "fund", created["appId"], str(fund), "--currency", "EUR", "--reference", "tests")
        return created

    def client(self, merchant: Optional[Dict[str, str]] = None, **options: Any) -> cardprogram.Client:
        m = merchant or self.demo
        options.setdefault("webhook_secret", m.get("webhookSecret"))
        return cardprogram.Client(m["appId"], options.pop("secret", m.get("secret")), options.pop("base_url", self.url), **options)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        if self.schema:
            self._node("test/helpers/pg-schema.mjs", "drop", self.admin_url, self.schema)
        if self._log:
            self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


_service: Optional[Service] = None


def service() -> Service:
    """The run's service, started on first use and stopped when the run ends."""
    global _service
    if _service is None:
        _service = Service()
        atexit.register(_service.stop)
    return _service


def holder_fields(**overrides: Any) -> Dict[str, Any]:
    """A valid cardholder, with an ID number of its own (one per merchant)."""
    fields: Dict[str, Any] = dict(
        mobile="+4915112345678",
        first_name="Zoë",
        last_name="Müller-Lüdenscheidt",
        email="zoe@example.com",
        date_of_birth="1990-04-12",
        nationality="DE",
        sex=2,
        country_code="DE",
        town="Düsseldorf",
        address="Königsallee 1",
        post_code="40212",
        idno_type=2,
        idno=f"C{secrets.token_hex(5).upper()}",
    )
    fields.update(overrides)
    return fields


def funded_card(client: cardprogram.Client, amount: float = 100) -> Dict[str, Any]:
    """An approved cardholder with an EUR card topped up with ``amount``, through the SDK."""
    holder = client.holders.create(**holder_fields())
    client.sandbox.review_holder(holder_id=holder["holderId"], audit_status=2)
    card = client.cards.apply(holder_id=holder["holderId"], currency="EUR")
    if amount:
        client.cards.top_up(card_id=card["cardId"], amount=amount)
    return {"holder": holder, "card": card}


def eventually(check: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def _serve(handler: type) -> _Server:
    server = _Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Receiver:
    """A merchant's callback receiver on loopback: keeps every request as it came (raw body, headers)."""

    def __init__(self) -> None:
        self.received: List[Dict[str, Any]] = []
        self.answer: Callable[[Dict[str, Any]], "tuple[int, bytes]"] = lambda r: (200, b"ok")
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                request = {"path": self.path, "headers": self.headers, "raw": raw, "body": json.loads(raw or b"null")}
                receiver.received.append(request)
                status, body = receiver.answer(request)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = _serve(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class FlakyProxy:
    """A proxy in front of the service that misbehaves on purpose: each request is handled by the next
    scripted behaviour, then requests pass through untouched.

    - ``lose_answer``: forwards the request (the service acts), then cuts the connection: no answer;
    - ``answer_503``: answers 503 with ``Retry-After: 1`` without forwarding;
    - ``forward_then_502``: forwards, then answers 502 with an HTML page;
    - ``hang``: never answers (until the client gives up).
    """

    def __init__(self, target: str) -> None:
        self.script: List[str] = []
        self.seen: List[Dict[str, Any]] = []
        url = urllib.parse.urlsplit(target)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                behaviour = proxy.script.pop(0) if proxy.script else "pass"
                proxy.seen.append({"behaviour": behaviour, "body": json.loads(raw)})
                if behaviour == "hang":
                    time.sleep(3)
                    self.close_connection = True
                    return
                if behaviour == "answer_503":
                    self._answer(503, b'{"code":"1","msg":"Service temporarily unavailable","model":null,"error":true,"success":false}', {"retry-after": "1"})
                    return
                conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
                conn.request("POST", self.path, body=raw, headers={"content-type": "application/json"})
                res = conn.getresponse()
                status, body = res.status, res.read()
                conn.close()
                if behaviour == "lose_answer":
                    # The service acted; its answer never reaches the client.
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if behaviour == "forward_then_502":
                    self._answer(502, b"<h1>Bad gateway</h1>", {"content-type": "text/html"})
                    return
                self._answer(status, body, {})

            def _answer(self, status: int, body: bytes, headers: Dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("content-type", headers.pop("content-type", "application/json"))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = _serve(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
