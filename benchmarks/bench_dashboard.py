"""Dashboard benchmark: build time for 1,000 / 10,000 / 100,000 results, and how soon the
leaderboard of 100,000 results is visible and answers a filter in headless Chromium.

    .venv/bin/python benchmarks/bench_dashboard.py                 # all sizes, browser included
    .venv/bin/python benchmarks/bench_dashboard.py --sizes 1000 10000 --no-browser --json out.json

The stores are written with cr.dashboard.sample.write_store: half `cr benchmark` records
(1,024 latencies each, as the default --min-queries gives, in a side file beside the record
as the results store writes them), half `cr validate` records, one pair per configuration, laid out as cr writes them (indent 2), spread over
256 folders. Targets (issue 6): a 100,000-result build in <= 10 s; the leaderboard
visible and answering a filter <= 2 s after navigation starts.

Baselines in the same run, so that a slow or busy machine shows as such:
- build: reading every record with json.loads and writing them all with one json.dumps
  (the least any tool that looks at each record must do);
- browser: loading an empty page from file:// in the same browser.
Wall time depends on what else the machine runs; CPU time (ours and the workers') and
the load average are printed beside it.

--compare SIZE [--compare-with DIR] [--runs N]: only builds of the SIZE store, each in a
fresh process, alternating between this tree and the cr tree in DIR (e.g. `git archive
main cr dashboard | tar -x -C DIR`): full builds into an empty folder, warm (the store's
files in the page cache, read just before) and cold (the store's record and latency files
evicted from the page cache with posix_fadvise(DONTNEED), file by file: other processes'
caches are left alone; Python and cr's own files stay cached, as they would for a user);
then, into the folder each tree's warm build left, a rebuild with nothing changed and a
rebuild after one new benchmark result (a side-file record, removed again afterwards).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
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


def cpu_seconds() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def store_for(work: Path, size: int) -> Path:
    from cr.dashboard import sample

    folder = work / f"store-{size}"
    marker = folder / ".complete"
    if not marker.exists():
        shutil.rmtree(folder, ignore_errors=True)
        started = time.perf_counter()
        sample.write_store(folder, size)
        marker.write_text("", encoding="utf-8")
        print(f"  wrote {size:,} records in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return folder


def baseline(folder: Path, out: Path) -> float:
    """json.loads every record file, json.dumps them all into one file."""
    import gc

    gc.disable()
    try:
        started = time.perf_counter()
        everything = []
        for dirpath, _dirs, files in os.walk(folder):
            for name in files:
                if name.endswith(".json"):
                    with open(os.path.join(dirpath, name), "rb") as f:
                        everything.append(json.loads(f.read()))
        with open(out, "w", encoding="utf-8") as f:
            f.write(json.dumps(everything))
        return time.perf_counter() - started
    finally:
        gc.enable()
        out.unlink(missing_ok=True)


def bench_build(folder: Path, site: Path, size: int) -> dict:
    from cr.dashboard import build

    shutil.rmtree(site, ignore_errors=True)
    cpu = cpu_seconds()
    started = time.perf_counter()
    info = build(folder, site)
    full = time.perf_counter() - started
    cpu = cpu_seconds() - cpu
    started = time.perf_counter()
    build(folder, site)
    nothing = time.perf_counter() - started
    added = add_result(folder)
    try:
        started = time.perf_counter()
        one = build(folder, site)
        after_one = time.perf_counter() - started
    finally:
        for path in added:
            path.unlink()
    # a rebuild after ten records changed
    touched = sorted(p for p in folder.rglob("*.json"))[: 10]
    for path in touched:
        os.utime(path)
    started = time.perf_counter()
    again = build(folder, site)
    incremental = time.perf_counter() - started
    base = baseline(folder, site.parent / f"baseline-{size}.json")
    data = site / "data"
    return {
        "results": info.results, "rows": info.rows, "build_s": round(full, 3), "build_cpu_s": round(cpu, 3),
        "workers": info.workers, "phases": info.phases, "rebuild_after_10_changes_s": round(incremental, 3),
        "rebuild_processed": again.processed, "rebuild_nothing_changed_s": round(nothing, 3),
        "rebuild_after_one_new_s": round(after_one, 3), "rebuild_after_one_new_processed": one.processed, "baseline_json_s": round(base, 3), "ratio_to_baseline": round(full / base, 2),
        "index_js_bytes": (data / "index.js").stat().st_size, "runs_js_bytes": (data / "runs.js").stat().st_size,
        "bundles": info.bundles, "site_bytes": sum(p.stat().st_size for p in site.rglob("*") if p.is_file()),
        "input_bytes": sum(p.stat().st_size for p in folder.rglob("*.json")),
    }


def bench_browser(site: Path, runs: int = 3, model: str = "model-00042") -> dict:
    """model: the text filter's query (a model the store holds: a small store has few)."""
    from playwright.sync_api import sync_playwright

    (site / "empty.html").write_text("<!doctype html><meta charset=utf-8><title>empty</title><p>empty</p>\n", encoding="utf-8")
    index = (site / "index.html").as_uri()
    results: dict[str, list] = {k: [] for k in ("empty_load_ms", "first_rows_ms", "text_filter_ms", "select_filter_ms",
                                                 "sort_ms", "interactive_ms", "pareto_ms")}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(runs):
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            page = context.new_page()
            page.goto((site / "empty.html").as_uri(), wait_until="load")
            results["empty_load_ms"].append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
            page.goto(index + "#/leaderboard", wait_until="commit")
            wait_for(page, "() => !!window.CR_DASHBOARD && window.CR_DASHBOARD.firstRowsAt !== null")
            first = page.evaluate("window.CR_DASHBOARD.firstRowsAt")  # ms since navigation start
            text = page.evaluate(_TIMED_INPUT, model)
            select = page.evaluate(_TIMED_SELECT, "torch")
            sort = page.evaluate(_TIMED_CLICK, "#leaderboard th[data-col=p50_ns]")
            started = time.perf_counter()
            page.evaluate("location.hash = '#/pareto'")
            wait_for(page, "() => !!document.querySelector('#pareto') && +document.querySelector('#pareto').dataset.points > 0")
            results["pareto_ms"].append((time.perf_counter() - started) * 1000)
            results["first_rows_ms"].append(first)
            results["text_filter_ms"].append(text["ms"])
            results["select_filter_ms"].append(select["ms"])
            results["sort_ms"].append(sort["ms"])
            results["interactive_ms"].append(first + text["ms"])
            assert text["rows"] > 0 and select["rows"] > 0, (text, select)
            context.close()
        browser.close()
    out = {k: round(statistics.median(v), 1) for k, v in results.items()}
    out["ratio_interactive_to_empty_page"] = round(out["interactive_ms"] / max(out["empty_load_ms"], 0.1), 1)
    return out


