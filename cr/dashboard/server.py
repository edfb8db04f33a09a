"""cr dashboard serve: the dashboard over HTTP, and an authenticated upload endpoint for results.

    from cr.dashboard.server import make_server
    server = make_server("127.0.0.1", 8000, site="site/", results="results/", token_file="token")
    server.serve_forever()

Built on the standard library's http.server (ThreadingHTTPServer), hardened for uploads
from many machines at once; see docs/dashboard.md ("Why the standard library") for why
not waitress or uvicorn. On a public network put it behind a reverse proxy that
terminates TLS (the token travels in a header).

Routes (every response carries SECURITY_HEADERS):

    GET|HEAD /...                   the built site (static files; hidden files, '..', and
                                    links leading outside the site are refused)
    GET      /api/info              {"max_bytes", "uploads", "results", "builds", "pending"}
    GET      /api/uids[?since=ISO]  {"uids": [...]}: what the server has (clients skip these)
    GET|HEAD /api/results/<uid>     the stored record (200) or 404
    POST     /api/results           one record or a JSON list of them, Authorization: Bearer
                                    <token>; answers {"stored": [uids], "duplicates": [uids]}

A POST is checked in this order, all but the last two from its headers, before a byte of
the body is read: token (401; 403 when the server has none), content type (415), size
from Content-Length (413; 411 without it or a chunked body, whose size is counted while
reading), then a place among the uploads in progress (503 with Retry-After when none
frees up within the timeout), then the body itself: all of it within the timeout (408),
JSON (400 naming line and column; cr.jsonio's bounded reader, so NaN, Infinity and deep
nesting are refused too), every record against the Result schema (422 naming the record
and the field; nothing is stored then). A record whose uid the store already holds is a
duplicate and is left as it was: results are immutable. After stored records the site is
rebuilt in the background (incrementally, debounced).

Bounds (make_server's arguments; `cr dashboard serve` options):

    max_uploads     uploads read and stored at once (4); the others wait, before reading
                    their body, up to timeout_s, then get 503 + Retry-After
    inflight_bytes  the sum of the Content-Lengths of those uploads (default max_bytes):
                    one upload of max_bytes runs alone, small ones share; with the parser
                    below, uploads of records hold about twice inflight_bytes at most
    timeout_s       a request's headers, an idle keep-alive connection, a pause in a body
                    (30 s); a body must also arrive at MIN_RATE on average beyond that
    BACKLOG         the listen queue (the kernel caps it at net.core.somaxconn), so that a
                    burst of connections waits instead of being reset
    MAX_CONNECTIONS connections handled at once (one thread each); more wait in the backlog

Memory: the body is read into one buffer, decoded once (the buffer freed then), and parsed
once. Large arrays of integers (raw latencies) are parsed in slices straight into int64
arrays instead of lists of Python ints (36 bytes a value: a 64 MB upload of latencies was
280 MB of objects); the rest of the document is parsed by cr.jsonio.loads with those
arrays replaced by placeholders, which are then put back (parse_upload). The site is
rebuilt in a child process, so reading the records' latencies for it costs the server
nothing, and return_freed_buffers() keeps glibc from holding on to freed upload buffers.
Measured: one upload of 67 MB of latencies, or six at once, peak at 155-160 MB of RSS
(the server starts at 28 MB), where the ThreadingHTTPServer without these bounds took
489 MB and 2,565 MB.

The token is read once from the token file, compared with hmac.compare_digest, and never
logged or echoed: log lines hold the method, the path without its query string, the
status and the size, and any occurrence of the token in a log line is blanked.
"""
from __future__ import annotations

import collections
import hmac
import io
import json
import os
import re
import secrets
import socket
import sys
import threading
import time
from array import array
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

from ..errors import CRError

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_UPLOADS = 4
DEFAULT_TIMEOUT_S = 30.0
BACKLOG = 1024
MAX_CONNECTIONS = 256
MIN_RATE = 256 * 1024  # bytes/s a body must average, beyond the timeout, to be read to the end
RETRY_AFTER_S = 5
DEBOUNCE_S = 0.3  # uploads arriving within this of each other share one rebuild
BUILD_TIMEOUT_S = 3600
DRAIN_CAP = 8 * 1024 * 1024  # body bytes read and dropped after refusing it, so the client sees the answer
LIFT_MIN = 16 * 1024  # integer arrays at least this long (in characters) are parsed into int64 arrays
LIFT_SLICE = 1 << 16  # ... a slice of about this many characters at a time (few objects alive at once)
TYPES = {
    ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
    ".json": "application/json", ".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg",
    ".ico": "image/x-icon", ".txt": "text/plain; charset=utf-8", ".md": "text/plain; charset=utf-8",
    ".woff2": "font/woff2", ".map": "application/json",
}


