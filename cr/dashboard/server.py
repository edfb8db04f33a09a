"""cr dashboard serve: the dashboard over HTTP, and an authenticated upload endpoint for results.

    from cr.dashboard.server import make_server
    server = make_server("127.0.0.1", 8000, site="site/", results="results/", token_file="token")
    server.serve_forever()

Built on the standard library's http.server (ThreadingHTTPServer): no web framework is
a dependency of reefkit, and this server needs little (static files, four JSON routes),
so it adds none. http.server only does what is written here; on a public network put it
behind a reverse proxy that terminates TLS (the token travels in a header).

Routes (every response carries SECURITY_HEADERS):

    GET|HEAD /...                   the built site (static files; hidden files, '..', and
                                    links leading outside the site are refused)
    GET      /api/info              {"max_bytes", "uploads", "results", "builds", "pending"}
    GET      /api/uids[?since=ISO]  {"uids": [...]}: what the server has (clients skip these)
    GET|HEAD /api/results/<uid>     the stored record (200) or 404
    POST     /api/results           one record or a JSON list of them, Authorization: Bearer
                                    <token>; answers {"stored": [uids], "duplicates": [uids]}

A POST is checked in this order: token (401; 403 when the server has none), content type
(415), size from Content-Length or while reading a chunked body (413; 411 without
either), JSON (400 naming line and column), every record against the Result schema (422
naming the record and the field; nothing is stored then). A record whose uid the store
already holds is a duplicate and is left as it was: results are immutable. After stored
records the site is rebuilt in the background (incrementally, debounced).

The token is read once from the token file, compared with hmac.compare_digest, and never
logged or echoed: log lines hold the request line only.
"""
from __future__ import annotations

import hmac
import json
import os
import socket
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from ..errors import CRError

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEBOUNCE_S = 0.3  # uploads arriving within this of each other share one rebuild
DRAIN_CAP = 8 * 1024 * 1024  # body bytes read and dropped after refusing it, so the client sees the answer
READ_TIMEOUT_S = 30  # a client that stops sending is dropped
TYPES = {
    ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
    ".json": "application/json", ".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg",
    ".ico": "image/x-icon", ".txt": "text/plain; charset=utf-8", ".md": "text/plain; charset=utf-8",
    ".woff2": "font/woff2", ".map": "application/json",
}


class Refused(Exception):
    """An HTTP error answer: status, message, and extra JSON fields."""

    def __init__(self, status: int, message: str, **extra):
        super().__init__(message)
        self.status, self.message, self.extra = status, message, extra


def read_token(path) -> bytes:
    """The token in path (surrounding blanks stripped); CRError when unreadable or empty."""
    path = Path(path).expanduser()
    try:
        token = path.read_bytes().strip()
        mode = path.stat().st_mode
    except OSError as exc:
        raise CRError(f"cannot read the token file {path} ({exc.strerror or exc})",
                      hint="create it with: python -c 'import secrets; print(secrets.token_urlsafe(32))' > FILE") from None
    if not token:
        raise CRError(f"the token file {path} is empty", hint="write a long random token into it")
    if b"\n" in token or b"\r" in token:
        raise CRError(f"the token file {path} holds more than one line", hint="the token is one line of text")
    if mode & 0o077:
        from ..events import reporter

        reporter().warning(f"the token file {path} can be read by other users (chmod 600 {path})")
    return token


class Rebuilder:
    """Rebuilds the site after uploads in one background thread, one build at a time;
    requests arriving while it waits or builds are folded into the next build."""

    def __init__(self, results: Path, site: Path, debounce_s: float = DEBOUNCE_S, log=None):
        self.results, self.site, self.debounce_s = results, site, debounce_s
        self.builds = 0
        self._log = log or (lambda message: None)
        self._wake = threading.Event()
        self._busy = threading.Lock()
        self._pending = False
        self._thread = threading.Thread(target=self._loop, name="cr-dashboard-rebuild", daemon=True)

    def build_now(self) -> None:
        from .build import build

        with self._busy:
            info = build(self.results, self.site)
            self.builds += 1
            self._log(f"site rebuilt: {info.results} results, {info.processed} files read in {info.seconds:.2f} s")

    def start(self) -> None:
        self._thread.start()

    def request(self) -> None:
        self._pending = True
        self._wake.set()

    @property
    def pending(self) -> bool:
        return self._pending

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            time.sleep(self.debounce_s)
            self._wake.clear()
            self._pending = False
            try:
                self.build_now()
            except Exception as exc:  # a bad build must not end the server: say so and keep serving the last site
                self._log(f"site rebuild failed: {exc}")


class DashboardServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, site: Path, results: Path, token: bytes | None, max_bytes: int, quiet: bool = False):
        self.site = site
        self.site_real = os.path.realpath(site)
        self.results = results
        self.token = token
        self.max_bytes = max_bytes
        self.quiet = quiet
        self.store_lock = threading.Lock()  # duplicate check + add, one upload at a time
        self.rebuilder = Rebuilder(results, site, log=self.log)
        super().__init__(address, Handler)

    def log(self, message: str) -> None:
        if not self.quiet:
            sys.stderr.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}\n")
            sys.stderr.flush()