def wait_for(page, predicate: str, timeout: float = 60.0) -> None:
    """Poll a predicate with page.evaluate (wait_for_function compiles strings with eval,
    which the dashboard's Content-Security-Policy forbids)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(predicate):
        if time.monotonic() > deadline:
            raise TimeoutError(predicate)
        time.sleep(0.005)


# Handlers run synchronously, so the time to the next frame covers filtering, rendering and layout.
_TIMED_INPUT = """(value) => new Promise(done => {
  const t0 = performance.now(), el = document.querySelector('input[data-filter=q]');
  el.value = value; el.dispatchEvent(new Event('input'));
  requestAnimationFrame(() => setTimeout(() => { const ms = performance.now() - t0;
    const rows = window.CR_DASHBOARD.rowsFiltered; el.value = ''; el.dispatchEvent(new Event('input')); done({ms, rows}); }, 0));
})"""
_TIMED_SELECT = """(value) => new Promise(done => {
  const t0 = performance.now(), el = document.querySelector('select[data-filter=backend]');
  el.value = value; el.dispatchEvent(new Event('change'));
  requestAnimationFrame(() => setTimeout(() => done({ms: performance.now() - t0, rows: window.CR_DASHBOARD.rowsFiltered}), 0));
})"""
_TIMED_CLICK = """(selector) => new Promise(done => {
  const t0 = performance.now(); document.querySelector(selector).click();
  requestAnimationFrame(() => setTimeout(() => done({ms: performance.now() - t0}), 0));
})"""


_BUILD = r"""
import json, resource, shutil, sys, time
sys.path.insert(0, sys.argv[1])
from cr.dashboard import build
if sys.argv[4] == "full":
    shutil.rmtree(sys.argv[3], ignore_errors=True)