class Refused(Exception):
    """An HTTP error answer: status, message, extra JSON fields, and extra headers."""

    def __init__(self, status: int, message: str, headers: dict | None = None, **extra):
        super().__init__(message)
        self.status, self.message, self.extra, self.headers = status, message, extra, headers or {}


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
    requests arriving while it waits or builds are folded into the next build.

    Each build runs cr.dashboard.build in a child process: it reads every changed record
    and its raw latencies, and that memory is the child's, returned when it ends, instead of
    adding to the server's while uploads are being parsed."""

    def __init__(self, results: Path, site: Path, debounce_s: float = DEBOUNCE_S, log=None):
        self.results, self.site, self.debounce_s = results, site, debounce_s
        self.builds = 0
        self._log = log or (lambda message: None)
        self._wake = threading.Event()
        self._busy = threading.Lock()
        self._pending = False
        self._thread = threading.Thread(target=self._loop, name="cr-dashboard-rebuild", daemon=True)

    def build_now(self, warn=None) -> None:
        """One build; CRError when it fails; warn(message) for each warning (default: the log)."""
        with self._busy:
            info = _build_in_child(self.results, self.site, warn or self._log)
            self.builds += 1
            self._log(f"site rebuilt: {info.get('results')} results, {info.get('processed')} files read"
                      f" in {info.get('seconds', 0):.2f} s")

    def start(self) -> None:
        self._thread.start()

    def request(self) -> None:
        self._pending = True
        self._wake.set()

    @property
    def pending(self) -> bool:
        """Whether a build is wanted or under way."""
        return self._pending or self._busy.locked()

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


_BUILD = """
import json, sys
del sys.path[0]
from cr.errors import CRError
from cr.events import CollectingReporter, set_reporter
from cr.dashboard.build import build
collected = CollectingReporter()
set_reporter(collected)
try:
    out = {"info": build(sys.argv[1], sys.argv[2]).to_dict()}
except CRError as exc:
    out = {"error": exc.message, "hint": exc.hint}
out["warnings"] = collected.warnings
sys.stdout.write(json.dumps(out))
"""


