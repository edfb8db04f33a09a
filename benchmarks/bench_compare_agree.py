#!/usr/bin/env python
"""Do `cr results compare`, the dashboard and `cr reproduce`'s statistic agree? Counted on random
pairs of stored results (target: 0 disagreements).

The store (a temporary CR_HOME): --real real `cr benchmark` runs of lenet-digits on
onnxruntime (threads 1/2, batch 1/4), then --derived records made from them: a real run's raw
latencies resampled in blocks, cut or stretched to another length (20 to 14,000 queries: below,
at and above the 2,048 the site keeps), scaled (0.8x to 1.5x), some given a heavy tail of
page-fault-like outliers; their figures recomputed from the new samples by the harness's own
code (cr.runtime.stats.summarize); a few with no raw samples at all.

For --pairs random pairs (a baseline and four others per `cr results compare`):
  cli        `cr results compare A B C D E --json`: its significance verdicts and intervals, and
             its table's WITHIN NOISE per row
  reproduce  cr.results.significance.compare_pair on the store's records and raw latencies
             (what `cr reproduce` and `cr gate` call)
  dashboard  `cr dashboard build`, then the compare page in Chromium: its significance block
             (the rendered verdict per metric), its table (the colour of each difference), and
             the numbers behind them (window.CR_SITE.stats.sitePair on the loaded records)
A disagreement: any verdict, "missing" reason or "not judged" reason that differs, or a ratio
or interval bound that differs by more than 1e-9 relative, for any of p50/p90/p99/mean
latency and throughput. Then the time of compare_pair on pairs of 2,048-sample runs (Python)
against the same in Chromium (lib/stats.js), as a ratio.

    .venv/bin/python benchmarks/bench_compare_agree.py [--pairs 200] [--real 4] [--derived 60] [--json]
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METRICS = ("p50_ns", "p90_ns", "p99_ns", "mean_ns", "throughput_qps")
TABLE = {"p50_ns": "p50_ns", "p90_ns": "p90_ns", "p99_ns": "p99_ns", "mean_ns": "mean_ns", "throughput_qps": "throughput_qps"}
SITE_ROWS = {"p50_ns": "p50 latency", "p90_ns": "p90 latency", "p99_ns": "p99 latency", "mean_ns": "mean latency",
             "throughput_qps": "throughput"}
COLOUR = {"faster": "better", "slower": "worse", "inconclusive": "noise", None: "unjudged"}
CHROMIUM = "/usr/bin/chromium"


def cr(home: str, *args, check=True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "cr", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "CR_HOME": home})
    if check and done.returncode != 0:
        raise SystemExit(f"cr {' '.join(map(str, args))} failed:\n{done.stderr[-2000:]}")
    return done


def real_runs(home: str, count: int) -> list[str]:
    configs = [(1, 1), (2, 1), (1, 4), (2, 4), (1, 2), (2, 2)][:count]
    uids = []
    for threads, batch in configs:
        done = cr(home, "benchmark", "model", "lenet-digits", "--backend", "onnxruntime", "--threads", threads,
                  "--batch-size", batch, "--min-duration", 1, "--min-queries", 2000, "--warmup", 10, "--json", check=False)
        if done.returncode != 0:
            print(f"  a real run (threads {threads}, batch {batch}) failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            continue
        uids.append(json.loads(done.stdout)["uid"])
    return uids


def derive(store, sources: list[dict], count: int, rng: random.Random) -> list[str]:
    from cr.runtime.stats import summarize

    uids = []
    for k in range(count):
        base = rng.choice(sources)
        lat = list(store.latencies(base))
        n = rng.choice((20, 60, 300, 1000, 2047, 2048, 2049, 3000, 6000, 14000))
        block = rng.choice((1, 50, 400))
        values = []
        while len(values) < n:
            s = rng.randrange(0, max(1, len(lat) - block))
            values.extend(lat[s:s + block])
        del values[n:]
        factor = rng.choice((0.8, 0.97, 1.0, 1.0, 1.02, 1.05, 1.1, 1.5))
        values = [max(1, int(x * factor)) for x in values]
        if rng.random() < 0.25:  # a heavy tail: a few queries 20-2000x slower
            values = [int(x * rng.paretovariate(1.1) * 20) if rng.random() < 0.01 else x for x in values]
        rec = copy.deepcopy(base)
        rec["uid"] = f"{rng.getrandbits(64):016x}"
        m = rec["metrics"]
        old_mean = m["latency_ns"]["mean"]
        m["latency_ns"] = summarize(values)
        m["queries"], m["samples"] = n, n * (m.get("batch_size") or 1)
        scale = old_mean / m["latency_ns"]["mean"]
        m["throughput"] = {k2: v * scale for k2, v in m["throughput"].items()}
        m["noise"] = m["latency_ns"]["iqr"] / m["latency_ns"]["p50"] if m["latency_ns"]["p50"] else 0.0
        if k % 25 == 24:  # a record without raw samples (exported with --no-raw)
            rec["raw"] = None
        else:
            rec["raw"] = {"latencies_ns": values}
        uids.append(store.add(rec))
    return uids


def close(x, y) -> bool:
    if x is None or y is None:
        return x is None and y is None
    return x == y or abs(x - y) <= 1e-9 * max(abs(x), abs(y))


def diff_pairs(name: str, p: dict, q: dict) -> list[str]:
    """What differs between two compare_pair results (p the reference)."""
    out = []
    if p["missing"] != q["missing"]:
        out.append(f"{name}: missing {p['missing']!r} vs {q['missing']!r}")
    rows_p = {m["metric"]: m for m in p["metrics"]}
    rows_q = {m["metric"]: m for m in q["metrics"]}
    for key in METRICS:
        a, b = rows_p.get(key), rows_q.get(key)
        if (a is None) != (b is None):
            out.append(f"{name}: {key} present in one only")
            continue
        if a is None:
            continue
        if a["verdict"] != b["verdict"] or a["why"] != b["why"]:
            out.append(f"{name}: {key} verdict {a['verdict']} ({a['why']}) vs {b['verdict']} ({b['why']})")
        if not close(a["ratio"], b["ratio"]) or (a["ci"] is None) != (b["ci"] is None) or (
                a["ci"] and not (close(a["ci"][0], b["ci"][0]) and close(a["ci"][1], b["ci"][1]))):
            out.append(f"{name}: {key} ratio {a['ratio']} {a['ci']} vs {b['ratio']} {b['ci']}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--real", type=int, default=4, help="real cr benchmark runs (0: derive from a synthetic run)")
    ap.add_argument("--derived", type=int, default=60)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary CR_HOME (store and site) and print where")
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="cr-agree-")
    try:
        return run(args, home)
    finally:
        if args.keep:
            print(f"kept: {home}", file=sys.stderr)
        else:
            shutil.rmtree(home, ignore_errors=True)


def run(args, home: str) -> int:
    rng = random.Random(args.seed)
    os.environ["CR_HOME"] = home
    from cr.results.compare import same_samples_per_query
    from cr.results.significance import compare_pair
    from cr.results.store import default_store

    t0 = time.perf_counter()
    real = real_runs(home, args.real)
    real_ok = bool(real)
    store = default_store()
    if not real:  # no runtime here: one synthetic run as the source
        sys.path.insert(0, str(ROOT / "tests"))
        from helpers.results import latencies, make_record

        real = [store.add(make_record("%016x" % 1, values=latencies(1, n=8000, base_ns=20_000.0)))]
    sources = [store.get(u) for u in real]
    derived = derive(store, sources, args.derived, rng)
    uids = real + derived
    setup_s = time.perf_counter() - t0
    groups = []
    for _ in range(-(-args.pairs // 4)):
        group = rng.sample(uids, 5)
        groups.append(group)
    pairs_wanted = args.pairs

    # the CLI
    t0 = time.perf_counter()
    cli = {}
    for group in groups:
        report = json.loads(cr(home, "results", "compare", *group, "--json").stdout)
        table = {m["metric"]: m for m in report["metrics"]}
        for column, pair in enumerate(report["significance"]["pairs"], start=1):
            cli[(group[0], pair["uid"], column)] = (pair, {k: (table[k]["verdict"][column], table[k]["within_noise"][column])
                                                            for k in TABLE if k in table})
    cli_s = time.perf_counter() - t0

    # what cr reproduce calls
    t0 = time.perf_counter()
    records = {u: store.get(u) for u in uids}
    lat = {u: store.latencies(records[u]) for u in uids}
    python = {(g[0], u, c): compare_pair(records[g[0]], records[u], lat[g[0]], lat[u]) for g in groups for c, u in enumerate(g[1:], 1)}
    python_s = time.perf_counter() - t0

    # the dashboard
    t0 = time.perf_counter()
    site = Path(home) / "site"
    cr(home, "dashboard", "build", "--out", site)
    from playwright.sync_api import sync_playwright

    site_pairs, problems = {}, []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.on("pageerror", lambda e: problems.append(str(e)))
        for group in groups:
            page.goto((site / "index.html").as_uri() + "#/compare/" + ",".join(group))
            page.wait_for_selector("#significance", timeout=60_000)
            got = page.evaluate("""([uids, rows]) => Promise.all(uids.map(u => window.CR_SITE.loadResult(u))).then(recs =>
                recs.slice(1).map((r, i) => {
                  const pair = window.CR_SITE.stats.sitePair(recs[0], r);
                  const block = document.querySelector(`#significance .verdicts[data-uid='${r.uid}']`);
                  const shown = {}, table = {};
                  Object.entries(rows).forEach(([key, label]) => {
                    const tr = block && block.querySelector(`tr[data-metric='${label}']`);
                    shown[key] = tr ? tr.getAttribute('data-verdict') : null;
                    const cells = document.querySelectorAll(`#compare tr[data-metric='${label}'] td.result-col`);
                    const d = cells[i + 1] && cells[i + 1].querySelector('.diff');
                    table[key] = d ? d.getAttribute('data-judgement') : null;
                  });
                  return {uid: r.uid, pair: pair, shown: shown, table: table,
                          missingShown: !!(block && block.querySelector('[data-missing]'))};
                }))""", [group, SITE_ROWS])
            for column, g in enumerate(got, start=1):
                site_pairs[(group[0], g["uid"], column)] = g
        # timing: compare_pair on 2048-sample runs, Python against the site's JavaScript
        big = [u for u in uids if lat[u] is not None and len(lat[u]) >= 2048][:6]
        timing_pairs = [(a, b) for a, b in zip(big, big[1:])][:5]
        py_t, js_t = [], []
        for a, b in timing_pairs:
            t = time.perf_counter()
            compare_pair(records[a], records[b], lat[a], lat[b])
            py_t.append(time.perf_counter() - t)
            js_t.append(page.evaluate("""([a, b, la, lb]) => { const t = performance.now();
                window.CR_SITE.stats.comparePair(a, b, la, lb); return (performance.now() - t) / 1000; }""",
                [records[a], records[b], list(lat[a]), list(lat[b])]))
        browser.close()
    site_s = time.perf_counter() - t0

    # count
    disagreements, details, judged = 0, [], 0
    keys = list(python)[:pairs_wanted]
    for key in keys:
        ref = python[key]
        pair_cli, table_cli = cli[key]
        site = site_pairs[key]
        found = diff_pairs("cli", ref, pair_cli) + diff_pairs("dashboard", ref, site["pair"])
        verdicts = {m["metric"]: m["verdict"] for m in ref["metrics"]}
        for k in METRICS:
            v = verdicts.get(k)
            judged += v is not None
            if not ref["missing"] and site["shown"][k] != (v or "unjudged"):
                found.append(f"dashboard block: {k} shows {site['shown'][k]}, not {v}")
            if ref["missing"] and not site["missingShown"]:
                found.append("dashboard block: no missing note")
            tv, within = table_cli.get(k, (None, None))
            if tv != v or within != (None if v is None else v == "inconclusive"):
                found.append(f"cli table: {k} {tv}/{within} vs {v}")
            colour = site["table"][k]
            if k == "throughput_qps" and not same_samples_per_query(records[key[0]], records[key[1]]):
                v = None  # the table's samples/s row takes the queries/s verdict only for equal samples per query
            if colour not in (COLOUR[v], "same") and not (v is None and colour in (None, "unjudged")):
                found.append(f"dashboard table: {k} {colour} vs {v}")
        if found:
            disagreements += 1
            details.append({"pair": list(key[:2]), "what": found})
    verdict_counts = {}
    for key in keys:
        for m in python[key]["metrics"]:
            verdict_counts[str(m["verdict"])] = verdict_counts.get(str(m["verdict"]), 0) + 1
    out = {"records": len(uids), "real": len(real) if real_ok else 0, "pairs": len(keys), "judged_rows": judged,
           "verdicts": verdict_counts, "missing": sum(1 for k in keys if python[k]["missing"]),
           "widened": sum(m["widened"] for k in keys for m in python[k]["metrics"]),
           "thinned_pairs": sum(1 for k in keys if lat[k[0]] is not None and lat[k[1]] is not None
                                and max(len(lat[k[0]]), len(lat[k[1]])) > 2048),
           "disagreements": disagreements, "details": details[:10], "page_errors": problems,
           "seconds": {"setup": round(setup_s, 1), "cli": round(cli_s, 1), "python": round(python_s, 1), "dashboard": round(site_s, 1)},
           "compare_pair_2048": {"python_s_median": statistics.median(py_t) if py_t else None,
                                 "js_s_median": statistics.median(js_t) if js_t else None,
                                 "python_over_js": statistics.median(py_t) / statistics.median(js_t) if py_t and min(js_t) > 0 else None,
                                 "pairs": len(py_t)}}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"store: {out['records']} records ({out['real']} real cr benchmark runs{'' if real_ok else ': none ran, derived from a synthetic run'}); {out['pairs']} random pairs, "
              f"{out['thinned_pairs']} with a run above 2048 samples, {out['missing']} without an interval (no raw samples)")
        print(f"judged rows: {judged}  verdicts: {verdict_counts}  intervals widened to contain their point: {out['widened']}")
        print(f"disagreements (CLI verdicts+intervals, CLI table, dashboard block+table+intervals, vs compare_pair): {disagreements}")
        for d in out["details"]:
            print(f"  {d['pair']}: {'; '.join(d['what'][:4])}")
        t = out["compare_pair_2048"]
        if t["pairs"]:
            print(f"compare_pair, two 2048-sample runs: Python {t['python_s_median'] * 1000:.0f} ms, Chromium "
                  f"{t['js_s_median'] * 1000:.0f} ms (Python / JS = {t['python_over_js']:.1f}), median of {t['pairs']} pairs")
        print(f"seconds: {out['seconds']}")
        if problems:
            print(f"page errors: {problems[:3]}")
    return 1 if disagreements or problems else 0


if __name__ == "__main__":
    sys.exit(main())