started = time.perf_counter()
info = build(sys.argv[2], sys.argv[3])
wall = time.perf_counter() - started
own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": wall, "cpu_s": own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime,
                  "results": info.results, "processed": info.processed, "phases": info.phases, "workers": info.workers}))
"""

NEW_UID = "ffffffff00000001"  # the result "one new result" adds (and removes again)


def add_result(folder: Path) -> list[Path]:
    """One more benchmark result in the store, as the results store writes it: a copy of the
    first benchmark record (and its side file) under a new uid. Returns the files written."""
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        for side in sorted(sub.glob("*.latencies.i64")):
            uid = side.name.split(".")[0]
            text = (sub / f"{uid}.json").read_text(encoding="utf-8")
            target = folder / NEW_UID[:2]
            target.mkdir(exist_ok=True)
            files = [target / f"{NEW_UID}.latencies.i64", target / f"{NEW_UID}.json"]
            files[0].write_bytes(side.read_bytes())
            files[1].write_text(text.replace(uid, NEW_UID), encoding="utf-8")
            return files
    raise SystemExit(f"no benchmark record with a side file in {folder}")


def _build_in(path: str, folder: Path, site: Path, mode: str, work: Path) -> dict:
    """One build in a fresh process with the cr tree at path; mode: full (into an empty folder) or rebuild."""
    env = {**os.environ, "CR_HOME": str(work / "home")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as a user has it
    load = os.getloadavg()[0]
    done = subprocess.run([sys.executable, "-c", _BUILD, path, str(folder), str(site), mode],
                          capture_output=True, text=True, cwd=work, env=env)
    if done.returncode != 0:
        raise SystemExit(f"build with {path} failed:\n{done.stderr}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["load_average"] = load
    return figures


def evict(folder: Path) -> int:
    """Drop the files under folder from the page cache (posix_fadvise DONTNEED); bytes evicted."""
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                total += os.fstat(fd).st_size
            finally:
                os.close(fd)
    return total


def warm(folder: Path) -> None:
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                while f.read(1 << 20):
                    pass


def compare(size: int, work: Path, other: str | None, runs: int) -> dict:
    """Builds of the size store in fresh processes, this tree and other alternating: full builds
    into an empty folder, warm and cold; then, into the folder each tree's warm build left, a
    rebuild with nothing changed and a rebuild after one new result (removed again after)."""
    folder = store_for(work, size)
    trees = {"this tree": str(ROOT)}
    if other:
        trees = {"compared tree": str(Path(other).absolute()), **trees}
    got: dict = {}

    def record(key: str, figures: dict) -> None:
        got.setdefault(key, []).append(figures)
        print(f"  {key}: {json.dumps(figures)}", file=sys.stderr)

    for _ in range(runs):
        for cache in ("warm", "cold"):
            for i, (tree, path) in enumerate(trees.items()):
                warm(folder) if cache == "warm" else evict(folder)
                site = work / f"site-compare-{i}" if cache == "warm" else work / "site-compare-cold"
                record(f"{tree}, full {cache}", _build_in(path, folder, site, "full", work))
        warm(folder)
        for i, (tree, path) in enumerate(trees.items()):
            record(f"{tree}, nothing changed", _build_in(path, folder, work / f"site-compare-{i}", "rebuild", work))
        added = add_result(folder)
        try:
            for i, (tree, path) in enumerate(trees.items()):
                record(f"{tree}, one new result", _build_in(path, folder, work / f"site-compare-{i}", "rebuild", work))
        finally:
            for path in added:
                path.unlink()
    for site in work.glob("site-compare*"):
        shutil.rmtree(site, ignore_errors=True)
    print(f"\nbuilds of {size:,} store-shaped results, fresh process each (median of {runs}; "
          f"{os.cpu_count()} CPUs, shared: load average printed per build)")
    print(f"{'':36} {'wall s':>8} {'CPU s':>8} {'load':>6} {'read':>7}")
    summary = {}
    for key in sorted(got, key=lambda k: (k.split(", ", 1)[1], k)):
        values = got[key]
        med = {k: statistics.median(v[k] for v in values) for k in ("wall_s", "cpu_s", "load_average", "processed")}
        summary[key] = med
        print(f"{key:36} {med['wall_s']:8.2f} {med['cpu_s']:8.2f} {med['load_average']:6.1f} {med['processed']:7.0f}")
    return {"size": size, "runs": got, "medians": summary}


def mixed_store(folder: Path) -> None:
    """Records of every shape the builder treats differently: side-file latencies (1,024 and
    thinned 5,000), inline ones, campaign and study records, a UTF-16 file, a compact one, a
    duplicate uid, a broken file and a non-record."""
    from cr.dashboard import sample

    sample.write_store(folder / "side", 1200)
    sample.write_store(folder / "thinned", 40, samples=5000, seed=1)
    sample.write_store(folder / "inline", 400, side_files=False, seed=2)
    odd = folder / "odd"
    odd.mkdir(parents=True, exist_ok=True)
    records = sorted((folder / "inline").rglob("*.json"))
    for i, path in enumerate(records[:60]):
        rec = json.loads(path.read_text(encoding="utf-8"))
        rec["uid"] = f"c{i:015x}"
        if i % 2:
            rec["campaign"] = {"name": "grid", "job": f"j{i % 7}"}
            rec["config"]["threads"] = 1 + i % 3
        else:
            rec["study"] = {"name": "tune-1", "trial": str(i), "recommended": i == 4, "feasible": i % 3 != 0}
        (odd / f"{rec['uid']}.json").write_text(json.dumps(rec, indent=2) + "\n", encoding="utf-8")
    rec = json.loads(records[70].read_text(encoding="utf-8"))
    rec["uid"] = "d000000000000001"
    (odd / "utf16.json").write_bytes(json.dumps(rec, indent=2).encode("utf-16"))
    rec["uid"] = "d000000000000002"
    (odd / "compact.json").write_text(json.dumps(rec), encoding="utf-8")
    (odd / "duplicate.json").write_text(records[71].read_text(encoding="utf-8"), encoding="utf-8")
    (odd / "broken.json").write_text('{"format": 1, "uid": ', encoding="utf-8")
    (odd / "lock.json").write_text('{"software": {}}', encoding="utf-8")


def check_same(work: Path, other: str) -> None:
    """Build the mixed store with this tree and the cr tree in other: a clean build, then a
    rebuild after one record was added, one changed and one removed; every data file of
    the site (index.js, runs.js, each detail bundle) must be byte for byte the other
    tree's clean build of the same records."""
    folder = work / "mixed"
    shutil.rmtree(folder, ignore_errors=True)
    mixed_store(folder)
    sites = {"this": work / "mixed-site-this", "other": work / "mixed-site-other"}

    def data_files(site: Path) -> dict:
        return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted((site / "data").rglob("*")) if p.is_file()}

    def same(step: str) -> None:
        _build_in(str(ROOT), folder, sites["this"], "rebuild", work)  # incremental: what the last build kept
        _build_in(other, folder, sites["other"], "full", work)
        a, b = data_files(sites["this"]), data_files(sites["other"])
        differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        print(f"  {step}: {len(a)} data files, {'identical' if not differ else f'{len(differ)} differ: {differ[:5]}'}",
              file=sys.stderr)
        if differ:
            raise SystemExit(f"the site differs from {other}'s after {step}")

    shutil.rmtree(sites["this"], ignore_errors=True)
    same("a first build")
    same("a rebuild with nothing changed")
    added = add_result(folder / "side")
    same("a rebuild after one new result")
    changed = sorted((folder / "side").rglob("*.json"))[5]
    changed.write_text(changed.read_text(encoding="utf-8").replace('"status": "ok"', '"status": "failed"', 1),
                       encoding="utf-8")
    same("a rebuild after one changed")
    added[1].unlink()
    same("a rebuild after one removed")
    for site in sites.values():
        shutil.rmtree(site, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--work", help="Keep the generated stores and sites here (default: a temp dir, removed).")
    parser.add_argument("--no-browser", action="store_true", help="Skip the Chromium measurement.")
    parser.add_argument("--json", metavar="FILE", help="Also write the results as JSON.")
    parser.add_argument("--compare", type=int, metavar="SIZE", help="Only warm and cold full builds of SIZE results.")
    parser.add_argument("--compare-with", metavar="DIR", help="With --compare: also build with the cr tree in DIR.")
    parser.add_argument("--runs", type=int, default=1, help="With --compare: builds of each kind (median).")
    parser.add_argument("--check-with", metavar="DIR", help="Only check that the site's data files are byte for byte "
                        "those the cr tree in DIR builds, on a store of mixed records, after adds, changes, removals.")
    args = parser.parse_args()
    if args.check_with:
        work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="cr-bench-dashboard-"))
        work.mkdir(parents=True, exist_ok=True)
        try:
            check_same(work, str(Path(args.check_with).absolute()))
        finally:
            if not args.work:
                shutil.rmtree(work, ignore_errors=True)
        return
    if args.compare:
        work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="cr-bench-dashboard-"))
        work.mkdir(parents=True, exist_ok=True)
        try:
            report = compare(args.compare, work, args.compare_with, args.runs)
        finally:
            if not args.work:
                shutil.rmtree(work, ignore_errors=True)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        return

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="cr-bench-dashboard-"))
    work.mkdir(parents=True, exist_ok=True)
    report = {"cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
              "load_average_before": os.getloadavg(), "builds": {}, "browser": None}
    try:
        for size in args.sizes:
            print(f"{size:,} results", file=sys.stderr)
            folder = store_for(work, size)
            report["builds"][size] = bench_build(folder, work / f"site-{size}", size)
            print("  " + json.dumps(report["builds"][size]), file=sys.stderr)
        biggest = max(args.sizes)
        if not args.no_browser:
            if not os.path.exists(CHROMIUM):
                print(f"browser: skipped, {CHROMIUM} is missing", file=sys.stderr)
            else:
                model = "model-00042" if biggest >= 10_000 else "model-00000"  # a model a small store holds too
                report["browser"] = {"results": biggest, **bench_browser(work / f"site-{biggest}", model=model)}
        report["load_average_after"] = os.getloadavg()
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)

    print(f"\ndashboard build ({report['cpus']} CPUs, load average {report['load_average_before'][0]:.1f} before, "
          f"{report['load_average_after'][0]:.1f} after)")
    print(f"{'results':>9} {'rows':>7} {'build s':>8} {'cpu s':>7} {'baseline s':>11} {'ratio':>6} {'rebuild s':>10}"
          f" {'index.js':>9} {'bundles':>8}")
    for size, b in report["builds"].items():
        print(f"{size:>9,} {b['rows']:>7,} {b['build_s']:>8.2f} {b['build_cpu_s']:>7.2f} {b['baseline_json_s']:>11.2f}"
              f" {b['ratio_to_baseline']:>6.2f} {b['rebuild_after_10_changes_s']:>10.2f} {b['index_js_bytes'] / 1e6:>8.1f}M"
              f" {b['bundles']:>8,}")
    if report["browser"]:
        r = report["browser"]
        print(f"\nleaderboard of {r['results']:,} results in headless Chromium (median of 3, ms): first rows {r['first_rows_ms']},"
              f" text filter {r['text_filter_ms']}, backend filter {r['select_filter_ms']}, sort {r['sort_ms']},"
              f" interactive {r['interactive_ms']} (empty page {r['empty_load_ms']}: x{r['ratio_interactive_to_empty_page']}),"
              f" Pareto plot {r['pareto_ms']}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
