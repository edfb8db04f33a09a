"""Screenshots of the dashboard for the docs: the leaderboard and the Pareto plot of real
lenet-digits results from this machine.

    .venv/bin/python benchmarks/dashboard_screens.py                # runs the benchmarks, then shoots
    .venv/bin/python benchmarks/dashboard_screens.py --results DIR  # use result records already made

Runs `cr benchmark` and `cr validate` of model lenet-digits with onnxruntime, torch, tflite
and tflite (int8 variant) in a throwaway CR_HOME, builds the dashboard, and writes
docs/img/dashboard-leaderboard.png and docs/img/dashboard-pareto.png with Debian's
Chromium (headless).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
RUNS = [("onnxruntime", None), ("torch", None), ("tflite", None), ("tflite", "tflite-int8")]


def make_results(folder: Path, home: Path) -> None:
    env = {**os.environ, "CR_HOME": str(home)}
    for backend, variant in RUNS:
        tag = backend + (f"-{variant}" if variant else "")
        extra = ["--variant", variant] if variant else []
        for action, options in (("benchmark", ["--min-duration", "2", "--min-queries", "1000"]), ("validate", [])):
            out = folder / f"{action}-{tag}.json"
            cmd = [sys.executable, "-m", "cr", action, "model", "lenet-digits", "--backend", backend, *extra, *options, "-o", str(out)]
            print("$ " + " ".join(cmd[2:]), file=sys.stderr)
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, timeout=600)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", help="A directory of result records to show (default: make them now).")
    parser.add_argument("--out", default=str(ROOT / "docs" / "img"), help="Where the PNG files go (default docs/img).")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    from cr.dashboard import build

    with tempfile.TemporaryDirectory(prefix="cr-screens-") as tmp:
        tmp = Path(tmp)
        results = Path(args.results) if args.results else tmp / "results"
        if not args.results:
            results.mkdir()
            make_results(results, tmp / "home")
        info = build(results, tmp / "site")
        print(f"{info.results} results, {info.rows} rows", file=sys.stderr)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 640}, device_scale_factor=1)
            for route, name in (("#/leaderboard", "dashboard-leaderboard.png"), ("#/pareto", "dashboard-pareto.png")):
                page.goto(Path(info.index_html).as_uri() + route)
                deadline = time.monotonic() + 30
                ready = "() => !!window.CR_DASHBOARD && window.CR_DASHBOARD.ready && " + (
                    "window.CR_DASHBOARD.paretoPoints > 0" if route == "#/pareto" else "window.CR_DASHBOARD.rowsShown > 0")
                while not page.evaluate(ready):
                    assert time.monotonic() < deadline, f"{route} did not render"
                    page.wait_for_timeout(50)
                page.wait_for_timeout(300)
                page.screenshot(path=str(out / name), full_page=True)
                print(f"wrote {out / name}", file=sys.stderr)
            browser.close()


if __name__ == "__main__":
    main()
