"""Publishing results: `cr publish --git` against real git repositories, `cr dashboard serve`
and `cr publish --url` over real HTTP on loopback.

Records are made in the real result format with cr.dashboard.sample (as test_dashboard.py
does). Two publishers race for one bare repository in two processes; a pre-receive hook
that waits makes sure their pushes overlap, so one of them has to start again.
"""
from __future__ import annotations

import http.client
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from helpers.publish import ROOT, Server, TOKEN, _env, _record, make_records

# `cr` with the publish command registered (cr/cli/main.py may not list it yet).
RUNNER = (
    "import sys\n"
    "from cr.cli import main as m\n"
    "from cr.cli.publish import publish\n"
    "if 'publish' not in m.cli.commands: m.cli.add_command(publish)\n"
    "m.main(sys.argv[1:])\n"
)
HEAVY = ("numpy", "torch", "tensorflow", "onnxruntime")


def cr(home: Path, *args, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUNNER, *map(str, args)], capture_output=True, text=True,
                          env=_env(home), cwd=ROOT, timeout=timeout)


def cr_start(home: Path, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", RUNNER, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(home), cwd=ROOT)


def git(*args, cwd=None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                          env=_env(Path("/nonexistent"))).stdout


@pytest.fixture
def bare(tmp_path) -> Path:
    """An empty bare repository whose pushes wait a moment before they are accepted."""
    path = tmp_path / "results.git"
    git("init", "-q", "--bare", "--initial-branch=main", str(path))  # publish follows the remote's HEAD
    hook = path / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\ncat >/dev/null\nsleep 1\n")
    hook.chmod(0o755)
    return path


# ---------------------------------------------------------------- git


def test_publish_git_concurrent_publishers_lose_nothing(tmp_path, bare):
    a_uids = make_records(tmp_path / "a", 1, 3)
    b_uids = make_records(tmp_path / "b", 4, 3)
    make_records(tmp_path / "b", 1, 1)  # a record both publish: one file in the end
    procs = [cr_start(tmp_path / "home-a", "publish", "--git", bare, "--results", tmp_path / "a", "--json"),
             cr_start(tmp_path / "home-b", "publish", "--git", bare, "--results", tmp_path / "b", "--json")]
    outs = [p.communicate(timeout=90) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    reports = [json.loads(out) for out, _ in outs]
    assert sum(r["attempts"] for r in reports) >= 3  # the pushes overlapped: one started again
    assert all(r["commit"] for r in reports)

    checkout = tmp_path / "check"
    git("clone", "-q", "--branch", "main", str(bare), str(checkout))
    records = sorted((checkout / "results").glob("*.json"))
    assert len(records) == 6
    stored = {json.loads(p.read_text())["uid"] for p in records}
    assert stored == set(a_uids) | set(b_uids)
    for path in records:  # content addressed, latencies beside the record under the same hash
        record = json.loads(path.read_text())
        assert record["raw"]["latencies_ns_file"] == path.stem + ".latencies.i64"
        assert (path.parent / record["raw"]["latencies_ns_file"]).stat().st_size == 8 * 64
    runs = (checkout / "site" / "data" / "runs.js").read_text()
    assert all(uid in runs for uid in stored)
    tracked = git("ls-files", cwd=checkout).split()
    assert "site/index.html" in tracked and not [f for f in tracked if ".cr-dashboard" in f]
    assert ".cr-dashboard" in (checkout / ".gitignore").read_text()

    messages = git("log", "--format=%B%x00", "main", cwd=checkout).split("\x00")
    messages = [m.strip() for m in messages if m.strip()]
    assert len(messages) == 2
    assert all(re.match(r"publish [234] results\n", m) for m in messages)  # 3 + 3 or 4 + 2: who came first
    assert all(re.search(r"^- lenet-digits@1\.0\.0 / (onnxruntime|torch|tflite): \d$", m, re.M) for m in messages)
    counts = sum(int(n) for m in messages for n in re.findall(r": (\d+)$", m, re.M))
    assert counts == 6  # every result added once, the shared one by whoever was first

    # again: nothing new, no commit
    head = git("rev-parse", "main", cwd=bare)
    again = cr(tmp_path / "home-a", "publish", "--git", bare, "--results", tmp_path / "a")
    assert again.returncode == 0, again.stderr
    assert "nothing to publish" in again.stdout
    assert git("rev-parse", "main", cwd=bare) == head
    # the same results from another machine (fresh clone), one of them new
    make_records(tmp_path / "a", 10, 1)
    third = cr(tmp_path / "home-c", "publish", "--git", bare, "--results", tmp_path / "a", "--json",
               "--message", "nightly run")
    assert third.returncode == 0, third.stderr
    report = json.loads(third.stdout)
    assert (report["added"], report["duplicates"]) == (1, 3)
    assert git("log", "-1", "--format=%s", "main", cwd=bare).strip() == "nightly run"

    # a dashboard of the shared repository, built on a machine that has none of the results
    built = cr(tmp_path / "home-d", "dashboard", "build", "--from-git", bare, "--out", tmp_path / "site-d", "--json")
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["results"] == 7
    missing = cr(tmp_path / "home-d", "dashboard", "build", "--from-git", bare, "--branch", "nope", "--out", tmp_path / "site-e")
    assert missing.returncode == 1 and "has no branch 'nope'" in missing.stderr


def test_publish_git_skips_invalid_records_and_explains_failures(tmp_path, bare):
    make_records(tmp_path / "r", 1, 2)
    (tmp_path / "r" / "broken.json").write_text('{"format": 1, "uid": "zz"', encoding="utf-8")
    bad = json.loads((tmp_path / "r" / "bench-1.json").read_text())
    bad["uid"], bad["status"] = "00000000000000ff", "maybe"
    (tmp_path / "r" / "bad-status.json").write_text(json.dumps(bad), encoding="utf-8")
    done = cr(tmp_path / "home", "publish", "--git", bare, "--results", tmp_path / "r", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == 2
    assert "broken.json: invalid JSON at line 1" in done.stderr
    assert "bad-status.json: /status:" in done.stderr

    gone = cr(tmp_path / "home", "publish", "--git", tmp_path / "no-such.git", "--results", tmp_path / "r" / "bench-1.json")
    assert gone.returncode == 1
    assert gone.stderr.startswith("Error: cannot reach") and "does not appear to be a git repository" in gone.stderr
    assert len(gone.stderr.splitlines()) == 2 and "Traceback" not in gone.stderr  # one line and the hint


class _AuthRequired(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # a git smart-HTTP server that wants credentials
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="git"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_publish_git_auth_failure_is_one_line_and_never_prompts(tmp_path):
    make_records(tmp_path / "r", 1, 1)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AuthRequired)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/team/results.git"
        done = cr(tmp_path / "home", "publish", "--git", url, "--results", tmp_path / "r", timeout=30)
    finally:
        server.shutdown()
    assert done.returncode == 1
    assert "authentication failed" in done.stderr and "Traceback" not in done.stderr


# ---------------------------------------------------------------- HTTP


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path)
    yield s
    if s.proc.poll() is None:
        s.stop()


def test_serve_uploads_checks_and_security(tmp_path, server):
    csp = "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    page = requests.get(server.url + "/", timeout=10)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert "<script src=\"app.js\"" in page.text and "<script>" not in page.text  # nothing inline: the CSP allows it
    assert requests.get(server.url + "/app.js", timeout=10).headers["Content-Type"].startswith("text/javascript")
    assert requests.get(server.url + "/style.css", timeout=10).headers["Content-Type"].startswith("text/css")

    record = _record(tmp_path, 1)
    no_token = server.post(record, token=None)
    assert no_token.status_code == 401 and "token" in no_token.json()["error"]
    for answer in (page, no_token):
        assert answer.headers["Content-Security-Policy"] == csp
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert answer.headers["Referrer-Policy"] == "no-referrer"
    assert server.post(record, token="wrong").status_code == 401
    assert server.post(record, token=TOKEN + "x").status_code == 401
    assert server.post(record, ctype="text/plain").status_code == 415

    big = server.post([record] * 40)  # about 40 x 7 kB, over the 200 kB limit
    assert big.status_code == 413 and big.json()["max_bytes"] == 200_000
    chunked = server.post(iter([json.dumps([record] * 40).encode()] * 2))  # no Content-Length: capped while reading
    assert chunked.status_code == 413

    malformed = server.post('[{"uid": "00000000000000aa",\n  "format": }]')
    assert malformed.status_code == 400
    assert "line 2 column 13" in malformed.json()["error"]
    invalid = server.post([record, {**record, "uid": "00000000000000bb", "status": "maybe"}])
    assert invalid.status_code == 422
    assert "record 1: /status" in invalid.json()["error"]
    missing = server.post({k: v for k, v in record.items() if k != "platform"})
    assert missing.status_code == 422 and "platform" in missing.json()["error"]
    assert requests.get(server.url + "/api/uids", timeout=10).json()["uids"] == []  # nothing of a refused batch stored

    first = server.post(record)
    assert first.status_code == 200 and first.json() == {"stored": [record["uid"]], "duplicates": []}
    again = server.post(record)
    assert again.json() == {"stored": [], "duplicates": [record["uid"]]}
    assert requests.head(f"{server.url}/api/results/{record['uid']}", timeout=10).status_code == 200
    assert requests.head(f"{server.url}/api/results/00000000000000cc", timeout=10).status_code == 404
    assert requests.get(f"{server.url}/api/results/{record['uid']}", timeout=10).json()["uid"] == record["uid"]
    assert requests.get(server.url + "/api/uids", timeout=10).json()["uids"] == [record["uid"]]

    info = server.wait_built()
    assert info["results"] == 1 and info["builds"] >= 2
    assert record["uid"] in requests.get(server.url + "/data/runs.js", timeout=10).text

    # nothing outside the site, and none of the builder's private state
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (server.site / "escape").symlink_to(outside)
    for path in ("/../token", "/%2e%2e/token", "/%2E%2E/%2e%2e/etc/passwd", "/data/..%2f..%2ftoken", "/..%5ctoken",
                 "/escape/secret.txt", "/.cr-dashboard.json", "/.cr-dashboard/0000.json", "/nope.html"):
        assert server.raw_get(path) in (400, 404), path
    assert server.raw_get("/data/index.js") == 200

    log = server.stop()
    assert "POST /api/results" in log
    assert TOKEN not in log
    for path in server.site.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert TOKEN.encode() not in path.read_bytes(), path


def test_publish_url_uploads_what_the_server_lacks(tmp_path, server):
    uids = make_records(tmp_path / "r", 1, 3)
    (tmp_path / "r" / "junk.json").write_text("[1, 2", encoding="utf-8")
    home = tmp_path / "home-client"
    first = cr(home, "publish", "--url", server.url, "--token-file", server.token_file, "--results", tmp_path / "r",
               "--json")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert sorted(report["uploaded"]) == uids and report["skipped"] == [] and report["failed"] == []
    assert "junk.json: invalid JSON" in first.stderr
    again = cr(home, "publish", "--url", server.url, "--token-file", server.token_file, "--results", tmp_path / "r")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("0 uploaded, 3 skipped (already there), 0 failed")

    wrong = tmp_path / "wrong-token"
    wrong.write_text("nope")
    make_records(tmp_path / "r", 7, 1)
    refused = cr(home, "publish", "--url", server.url, "--token-file", wrong, "--results", tmp_path / "r")
    assert refused.returncode == 1 and "refused the upload (401)" in refused.stderr
    assert "nope" not in refused.stderr

    server.wait_built()
    runs = (server.site / "data" / "runs.js").read_text()
    assert all(uid in runs for uid in uids)
    assert TOKEN not in server.stop()


def test_publish_url_unreachable_is_one_line(tmp_path):
    make_records(tmp_path / "r", 1, 1)
    token = tmp_path / "token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = cr(tmp_path / "home", "publish", "--url", f"http://127.0.0.1:{port}", "--token-file", token,
              "--results", tmp_path / "r", "--timeout", "2", "--retries", "1")
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: cannot reach http://127.0.0.1:{port}: [Errno 111] Connection refused")
    assert len(done.stderr.splitlines()) == 2 and "Traceback" not in done.stderr


def test_publish_and_serve_import_no_numerical_framework(tmp_path, bare):
    make_records(tmp_path / "r", 1, 2)
    (tmp_path / "token").write_text(TOKEN)
    probe = (
        "import json, sys\n"
        "from cr.cli import main as m\n"
        "from cr.cli.publish import publish\n"
        "if 'publish' not in m.cli.commands: m.cli.add_command(publish)\n"
        "try:\n    m.main(sys.argv[3:])\nexcept SystemExit:\n    pass\n"
        "from cr.dashboard.server import make_server\n"
        "make_server('127.0.0.1', 0, site=sys.argv[2] + '/site', results=sys.argv[2] + '/store',"
        " token_file=sys.argv[2] + '/token', quiet=True).server_close()\n"
        "json.dump(sorted(sys.modules), open(sys.argv[1], 'w'))\n"
    )
    listing = tmp_path / "modules.json"
    subprocess.run([sys.executable, "-c", probe, str(listing), str(tmp_path), "publish", "--git", str(bare),
                    "--results", str(tmp_path / "r")], capture_output=True, check=True, timeout=60,
                   env=_env(tmp_path / "home"), cwd=ROOT)
    modules = json.loads(listing.read_text(encoding="utf-8"))
    assert not [m for m in modules if m.split(".")[0] in HEAVY]
    assert "cr.dashboard.publish" in modules and "git" in modules


def test_served_dashboard_works_under_the_servers_csp(tmp_path, server):
    """The site over HTTP, in Chromium: the CSP header blocks nothing the app needs."""
    if not os.path.exists("/usr/bin/chromium"):
        pytest.skip("Debian's Chromium is not installed at /usr/bin/chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed (pip install playwright; never `playwright install`)")
    record = _record(tmp_path, 2)
    assert server.post(record).status_code == 200
    server.wait_built()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            page = browser.new_page()
            problems = []
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            page.on("response", lambda r: problems.append(f"{r.status}: {r.url}") if r.status >= 400 else None)
            for route in ("#/leaderboard", f"#/result/{record['uid']}", "#/pareto"):
                page.goto(server.url + "/" + route)
                deadline = time.monotonic() + 15
                while not page.evaluate("() => !!window.CR_DASHBOARD && window.CR_DASHBOARD.ready"):
                    assert time.monotonic() < deadline, route
                    page.wait_for_timeout(20)
                if route == "#/leaderboard":
                    page.wait_for_selector("#leaderboard tbody tr[data-row]")
                    assert page.locator("#leaderboard tbody tr[data-row]").count() == 1
                else:
                    page.wait_for_timeout(300)  # charts drawn
                    if route.startswith("#/result/"):
                        assert record["uid"] in page.locator("#main").inner_text()
            assert problems == [], "".join(server.log)
        finally:
            browser.close()