def _build_in_child(results: Path, site: Path, warn) -> dict:
    """cr.dashboard.build.build(results, site) in a child interpreter that imports what
    this one does; its BuildInfo as a dict. CRError as the build raised it."""
    import subprocess

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p or os.getcwd() for p in sys.path))
    try:
        done = subprocess.run([sys.executable, "-c", _BUILD, str(results), str(site)], capture_output=True, text=True,
                              env=env, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CRError(f"building the site took over {BUILD_TIMEOUT_S} s", hint="try cr dashboard build --full") from None
    try:
        out = json.loads(done.stdout)
    except ValueError:
        last = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        raise CRError(f"building the site in {site} failed: {last[0]}",
                      hint="run cr dashboard build --results ... --out ... to see why") from None
    for message in out.get("warnings", []):
        warn(message)
    if "error" in out:
        raise CRError(out["error"], hint=out.get("hint"))
    return out["info"]


class Admission:
    """At most `slots` uploads at once, whose sizes add up to at most `budget` bytes, let in
    first come, first served (a large upload is not overtaken forever by small ones). One
    larger than the budget is counted as the whole budget: it runs alone."""

    def __init__(self, slots: int, budget: int):
        self.slots, self.budget = slots, budget
        self.active = self.bytes = 0
        self._cond = threading.Condition()
        self._queue: collections.deque = collections.deque()

    def acquire(self, size: int, timeout: float) -> bool:
        size = min(size, self.budget)
        ticket = object()
        deadline = time.monotonic() + timeout
        with self._cond:
            self._queue.append(ticket)
            try:
                while not (self._queue[0] is ticket and self.active < self.slots and self.bytes + size <= self.budget):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._cond.wait(remaining)
                self.active += 1
                self.bytes += size
                return True
            finally:
                self._queue.remove(ticket)
                self._cond.notify_all()

    def release(self, size: int) -> None:
        with self._cond:
            self.active -= 1
            self.bytes -= min(size, self.budget)
            self._cond.notify_all()


# -- parsing an upload -------------------------------------------------------------------------

# A string token, an array holding only characters of numbers, commas and blanks, or a quote
# that starts no string (one left open to the end). Scanning from the start, strings are
# skipped whole, so an array found is never inside one; after an open quote everything is
# (the text is not JSON there), and scanning stops.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|\[[0-9eE+\-., \t\n\r]*\]|"', re.DOTALL)
_AT = re.compile(r"line (\d+) column (\d+)")


def parse_upload(data, where: str = "upload"):
    """The JSON value of an upload body (bytes, or a list holding them, which is emptied
    as soon as they are decoded): cr.jsonio.loads' answer, InvalidJSON included (the same
    message, line and column), computed with large integer arrays read straight into
    array('q') instead of lists of Python ints.

    Each such array is replaced by a placeholder, an array holding one string no upload can
    guess, before the rest is parsed: it starts and ends where the array did, so the parser
    meets the same text in the same places and says the same about it, only faster and
    with less memory. A record's "raw": {"latencies_ns": [...]} then becomes the array('q');
    any other lifted array is put back as the list json would have made.
    """
    from .. import jsonio

    if isinstance(data, list):
        text = jsonio.decode(data[0], where)
        data.clear()
    else:
        text = jsonio.decode(data, where)
    lifted = _lift(text) if len(text) >= 2 * LIFT_MIN else None
    if lifted is None:
        return jsonio.loads(text, where)
    reduced, arrays, spans = lifted
    try:
        value = jsonio.loads(reduced, where)
    except jsonio.InvalidJSON as exc:
        found = _AT.search(exc.message)
        if not found:
            raise
        line, column = _unshift(text, reduced, spans, int(found.group(1)), int(found.group(2)))
        raise jsonio.InvalidJSON(exc.message[:found.start()] + f"line {line} column {column}" + exc.message[found.end():],
                                 hint=exc.hint) from None
    del reduced
    value = _restore(value, arrays)
    if not arrays:
        return value
    return jsonio.loads(text, where)  # (never seen: a placeholder that did not come back)


def _lift(text: str):
    """(text with each large all-integer array replaced by a placeholder, {placeholder's
    string: array('q')}, [(start, length, new start, new length)]) or None when there is none."""
    nonce = secrets.token_hex(12)
    pieces, arrays, spans = [], {}, []
    last = size = 0
    for m in _TOKENS.finditer(text):
        start, end = m.span()
        if end - start == 1:
            break  # an open quote
        if end - start < LIFT_MIN or text[start] != "[":
            continue
        values = _int64_array(text, start + 1, end - 1)
        if values is None:
            continue  # floats, huge integers, bad syntax: left to the ordinary parser
        key = f"cr-lifted-{nonce}-{len(arrays)}"
        placeholder = f'["{key}"]'
        pieces.append(text[last:start])
        size += start - last
        spans.append((start, end - start, size, len(placeholder)))
        pieces.append(placeholder)
        size += len(placeholder)
        arrays[key] = values
        last = end
    if not arrays:
        return None
    pieces.append(text[last:])
    return "".join(pieces), arrays, spans


def _int64_array(text: str, start: int, end: int) -> array | None:
    """text[start:end] (an array's inside) as array('q'), parsed by json in slices cut at
    commas; None unless every value is an integer that fits in int64 and the slices are
    exactly what the whole would be (no empty item, no trailing comma)."""
    out = array("q")
    pos = start
    while True:
        cut = end
        if end - pos > LIFT_SLICE:
            cut = text.rfind(",", pos, pos + LIFT_SLICE)
            if cut < 0:
                return None
        try:
            values = json.loads("[" + text[pos:cut] + "]")
        except ValueError:
            return None
        if not values and not (pos == start and cut == end):
            return None  # an empty item between commas, or a comma at either end
        try:
            out.fromlist(values)
        except (TypeError, OverflowError):
            return None
        if cut == end:
            return out
        pos = cut + 1


def _restore(value, arrays: dict):
    """value with the lifted arrays put back (records' raw latencies as the arrays, others
    as lists), each taken out of arrays."""
    def lifted(item):
        return type(item) is list and len(item) == 1 and type(item[0]) is str and item[0] in arrays

    if lifted(value):
        return arrays.pop(value[0]).tolist()
    for record in value if isinstance(value, list) else [value]:
        raw = record.get("raw") if isinstance(record, dict) else None
        if isinstance(raw, dict) and lifted(raw.get("latencies_ns")):
            raw["latencies_ns"] = arrays.pop(raw["latencies_ns"][0])
    stack = [value] if arrays else []
    while stack and arrays:
        node = stack.pop()
        for key, item in (node.items() if isinstance(node, dict) else enumerate(node)):
            if lifted(item):
                node[key] = arrays.pop(item[0]).tolist()
            elif isinstance(item, (dict, list)):
                stack.append(item)
    return value


def _unshift(text: str, reduced: str, spans, line: int, column: int) -> tuple[int, int]:
    """The line and column in text of the place line:column of reduced."""
    pos = 0
    for _ in range(line - 1):
        pos = reduced.index("\n", pos) + 1
    pos += column - 1
    orig = pos
    for start, length, new_start, new_length in spans:
        if pos >= new_start + new_length:
            orig += length - new_length
        elif pos >= new_start:
            orig = start
            break
        else:
            break
    return text.count("\n", 0, orig) + 1, orig - text.rfind("\n", 0, orig)


def _sanitised(body: bytes) -> bytes:
    """A stored record as valid JSON: NaN and Infinity (which Python writes and JSON has
    not; records added before the schema refused them) become null."""
    if b"NaN" not in body and b"Infinity" not in body:
        return body
    try:
        record = json.loads(body, parse_constant=lambda _: None)
    except ValueError:
        return body
    return json.dumps(record, ensure_ascii=False, allow_nan=False).encode("utf-8") + b"\n"


# -- the server --------------------------------------------------------------------------------

class _DeadlineIO(socket.SocketIO):
    """A socket reader that gives up at handler.deadline (and after timeout_s without data)."""

    def __init__(self, sock: socket.socket, handler: "Handler"):
        super().__init__(sock, "rb")
        self._handler = handler

    def readinto(self, b) -> int:
        handler = self._handler
        remaining = handler.deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("deadline passed")
        timeout = handler.server.timeout_s
        self._sock.settimeout(min(remaining, timeout))
        try:
            return super().readinto(b)
        finally:
            self._sock.settimeout(timeout)  # (what writing the answer gets)


class DashboardServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = BACKLOG

    def __init__(self, address, site: Path, results: Path, token: bytes | None, max_bytes: int, quiet: bool = False,
                 max_uploads: int = DEFAULT_MAX_UPLOADS, inflight_bytes: int | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, max_connections: int = MAX_CONNECTIONS):
        self.site = site
        self.site_real = os.path.realpath(site)
        self.results = results
        self.token = token
        self.max_bytes = max_bytes
        self.quiet = quiet
        self.timeout_s = float(timeout_s)
        self.admission = Admission(max_uploads, inflight_bytes or max_bytes)
        self.store_lock = threading.Lock()  # duplicate check + add, one upload at a time
        self.rebuilder = Rebuilder(results, site, log=self.log)
        self._connections = threading.BoundedSemaphore(max_connections)
        self._closing = False
        secret = token.decode("utf-8", "replace") if token else None
        self._secrets = [s for s in {secret, quote(secret or "", safe="")} if s]
        super().__init__(address, Handler)

    def log(self, message: str) -> None:
        if self.quiet:
            return
        for secret in self._secrets:  # the token is never logged, wherever a client put it
            message = message.replace(secret, "[token]")
        sys.stderr.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}\n")
        sys.stderr.flush()

    # One thread per connection, at most max_connections of them: the accept loop waits for
    # one to end, and connections arriving meanwhile wait in the listen backlog.
    def process_request(self, request, client_address) -> None:
        while not self._connections.acquire(timeout=0.5):
            if self._closing:
                self.shutdown_request(request)
                return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._connections.release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._connections.release()

    def handle_error(self, request, client_address) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):  # the client went away
            return
        self.log(f"{client_address[0]} error while answering: {type(exc).__name__}: {exc}")

    def shutdown(self) -> None:
        self._closing = True
        super().shutdown()

    def server_close(self) -> None:
        self._closing = True
        super().server_close()