def make_server(host: str = "127.0.0.1", port: int = 8000, *, site, results, token_file=None,
                max_bytes: int = DEFAULT_MAX_BYTES, quiet: bool = False) -> DashboardServer:
    """A server bound to host:port (port 0: any free one, see server.server_address), with
    the site built from the results store first. Call serve_forever() on it."""
    from ..results.store import ResultStore

    token = read_token(token_file) if token_file else None
    site, results = Path(site).expanduser().absolute(), Path(results).expanduser().absolute()
    if max_bytes < 1024:
        raise CRError(f"--max-bytes {max_bytes} is too small", hint="allow at least 1024 bytes per upload")
    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CRError(f"cannot create the results store {results} ({exc.strerror or exc})",
                      hint="choose a writable --results directory") from None
    with ResultStore(results) as store:
        store.count()  # brings its index up to date (and warns about invalid files once)
    try:
        server = DashboardServer((host, port), site, results, token, max_bytes, quiet)
    except OSError as exc:
        raise CRError(f"cannot listen on {host}:{port} ({exc.strerror or exc})",
                      hint="choose another --port, or stop what is using it") from None
    server.rebuilder.build_now()
    server.rebuilder.start()
    return server


class Handler(BaseHTTPRequestHandler):
    server: DashboardServer
    server_version = "reefkit"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    timeout = READ_TIMEOUT_S
    error_content_type = "application/json"

    def version_string(self) -> str:
        return self.server_version  # no Python version in the Server header

    # -- answers ---------------------------------------------------------------------------
    def end_headers(self) -> None:
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        super().end_headers()

    def send_error(self, code, message=None, explain=None) -> None:
        """http.server's own errors (bad request line, unknown method) as JSON too."""
        self.close_connection = True
        self._json(code, {"error": message or HTTPStatus(code).phrase})

    def _json(self, status: int, data: dict, head: bool = False, headers: dict | None = None) -> None:
        body = json.dumps(data, ensure_ascii=False).encode("utf-8") + b"\n"
        self._send(status, body, "application/json", head, headers)

    def _send(self, status: int, body: bytes, ctype: str, head: bool = False, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def log_message(self, format, *args) -> None:  # noqa: A002 (http.server's name)
        # The request line and status only: headers (the token) are never logged.
        self.server.log(f"{self.address_string()} {format % args}")

    # -- routes ----------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._get(head=False)

    def do_HEAD(self) -> None:
        self._get(head=True)

    def do_POST(self) -> None:
        self._body_done = False
        try:
            if urlsplit(self.path).path != "/api/results":
                raise Refused(404 if not urlsplit(self.path).path.startswith("/api/") else 405,
                              "uploads go to POST /api/results")
            self._json(200, self._upload())
        except Refused as exc:
            if not self._body_done:
                self.close_connection = True
            headers = {"WWW-Authenticate": 'Bearer realm="cr"'} if exc.status == 401 else None
            self._json(exc.status, {"error": exc.message, **exc.extra}, headers=headers)
        finally:
            if not self._body_done:
                self._drain()

    def do_PUT(self) -> None:
        self.close_connection = True
        self._json(405, {"error": "method not allowed"})

    do_DELETE = do_PATCH = do_PUT

    def _get(self, head: bool) -> None:
        url = urlsplit(self.path)
        try:
            if url.path == "/api/info":
                self._json(200, self._info(), head)
            elif url.path == "/api/uids":
                self._json(200, {"uids": self._uids(parse_qs(url.query).get("since", [None])[0])}, head)
            elif url.path.startswith("/api/results/"):
                self._record(url.path[len("/api/results/"):], head)
            elif url.path.startswith("/api/"):
                raise Refused(404, f"no such API route {url.path}")
            else:
                self._static(url.path, head)
        except Refused as exc:
            self._json(exc.status, {"error": exc.message, **exc.extra}, head)

    def _info(self) -> dict:
        from ..results.store import ResultStore

        with ResultStore(self.server.results) as store:
            count = store.count()
        rb = self.server.rebuilder
        return {"max_bytes": self.server.max_bytes, "uploads": self.server.token is not None, "results": count,
                "builds": rb.builds, "pending": rb.pending}

    def _uids(self, since: str | None) -> list[str]:
        from ..results.store import ResultStore

        with ResultStore(self.server.results) as store:
            try:
                return sorted(s["uid"] for s in store.list(since=since))
            except CRError as exc:
                raise Refused(400, exc.message) from None

    def _record(self, uid: str, head: bool) -> None:
        from ..results.files import UID, record_file

        if not UID.match(uid):
            raise Refused(404, "a result uid is 16 lowercase hex digits")
        path = self.server.results / record_file(uid)
        try:
            body = path.read_bytes()
        except FileNotFoundError:
            raise Refused(404, f"no result {uid}") from None
        self._send(200, body, "application/json", head)

    def _static(self, raw_path: str, head: bool) -> None:
        if raw_path == "/favicon.ico" and not os.path.isfile(os.path.join(self.server.site_real, "favicon.ico")):
            self._send(204, b"", "image/x-icon", head=True)  # browsers ask for it; the site has none
            return
        path = self._site_file(raw_path)
        try:
            with open(path, "rb") as f:
                body = f.read()
        except OSError:
            raise Refused(404, "not found") from None
        self._send(200, body, TYPES.get(os.path.splitext(path)[1].lower(), "application/octet-stream"), head)

    def _site_file(self, raw_path: str) -> str:
        """The file under the site a URL path names; Refused for anything outside it."""
        try:
            rel = unquote(raw_path, errors="strict")
        except UnicodeDecodeError:
            raise Refused(400, "the path is not UTF-8") from None
        if "\x00" in rel or "\\" in rel:
            raise Refused(400, "bad path")
        parts = [p for p in rel.split("/") if p]
        if any(p in (".", "..") for p in parts):
            raise Refused(400, "'.' and '..' are not allowed in paths")
        if any(p.startswith(".") for p in parts):
            raise Refused(404, "not found")  # the builder's state, .git, temp files
        real = os.path.realpath(os.path.join(self.server.site_real, *parts))
        if real != self.server.site_real and not real.startswith(self.server.site_real + os.sep):
            raise Refused(404, "not found")  # a link leading out of the site
        if os.path.isdir(real):
            real = os.path.join(real, "index.html")
        if not os.path.isfile(real):
            raise Refused(404, "not found")
        return real

    # -- uploads ---------------------------------------------------------------------------
    def _upload(self) -> dict:
        token = self.server.token
        if token is None:
            raise Refused(403, "uploads are disabled: the server was started without --token-file")
        auth = self.headers.get("Authorization", "")
        scheme, _, given = auth.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode("utf-8", "replace"), token):
            raise Refused(401, "missing or wrong token" if auth else "missing token (Authorization: Bearer TOKEN)")
        if self.headers.get_content_type() != "application/json":
            raise Refused(415, f"expected Content-Type: application/json, found {self.headers.get('Content-Type') or 'none'}")
        body = self._read_body()
        try:
            data = json.loads(body.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise Refused(400, f"the body is not UTF-8 (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise Refused(400, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
                          line=exc.lineno, column=exc.colno) from None
        return self._store(data)

    def _read_body(self) -> bytes:
        limit = self.server.max_bytes
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked(limit)
        length = self.headers.get("Content-Length")
        if length is None:
            raise Refused(411, "a Content-Length (or a chunked body) is required")
        try:
            size = int(length)
            if size < 0:
                raise ValueError
        except ValueError:
            raise Refused(400, f"bad Content-Length {length!r}") from None
        if size > limit:
            raise Refused(413, f"the payload is {size} bytes; this server accepts at most {limit}", max_bytes=limit)
        body = self.rfile.read(size)
        self._body_done = True
        if len(body) != size:
            self.close_connection = True
            raise Refused(400, f"the body ended after {len(body)} of {size} bytes")
        return body

    def _read_chunked(self, limit: int) -> bytes:
        parts, total = [], 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise Refused(400, "bad chunk in a chunked body") from None
            if size == 0:
                while self.rfile.readline(1024).strip():  # trailers
                    pass
                self._body_done = True
                return b"".join(parts)
            total += size
            if total > limit:
                raise Refused(413, f"the payload is over {limit} bytes, the most this server accepts", max_bytes=limit)
            chunk = self.rfile.read(size)
            if len(chunk) != size or self.rfile.read(2) != b"\r\n":
                raise Refused(400, "a chunked body ended early")
            parts.append(chunk)

    def _drain(self) -> None:
        """After refusing a body unread: answer first, then read (and drop) what the client
        still sends, for a while, so it gets to read the answer instead of a reset."""
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(1.0)
            deadline, read = time.monotonic() + 5, 0
            while read < DRAIN_CAP and time.monotonic() < deadline:
                chunk = self.connection.recv(65536)
                if not chunk:
                    break
                read += len(chunk)
        except OSError:
            pass

    def _store(self, data) -> dict:
        from ..results.files import record_file
        from ..results.store import ResultStore
        from ..results.validate import InvalidResult
        from .publish import prepare

        records = data if isinstance(data, list) else [data]
        items = []
        for i, record in enumerate(records):
            where = f"record {i}" if isinstance(data, list) else "record"
            try:
                items.append(prepare(record, where, None, strict=True))
            except InvalidResult as exc:
                raise Refused(422, exc.message, record=i if isinstance(data, list) else 0) from None
        stored, duplicates = [], []
        with self.server.store_lock, ResultStore(self.server.results) as store:
            for item in items:
                if (self.server.results / record_file(item.uid)).exists() or item.uid in stored:
                    duplicates.append(item.uid)
                    continue
                raw = {"latencies_ns": item.latencies} if item.latencies is not None else None
                store.add({**item.record, "raw": raw})
                stored.append(item.uid)
        if stored:
            self.server.rebuilder.request()
        return {"stored": stored, "duplicates": duplicates}
