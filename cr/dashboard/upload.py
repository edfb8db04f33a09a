"""cr publish --url: result records uploaded to a `cr dashboard serve` server.

    from cr.dashboard.upload import upload
    report = upload("https://results.example.org", "token.txt")   # UploadReport

The client asks the server what it has (GET /api/uids) and its size limit (GET
/api/info) first, then sends the rest as JSON lists in batches under that limit (latencies
inline), with Authorization: Bearer <token>. Connection errors and 5xx answers are retried
with exponential backoff (urllib3 Retry; a POST may be retried because storing a record
twice is a no-op on the server); every request has a timeout. A batch the server refuses
as too large or invalid is split, so one bad record fails alone.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit

from ..errors import CRError
from ..events import reporter

RETRIES = 5
BACKOFF_S = 0.3
MARGIN = 1024  # bytes left under the server's limit for the list's brackets and commas


@dataclass
class UploadReport:
    url: str
    uploaded: list = field(default_factory=list)  # uids the server stored
    skipped: list = field(default_factory=list)  # uids it already had
    failed: list = field(default_factory=list)  # {"uid", "error"}
    requests: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


class _Client:
    def __init__(self, url: str, token: bytes, timeout: float, retries: int):
        import requests
        from requests.adapters import HTTPAdapter
        from urllib3.util.retry import Retry

        self.requests = requests
        self.base = url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        retry = Retry(total=retries, connect=retries, read=retries, status=retries, backoff_factor=BACKOFF_S,
                      status_forcelist=(500, 502, 503, 504), allowed_methods=frozenset({"GET", "HEAD", "POST"}),
                      raise_on_status=False, respect_retry_after_header=True)
        adapter = HTTPAdapter(max_retries=retry)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.session.headers["Authorization"] = "Bearer " + token.decode("utf-8")
        self.session.headers["User-Agent"] = "reefkit-publish"
        self.count = 0

    def call(self, method: str, route: str, **kwargs):
        self.count += 1
        try:
            return self.session.request(method, self.base + route, timeout=self.timeout, **kwargs)
        except self.requests.RequestException as exc:
            raise CRError(f"cannot reach {self.base}: {_reason(exc)}",
                          hint="check the URL and that cr dashboard serve runs there") from None

    def get_json(self, route: str) -> dict:
        answer = self.call("GET", route)
        if answer.status_code != 200:
            raise CRError(f"{self.base}{route} answered {answer.status_code}: {_message(answer)}",
                          hint="is this a cr dashboard serve server?")
        try:
            return answer.json()
        except ValueError:
            raise CRError(f"{self.base}{route} did not answer JSON", hint="is this a cr dashboard serve server?") from None


def _reason(exc) -> str:
    """The innermost reason of a requests error, without the URL repeated."""
    import re

    text = str(exc)
    errno = re.search(r"\[Errno -?\d+\] [^'\")]+", text)
    if errno:
        return errno.group(0).strip()
    if "timed out" in text.lower():
        return "timed out"
    for marker in ("Caused by ", "caused by "):
        if marker in text:
            text = text.split(marker, 1)[1]
    return text.strip("()'\" ")[:300]


def _message(answer) -> str:
    try:
        return str(answer.json().get("error") or answer.reason)
    except (ValueError, AttributeError):
        return answer.reason or "no message"


def upload(url: str, token_file, sources=None, timeout: float = 30.0, retries: int = RETRIES) -> UploadReport:
    """Upload the valid records of sources (default: the local store) that the server lacks."""
    from .publish import collect
    from .server import read_token

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CRError(f"{url} is not an http(s) URL", hint="give the server's address, e.g. https://results.example.org")
    if parts.scheme == "http" and parts.hostname not in ("localhost", "127.0.0.1", "::1"):
        reporter().warning(f"{url} is plain http: the token travels unencrypted (use https)")
    client = _Client(url, read_token(token_file), timeout, retries)
    report = UploadReport(url=url)
    limit = int(client.get_json("/api/info").get("max_bytes") or 0) or 1 << 20
    known = set(client.get_json("/api/uids").get("uids") or [])
    items = collect(sources)
    report.skipped = [item.uid for item in items if item.uid in known]
    todo = [item for item in items if item.uid not in known]
    try:
        for batch in _batches(todo, limit - MARGIN, report):
            _send(client, batch, report)
    finally:
        report.requests = client.count
    return report


def _batches(items, limit: int, report: UploadReport):
    """Lists of (uid, JSON bytes) whose JSON list stays under limit bytes."""
    batch, size = [], 2
    for item in items:
        data = json.dumps(item.inline(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if len(data) + 2 > limit:
            report.failed.append({"uid": item.uid, "error": f"{len(data)} bytes, over the server's limit of {limit}"})
            continue
        if batch and size + len(data) + 1 > limit:
            yield batch
            batch, size = [], 2
        batch.append((item.uid, data))
        size += len(data) + 1
    if batch:
        yield batch


def _send(client: _Client, batch: list, report: UploadReport) -> None:
    body = b"[" + b",".join(data for _, data in batch) + b"]"
    answer = client.call("POST", "/api/results", data=body, headers={"Content-Type": "application/json"})
    if answer.status_code == 200:
        result = answer.json()
        report.uploaded += result.get("stored", [])
        report.skipped += result.get("duplicates", [])
        return
    if answer.status_code in (401, 403):
        raise CRError(f"{client.base} refused the upload ({answer.status_code}): {_message(answer)}",
                      hint="check --token-file: it must hold the token the server was started with")
    if answer.status_code in (413, 422) and len(batch) > 1:
        half = len(batch) // 2  # find the record the server objects to
        _send(client, batch[:half], report)
        _send(client, batch[half:], report)
        return
    error = f"{answer.status_code}: {_message(answer)}"
    report.failed += [{"uid": uid, "error": error} for uid, _ in batch]
