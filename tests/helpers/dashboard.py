"""The dashboard's browser fixtures (Debian's Chromium through playwright) and site readers (every dashboard test)."""
from __future__ import annotations

import json
import os
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is tests/helpers/NAME.py)
PLATFORMS = ROOT / "tests" / "fixtures" / "platforms"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOCK = {  # the shape of a lock written by `cr resolve model:lenet-digits` on this machine
    "format": 1, "cr_version": "0.1.0", "created": "2026-11-30T13:00:14+00:00", "root": "model:lenet-digits@1.0.0",
    "platform": {"fingerprint": "", "arch": "x86_64", "system": "Linux", "python": "3.11.7"},
    "interpreter": "/usr/bin/python3", "status": "ready", "missing": [],
    "components": [{"ref": "model:lenet-digits@1.0.0", "uid": "c355a40e4d75023b", "repo": "builtin",
                    "sha256": "e49e720ca5ecadb454a671669a0497706b3a1bf49f68aec6bda249bd59aaa3a7"}],
    "software": [
        {"name": "python", "version": "3.11.7", "origin": "detected", "requested_by": ["numpy 2.4.6", "onnxruntime 1.32.0"],
         "recipe_uid": "8a61f0d3b5c2e479", "source": "system", "location": "/usr/bin/python3.11", "prefix": "",
         "exports": {"PATH": ["/usr/bin"]}, "packages": []},
        {"name": "numpy", "version": "2.4.6", "origin": "detected", "requested_by": ["onnxruntime 1.32.0"],
         "recipe_uid": "d9a20bb1d885c552", "source": "pip", "location": "/venv/lib/python3.11/site-packages/numpy",
         "prefix": "", "exports": {}, "packages": []},
        {"name": "onnxruntime", "version": "1.32.0", "origin": "detected", "requested_by": ["model:lenet-digits@1.0.0"],
         "recipe_uid": "96e11e2b33af20d7", "source": "pip", "location": "/venv/lib/python3.11/site-packages/onnxruntime",
         "prefix": "", "exports": {}, "packages": []},
    ],
}


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Debian's Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed (pip install playwright; never `playwright install`)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, tmp_path):
    """A page that records dialogs, page errors, failed requests and console errors; all must stay empty."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    problems = []
    pg.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    pg.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    pg.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    pg.problems = problems
    pg.shots = tmp_path
    yield pg
    context.close()


def _open(pg, site, route: str):
    url = (site[0] / "index.html").as_uri() + route
    assert url.startswith("file://")
    pg.goto(url)
    _wait(pg, "() => !!window.CR_DASHBOARD && window.CR_DASHBOARD.ready")


def _wait(pg, predicate: str, timeout: float = 15.0) -> None:
    """Poll predicate with evaluate: wait_for_function compiles strings with eval, which the
    dashboard's Content-Security-Policy forbids."""
    import time

    deadline = time.monotonic() + timeout
    while not pg.evaluate(predicate):
        assert time.monotonic() < deadline, f"timed out waiting for {predicate}"
        pg.wait_for_timeout(20)


def write(record: dict, path: Path) -> None:
    """As cr writes a record (cr/results/record.py: indent 2, a final newline), without its fsync."""
    from cr.fsutil import json_bytes

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(json_bytes(record))


def _load_js(path: Path, name: str) -> dict:
    """The data of a `window.NAME=JSON.parse('...');` file (only \\\\ and \\' are escaped in the string)."""
    import re

    text = path.read_text(encoding="ascii")
    prefix, suffix = f"window.{name}=JSON.parse('", "');\n"
    assert text.startswith(prefix) and text.endswith(suffix)
    return json.loads(re.sub(r"\\(.)", r"\1", text[len(prefix):-len(suffix)]))


def _rows(index: dict) -> list[dict]:
    strings, interned = index["strings"], set(index["interned"])
    out = []
    for row in index["rows"]:
        item = {}
        for column, value in zip(index["columns"], row):
            if column == "tags":
                value = [strings[t] for t in value]
            elif column in interned:
                value = strings[value]
            item[column] = value
        out.append(item)
    return out


def to_fixed(x: float, digits: int) -> str:
    """What JavaScript's Number.prototype.toFixed prints: the double's exact decimal value rounded
    half up (Python's format and round() take an exact tie such as 12.25 to even: 12.2, the page 12.3)."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
