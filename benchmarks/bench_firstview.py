"""What the leaderboard's first view (rows with figures first, failed and figure-less rows
behind a toggle) costs in Chromium, against the filter's own pass in the same page.

    .venv/bin/python benchmarks/bench_firstview.py                      # 100,000 results (50,000 rows)
    .venv/bin/python benchmarks/bench_firstview.py --results 2000 --rounds 3 --json out.json

The store is cr.dashboard.sample.write_store's (a benchmark and a validate record per
configuration), with about one benchmark in a hundred turned into a failed one (its
metrics removed), so the toggle has rows to hide (their number is printed). In headless Chromium from file://, on the built site, each
round (interleaved, in one page): the toggle's split of every row into shown and hidden
with each row's flag computed afresh (what the first render pays), the same split with the
flags kept on the rows (what a sort or a filter pays later), and the baseline: the
leaderboard's filter pass over every row (C.filteredRows with a text filter that matches
every row). Printed: medians in ms and their ratio to the baseline, the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

_ROUND = """() => {
  const C = window.CR_SITE, S = C.S, rows = S.rows.slice();
  rows.forEach(r => { r._hidden = undefined; });
  let t = performance.now(); const parts = C.leaderboardSplit(rows.slice()); const fresh = performance.now() - t;
  t = performance.now(); C.leaderboardSplit(rows.slice()); const kept = performance.now() - t;
  S.cache = null; S.filters.q = "model";
  t = performance.now(); const matched = C.filteredRows().length; const filter = performance.now() - t;
  S.filters.q = ""; S.cache = null;
  return {rows: rows.length, hidden: parts.hidden.length, matched: matched, fresh_ms: fresh, kept_ms: kept, filter_ms: filter};
}"""


def make_site(work: Path, results: int) -> Path:
    from cr.dashboard import build, sample
    from cr.events import CollectingReporter, set_reporter

    store = work / "store"
    sample.write_store(store, results, samples=64)
    for k, path in enumerate(sorted(store.rglob("*.json"))):
        if k % 50 == 0:  # the files are in uid order: about every 50th file, when it is a benchmark
            rec = json.loads(path.read_text(encoding="utf-8"))
            if rec.get("action") == "benchmark":
                rec.update(status="failed", metrics=None, raw=None,
                           error={"type": "RuntimeTimeout", "message": "the runtime did not finish and was stopped"})
                path.write_text(json.dumps(rec, indent=2) + "\n", encoding="utf-8")
    old = set_reporter(CollectingReporter())
    try:
        build(store, work / "site")
    finally:
        set_reporter(old)
    return work / "site"


def measure(site: Path, rounds: int) -> dict:
    from playwright.sync_api import sync_playwright

    got: dict[str, list] = {"fresh_ms": [], "kept_ms": [], "filter_ms": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.goto((site / "index.html").absolute().as_uri() + "#/leaderboard")
        deadline = time.monotonic() + 120
        while not page.evaluate("() => !!window.CR_DASHBOARD && window.CR_DASHBOARD.ready"):
            if time.monotonic() > deadline:
                raise TimeoutError("the leaderboard did not load")
            page.wait_for_timeout(20)
        for _ in range(rounds):
            r = page.evaluate(_ROUND)
            for k in got:
                got[k].append(r[k])
        browser.close()
    out = {k: round(statistics.median(v), 2) for k, v in got.items()}
    out.update(rows=r["rows"], hidden=r["hidden"], rounds=rounds, load_average=round(os.getloadavg()[0], 1))
    out["fresh_to_filter"] = round(out["fresh_ms"] / max(out["filter_ms"], 0.01), 2)
    out["kept_to_filter"] = round(out["kept_ms"] / max(out["filter_ms"], 0.01), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=int, default=100_000, help="records in the store (half of them rows)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (medians)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"needs Debian's chromium at {CHROMIUM} (apt-get install chromium)")
    work = Path(tempfile.mkdtemp(prefix="cr-bench-firstview-"))
    try:
        out = measure(make_site(work, args.results), args.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"leaderboard first view, {out['rows']:,} rows ({out['hidden']:,} hidden), median of {out['rounds']} "
          f"rounds, {os.cpu_count()} CPUs, load average {out['load_average']}")
    print(f"{'':34} {'ms':>8} {'/ filter pass':>14}")
    print(f"{'filter pass (baseline)':34} {out['filter_ms']:8.2f} {1:14.2f}")
    print(f"{'toggle split, flags computed':34} {out['fresh_ms']:8.2f} {out['fresh_to_filter']:14.2f}")
    print(f"{'toggle split, flags kept':34} {out['kept_ms']:8.2f} {out['kept_to_filter']:14.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
