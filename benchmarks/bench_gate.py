"""Error rates of `cr gate`: an injection study on a real model, beside asv's rule and a 200% alert.

    .venv/bin/python benchmarks/bench_gate.py                 # 50 pairs per condition (a few minutes)
    .venv/bin/python benchmarks/bench_gate.py --quick         # 10 pairs, 1000 queries: a look
    .venv/bin/python benchmarks/bench_gate.py --pairs 100 --json gate-figures.json

The model is lenet-digits (repo/model, ONNX) on ONNX Runtime, run in this process with a
plain timed loop (one query = one session.run of a batch-1 input from a seeded pool of
16, timed with perf_counter_ns, as the harness times a single-stream query). Each pair is
a baseline A and a candidate B run interleaved as `cr gate --ab` runs them: --rounds
rounds of A then B, --queries timed queries per side in all, each side's samples pooled
in time order (--mode sequential: all of A, then all of B, as two stored results are).

Conditions, --pairs pairs each:
  unchanged     A and B identical (both call the injected step with 0 ns)
  spin +2/5/10% B's pipeline step spins (a busy loop on perf_counter_ns, until the query's
                start + 2/5/10% of the median query time measured before the study)
  threads 1->2  B's session has intra_op_num_threads=2 (A: 1): a thread-count change,
                whatever slowdown it makes here (its measured size is printed)

Each pair is judged by
  cr gate       cr.results.gate.evaluate (p50, the one statistic cr.results.significance),
                at thresholds 2%, 5% and 10%; a pair whose baseline noise floor makes the
                threshold undetectable counts as refused (cr gate exits 1 with an Error:),
                never as a detection
  asv           Mann-Whitney U two-sided p < 0.002 (normal approximation with tie
                correction) AND ratio of medians >= 1.1 (asv's default factor)
  200%          ratio of medians >= 2.0 (github-action-benchmark's default alert)

Printed per condition: the measured slowdown (median over pairs of B/A of p50), then for
each rule the share of pairs flagged as a regression (detection rate; for "unchanged",
the false-positive rate), and for the gate its PASS / INCONCLUSIVE / refused shares.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODEL = ROOT / "repo" / "model" / "lenet-digits" / "1.0.0" / "lenet-digits.onnx"
THRESHOLDS = (0.02, 0.05, 0.10)


# ----------------------------------------------------------------------------- the runs

def session(threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(MODEL), sess_options=options, providers=["CPUExecutionProvider"])


def inputs(sess, pool: int = 16):
    import numpy as np

    meta = sess.get_inputs()[0]
    shape = [1 if not isinstance(d, int) else d for d in meta.shape]
    rng = np.random.default_rng(0)
    return meta.name, [rng.random(shape, dtype=np.float32) for _ in range(pool)]


def spin_until(deadline: int) -> None:
    """The injected pipeline step: busy-wait until perf_counter_ns() reaches deadline (the
    query's start + the injected time; the baseline's deadline is its start: one clock read)."""
    clock = time.perf_counter_ns
    while clock() < deadline:
        pass


def timed(sess, name, pool, extra_ns: int, queries: int, out: array) -> float:
    """queries timed queries appended to out; returns the seconds they took."""
    clock = time.perf_counter_ns
    run = sess.run
    started = clock()
    for i in range(queries):
        x = pool[i % len(pool)]
        t0 = clock()
        spin_until(t0 + extra_ns)
        run(None, {name: x})
        out.append(clock() - t0)
    return (clock() - started) / 1e9


def record(uid: str, threads: int, seconds: float, count: int) -> dict:
    """A minimal valid-looking benchmark record for the gate (what a stored result carries)."""
    return {"uid": uid, "action": "benchmark", "status": "ok",
            "components": [{"kind": "model", "ref": "model:lenet-digits@1.0.0"}],
            "backend": {"name": "onnxruntime"}, "config": {"scenario": "single-stream", "threads": threads},
            "metrics": {"scenario": "single-stream", "queries": count, "duration_s": seconds,
                        "throughput": {"queries_per_s": count / seconds}},
            "platform": {"fingerprint": "bench"}}


def pair(a: tuple, b: tuple, queries: int, rounds: int, mode: str, index: int):
    """(record A, latencies A, record B, latencies B) of one interleaved (or sequential) pair.
    a, b: (session, input name, pool, extra ns, threads)."""
    lat = {"A": array("q"), "B": array("q")}
    secs = {"A": 0.0, "B": 0.0}
    per = max(1, queries // rounds)
    order = [("A", a), ("B", b)] * rounds if mode == "ab" else [("A", a)] * rounds + [("B", b)] * rounds
    for side, (sess, name, pool, extra, _threads) in order:
        secs[side] += timed(sess, name, pool, extra, per, lat[side])
    from cr.results.gate import with_figures  # the figures a stored record states of its samples

    return (with_figures(record(f"a{index}", a[4], secs["A"], len(lat["A"])), lat["A"]), lat["A"],
            with_figures(record(f"b{index}", b[4], secs["B"], len(lat["B"])), lat["B"]), lat["B"])


# ----------------------------------------------------------------------------- the rules

def mann_whitney_p(x, y) -> float:
    """Two-sided p of the Mann-Whitney U test, normal approximation with tie correction."""
    n1, n2 = len(x), len(y)
    merged = sorted([(v, 0) for v in x] + [(v, 1) for v in y])
    ranks_x = 0.0
    ties = 0.0
    i, n = 0, n1 + n2
    while i < n:
        j = i
        while j + 1 < n and merged[j + 1][0] == merged[i][0]:
            j += 1
        rank = (i + j) / 2 + 1
        size = j - i + 1
        ties += size ** 3 - size
        ranks_x += rank * sum(1 for k in range(i, j + 1) if merged[k][1] == 0)
        i = j + 1
    u = ranks_x - n1 * (n1 + 1) / 2
    mean = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (abs(u - mean) - 0.5) / math.sqrt(var)
    return math.erfc(max(z, 0) / math.sqrt(2))


def median(values) -> float:
    return statistics.median(values)


def judge(ra, la, rb, lb) -> dict:
    from cr.results.gate import Side, evaluate

    report = evaluate(Side.of(ra, la, "bench"), Side.of(rb, lb, "bench"), metric="p50", threshold=0.05,
                      check_floor=False)
    ratio = median(lb) / median(la)
    return {"slowdown": report["slowdown"], "ci": report["ci"],
            "detectable": (report["noise_floor"] or {}).get("detectable"),
            "asv": ratio >= 1.1 and mann_whitney_p(la, lb) < 0.002, "alert200": ratio >= 2.0}


def gate_verdict(j: dict, threshold: float) -> str:
    from cr.results.gate import decide

    if j["detectable"] is not None and threshold < j["detectable"]:
        return "REFUSED"
    return decide(j["ci"][0], j["ci"][1], threshold)


# ----------------------------------------------------------------------------- the study

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=50, help="pairs per condition (default 50)")
    parser.add_argument("--queries", type=int, default=2000, help="timed queries per side of a pair (default 2000)")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds per pair (default 4)")
    parser.add_argument("--mode", choices=["ab", "sequential"], default="ab")
    parser.add_argument("--quick", action="store_true", help="10 pairs of 1000 queries")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.pairs, args.queries = min(args.pairs, 10), min(args.queries, 1000)
    started = time.time()
    one, two = session(1), session(2)
    name, pool = inputs(one)
    for s in (one, two):  # warm both up
        timed(s, name, pool, 0, 2000, array("q"))
    calib = array("q")
    timed(one, name, pool, 0, 5000, calib)
    m = median(calib)
    base = (one, name, pool, 0, 1)
    conditions = [("unchanged", base, base)]
    for pct in (2, 5, 10):
        conditions.append((f"spin +{pct}%", base, (one, name, pool, int(round(m * pct / 100)), 1)))
    conditions.append(("threads 1->2", base, (two, name, pool, 0, 2)))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"lenet-digits on onnxruntime, median query {m / 1e3:.2f} us; {args.pairs} pairs x {args.queries} queries a side, "
          f"{args.rounds} rounds ({args.mode}); load average {load:.2f} on {os.cpu_count()} CPUs", flush=True)
    rows = []
    for label, a, b in conditions:
        judged = []
        for i in range(args.pairs):
            judged.append(judge(*pair(a, b, args.queries, args.rounds, args.mode, i)))
        row = {"condition": label, "pairs": len(judged),
               "measured_slowdown": median([j["slowdown"] for j in judged]),
               "asv": sum(j["asv"] for j in judged) / len(judged),
               "alert200": sum(j["alert200"] for j in judged) / len(judged),
               "median_detectable": median([j["detectable"] for j in judged if j["detectable"] is not None] or [float("nan")]),
               "median_halfwidth": median([(j["ci"][1] - j["ci"][0]) / 2 for j in judged]),
               "slowdown_p10_p90": _spread([j["slowdown"] for j in judged])}
        for t in THRESHOLDS:
            verdicts = [gate_verdict(j, t) for j in judged]
            row[f"gate@{t:g}"] = {v: verdicts.count(v) / len(verdicts) for v in ("REGRESSION", "PASS", "INCONCLUSIVE", "REFUSED")}
        rows.append(row)
        print(_line(row), flush=True)
    seconds = time.time() - started
    print(f"\n{sum(r['pairs'] for r in rows)} pairs in {seconds:.0f} s. Columns: share of pairs flagged REGRESSION "
          f"(detection rate; false-positive rate for 'unchanged'); the gate's [PASS/INCONCLUSIVE/refused] after it.")
    if args.json:
        Path(args.json).write_text(json.dumps({"median_query_ns": m, "load_average": load, "args": vars(args),
                                               "seconds": seconds, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    return 0


def _spread(values: list) -> list:
    """The 10th and 90th percentiles of the pairs' own slowdowns (how fixed the injection was)."""
    ordered = sorted(values)
    return [ordered[int(0.1 * (len(ordered) - 1))], ordered[int(round(0.9 * (len(ordered) - 1)))]]


def _line(row: dict) -> str:
    def pct(x):
        return f"{100 * x:5.1f}%"

    lo, hi = row["slowdown_p10_p90"]
    cells = [f"{row['condition']:<13}", f"slowdown {row['measured_slowdown']:.3f} (p10-p90 {lo:.3f}-{hi:.3f})",
             f"halfwidth {100 * row['median_halfwidth']:.2f}%", f"detectable {100 * row['median_detectable']:.1f}%"]
    for t in THRESHOLDS:
        g = row[f"gate@{t:g}"]
        cells.append(f"gate@{100 * t:g}% {pct(g['REGRESSION'])} [{pct(g['PASS'])}/{pct(g['INCONCLUSIVE'])}/{pct(g['REFUSED'])}]")
    cells += [f"asv {pct(row['asv'])}", f"200% {pct(row['alert200'])}"]
    return "  ".join(cells)


if __name__ == "__main__":
    sys.exit(main())