def return_freed_buffers() -> None:
    """Have glibc give every large buffer (128 kB and up) back to the system when it is
    freed: call it once in a process that serves uploads (`cr dashboard serve` does).

    By default glibc raises its mmap threshold to the size of each large block freed (up to
    32 MB), so the buffers of the next uploads come from the heap, and when they are freed
    the heap keeps them: measured with 200 uploads, six of 20 MB, the server's peak RSS was
    230-300 MB instead of the 150-175 MB actually in use at once. A fixed threshold keeps
    each such buffer in a mapping of its own. Elsewhere (not glibc) this does nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, ImportError):
        return
    mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD (which also stops its adjustment)


def make_server(host: str = "127.0.0.1", port: int = 8000, *, site, results, token_file=None,
                max_bytes: int = DEFAULT_MAX_BYTES, quiet: bool = False, max_uploads: int = DEFAULT_MAX_UPLOADS,
                inflight_bytes: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> DashboardServer:
    """A server bound to host:port (port 0: any free one, see server.server_address), with
    the site built from the results store first. Call serve_forever() on it."""
    from ..results.store import ResultStore

    token = read_token(token_file) if token_file else None
    site, results = Path(site).expanduser().absolute(), Path(results).expanduser().absolute()
    if max_bytes < 1024:
        raise CRError(f"--max-bytes {max_bytes} is too small", hint="allow at least 1024 bytes per upload")
    if max_uploads < 1:
        raise CRError(f"--max-uploads {max_uploads} is too small", hint="allow at least one upload at a time")
    if not timeout_s > 0:
        raise CRError(f"--timeout {timeout_s} is not a positive number of seconds", hint="e.g. --timeout 30")
    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CRError(f"cannot create the results store {results} ({exc.strerror or exc})",
                      hint="choose a writable --results directory") from None
    with ResultStore(results) as store:
        store.count()  # brings its index up to date (and warns about invalid files once)
    try:
        server = DashboardServer((host, port), site, results, token, max_bytes, quiet, max_uploads=max_uploads,
                                 inflight_bytes=inflight_bytes, timeout_s=timeout_s)
    except OSError as exc:
        raise CRError(f"cannot listen on {host}:{port} ({exc.strerror or exc})",
                      hint="choose another --port, or stop what is using it") from None
    try:
        from ..events import reporter

        server.rebuilder.build_now(warn=reporter().warning)
    except BaseException:
        server.server_close()
        raise
    server.rebuilder.start()
    return server


class Handler(BaseHTTPRequestHandler):
    server: DashboardServer
    server_version = "reefkit"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    error_content_type = "application/json"
    deadline = 0.0

    def version_string(self) -> str:
        return self.server_version  # no Python version in the Server header

    def setup(self) -> None:
        self.timeout = self.server.timeout_s
        super().setup()
        self.rfile.close()  # (only its wrapper: the socket stays open)
        self.rfile = io.BufferedReader(_DeadlineIO(self.connection, self), 65536)

    def handle_one_request(self) -> None:
        # the request line and headers (or, on a kept-alive connection, the next request)
        # must arrive within the timeout, however slowly they trickle in
        self.deadline = time.monotonic() + self.server.timeout_s
        super().handle_one_request()

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

    # -- the log: method, path (never the query string), status, size ---------------------------
    def log_request(self, code="-", size="-") -> None:
        if isinstance(code, HTTPStatus):
            code = code.value
        path = getattr(self, "path", None) or "-"
        path = path.split("?", 1)[0].split("#", 1)[0]
        if len(path) > 200:
            path = path[:200] + "..."
        path = path.encode("ascii", "backslashreplace").decode("ascii")
        path = "".join(c if " " < c < "\x7f" else f"\\x{ord(c):02x}" for c in path)
        method = self.command if isinstance(self.command, str) and self.command.isalpha() else "-"
        self.server.log(f'{self.address_string()} "{method} {path}" {code} {size}')

    def log_error(self, format, *args) -> None:  # noqa: A002 (http.server's name)
        pass  # only "Request timed out" comes here (the other errors are answers, logged as such)

    def log_message(self, format, *args) -> None:  # noqa: A002
        pass  # nothing else of http.server's: it would write the request line, query string and all

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
            headers = dict(exc.headers)
            if exc.status == 401:
                headers["WWW-Authenticate"] = 'Bearer realm="cr"'
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
        self._send(200, _sanitised(body), "application/json", head)

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
        from ..jsonio import InvalidJSON

        token = self.server.token
        if token is None:
            raise Refused(403, "uploads are disabled: the server was started without --token-file")
        auth = self.headers.get("Authorization", "")
        scheme, _, given = auth.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode("utf-8", "replace"), token):
            raise Refused(401, "missing or wrong token" if auth else "missing token (Authorization: Bearer TOKEN)")
        if self.headers.get_content_type() != "application/json":
            raise Refused(415, f"expected Content-Type: application/json, found {self.headers.get('Content-Type') or 'none'}")
        chunked, size = self._body_size()
        admission = self.server.admission
        if not admission.acquire(size, self.server.timeout_s):
            raise Refused(503, f"{admission.active} uploads are in progress; try again in {RETRY_AFTER_S} s",
                          headers={"Retry-After": str(RETRY_AFTER_S)})
        try:
            body = [self._read_chunked(self.server.max_bytes) if chunked else self._read_exact(size)]
            try:
                data = parse_upload(body)  # (it empties body once decoded: one copy at a time)
            except InvalidJSON as exc:
                found = _AT.search(exc.message)
                extra = {"line": int(found.group(1)), "column": int(found.group(2))} if found else {}
                raise Refused(400, exc.message, **extra) from None
            except (ValueError, RecursionError, MemoryError) as exc:  # (e.g. an integer of 5,000 digits)
                raise Refused(400, f"upload: invalid JSON: {exc}") from None
            answer = self._store(data)
            del data  # before the next upload is let in
            return answer
        finally:
            admission.release(size)

    def _body_size(self) -> tuple[bool, int]:
        """(chunked, bytes to read or, chunked, the most it may hold), from the headers."""
        limit = self.server.max_bytes
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return True, limit
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
        return False, size

    def _body_deadline(self, size: int) -> None:
        self.deadline = time.monotonic() + self.server.timeout_s + size / MIN_RATE

    def _read_exact(self, size: int) -> bytearray:
        self._body_deadline(size)
        body = bytearray(size)
        view, got = memoryview(body), 0
        try:
            while got < size:
                n = self.rfile.readinto(view[got:])
                if not n:
                    break
                got += n
        except socket.timeout:
            self.close_connection = True
            self._body_done = True  # nothing worth draining: the client stopped sending
            raise Refused(408, f"the body did not arrive in time ({got} of {size} bytes within"
                               f" {self.server.timeout_s:g} s of each other)") from None
        finally:
            view.release()
        self._body_done = True
        if got != size:
            self.close_connection = True
            raise Refused(400, f"the body ended after {got} of {size} bytes")
        return body

    def _read_chunked(self, limit: int) -> bytearray:
        self._body_deadline(limit)
        body = bytearray()
        try:
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
                    return body
                if len(body) + size > limit:
                    raise Refused(413, f"the payload is over {limit} bytes, the most this server accepts", max_bytes=limit)
                chunk = self.rfile.read(size)
                if len(chunk) != size or self.rfile.read(2) != b"\r\n":
                    raise Refused(400, "a chunked body ended early")
                body += chunk
        except socket.timeout:
            self.close_connection = True
            self._body_done = True
            raise Refused(408, f"the chunked body did not arrive in time ({len(body)} bytes read)") from None

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
        from ..results.validate import InvalidResult, latency_problem
        from .publish import prepare

        listed = isinstance(data, list)
        records = data if listed else [data]
        del data
        items = []
        for i in range(len(records)):
            where = f"record {i}" if listed else "record"
            try:
                item = prepare(records[i], where, None, strict=True)
            except InvalidResult as exc:
                raise Refused(422, exc.message, record=i) from None
            problem = latency_problem(item.latencies, where) if item.latencies is not None else None
            if problem:
                raise Refused(422, problem, record=i)
            records[i] = None  # prepare copied what it keeps: the parsed record can go
            items.append(item)
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
