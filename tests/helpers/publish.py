"""A local publish/upload server and records for the publish and upload-server tests."""
from __future__ import annotations

import http.client
import http.server
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import requests

from cr.dashboard import sample


ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is tests/helpers/NAME.py)
TOKEN = "tok-" + "7f3a9c2e" * 6
BACKENDS = ("onnxruntime", "torch", "tflite")


def _env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env.update(CR_HOME=str(home), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")
    return env


def make_records(folder: Path, first: int, count: int, seed: int = 0) -> list[str]:
    """count benchmark records with uids first..first+count-1 in folder; returns the uids."""
    rng = random.Random(seed + first)
    folder.mkdir(parents=True, exist_ok=True)
    uids = []
    for n in range(first, first + count):
        uid = f"{n:016x}"
        record = sample.benchmark_record("lenet-digits", BACKENDS[n % 3], "onnx", "fp32", sample.XEON,
                                         sample.latencies(20_000 + 1000 * n, 64, rng), uid=uid,
                                         started=f"2026-11-30T10:{n % 60:02d}:00.000Z")
        (folder / f"bench-{n}.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        uids.append(uid)
    return uids


class Server:
    """`cr dashboard serve` in a child process on a free loopback port; its log is collected."""

    def __init__(self, tmp_path: Path, max_bytes: int = 200_000):
        self.token_file = tmp_path / "token"
        self.token_file.write_text(TOKEN + "\n")
        self.token_file.chmod(0o600)
        self.site, self.results = tmp_path / "site", tmp_path / "store"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cr", "dashboard", "serve", "--port", "0", "--token-file", self.token_file,
             "--results", self.results, "--site", self.site, "--max-bytes", str(max_bytes)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(tmp_path / "home"), cwd=ROOT)
        self.log: list[str] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError("the server ended: " + "".join(self.log))
            self.log.append(line)
            found = re.search(r"on http://127\.0\.0\.1:(\d+)/", line)
            if found:
                self.port = int(found.group(1))
                break
        self.url = f"http://127.0.0.1:{self.port}"
        self._reader = threading.Thread(target=lambda: self.log.extend(self.proc.stdout), daemon=True)
        self._reader.start()

    def post(self, body, token: str | None = TOKEN, ctype: str = "application/json", **kwargs):
        headers = {"Content-Type": ctype}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        data = body if isinstance(body, (bytes, str)) or body is None or hasattr(body, "__next__") else json.dumps(body)
        return requests.post(self.url + "/api/results", data=data, headers=headers, timeout=10, **kwargs)

    def raw_get(self, path: str) -> int:
        """The status of GET path sent exactly as written (requests would normalise '..')."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", path)
            return conn.getresponse().status
        finally:
            conn.close()

    def wait_built(self) -> dict:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            info = requests.get(self.url + "/api/info", timeout=5).json()
            if not info["pending"]:
                time.sleep(0.5)  # (a build started just now finishes within this)
                info = requests.get(self.url + "/api/info", timeout=5).json()
                if not info["pending"]:
                    return info
            time.sleep(0.1)
        raise AssertionError("the site was not rebuilt")

    def stop(self) -> str:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self._reader.join(timeout=5)
        return "".join(self.log)


def _record(tmp_path: Path, n: int) -> dict:
    make_records(tmp_path / "one", n, 1)
    return json.loads((tmp_path / "one" / f"bench-{n}.json").read_text())
