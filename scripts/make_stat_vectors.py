"""Regenerate tests/fixtures/stat_vectors.json: the comparisons that cr/results/significance.py
and dashboard/lib/stats.js must both reproduce (tests/test_stat_vectors.py).

Run it only to change the statistic on purpose (its constants, its algorithm): the file is
what the two implementations are held to, and a diff of it shows what the change moved.

    .venv/bin/python scripts/make_stat_vectors.py

Inputs are pairs of raw latency arrays in time order, with records whose figures the harness
computes from them (cr.runtime.stats.summarize: numpy), so the points are what `cr benchmark`
would record; outputs are cr.results.significance.compare_pair's, with its default settings.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cr.results.significance import RESAMPLES, SAMPLES_MAX, SEED, compare_pair, settings  # noqa: E402
from cr.runtime.stats import summarize  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "stat_vectors.json"


def record(uid: str, lat, scenario: str = "single-stream", batch: int = 1, **extra) -> dict:
    """A record as the harness writes its figures (all samples), trimmed to what a comparison reads."""
    rec = {"uid": uid, "status": "ok", "raw": {"count": len(lat)}, "metrics": {"scenario": scenario}}
    if lat:
        s = summarize(lat)
        seconds = sum(lat) / 1e9
        rec["metrics"]["latency_ns"] = {k: s[k] for k in ("p50", "p90", "p99", "mean")}
        rec["metrics"]["throughput"] = {"queries_per_s": len(lat) / seconds if seconds else 0.0,
                                        "samples_per_s": batch * len(lat) / seconds if seconds else 0.0}
    rec.update(extra)
    return rec


def lognormal(rng, n, center, sigma=0.2):
    return [int(center * rng.lognormvariate(0, sigma)) for _ in range(n)]


def heavy(rng, n, center, tail=0.03):
    """A floor with a Pareto tail: a few queries 10-1000x slower (a page fault, a preemption)."""
    return [int(center * (rng.paretovariate(1.1) * 10 if rng.random() < tail else rng.lognormvariate(0, 0.05)))
            for _ in range(n)]


def stretch(rng, n, center, at, length, factor):
    lat = lognormal(rng, n, center, 0.03)
    return [int(x * factor) if at <= i < at + length else x for i, x in enumerate(lat)]


def cases() -> list[dict]:
    rng = random.Random(26)
    out = []

    def add(name, a, b, lat_a, lat_b):
        out.append({"name": name, "a": a, "b": b, "lat_a": lat_a, "lat_b": lat_b})

    def pair(name, la, lb, **kw):
        add(name, record("a" + name[:15], la, **kw), record("b" + name[:15], lb, **kw), la, lb)

    pair("same distribution", lognormal(rng, 300, 1e6), lognormal(rng, 300, 1e6))
    pair("20% slower", lognormal(rng, 500, 1e6), lognormal(rng, 500, 1.2e6))
    pair("10% faster, few", lognormal(rng, 40, 1e5, 0.05), lognormal(rng, 40, 0.9e5, 0.05))
    pair("2% slower, tight", lognormal(rng, 800, 1e6, 0.01), lognormal(rng, 800, 1.02e6, 0.01))
    pair("heavy tails", heavy(rng, 400, 2e5), heavy(rng, 350, 2e5))
    pair("heavy tail in B only", lognormal(rng, 300, 2e5, 0.05), heavy(rng, 300, 2e5, 0.1))
    pair("ties: quantised", [1000 * (x // 1000) for x in lognormal(rng, 200, 5e4)],
         [1000 * (x // 1000) for x in lognormal(rng, 220, 5.5e4)])
    pair("ties: constant runs", [70000] * 60, [77000] * 60)
    pair("ties: two values", [rng.choice((1000, 2000)) for _ in range(100)], [rng.choice((1000, 2000, 2000)) for _ in range(100)])
    pair("minimum samples", lognormal(rng, 20, 1e6), lognormal(rng, 20, 1.5e6))
    pair("thinned: above 2048", lognormal(rng, 4100, 1e6, 0.1), lognormal(rng, 2049, 1.05e6, 0.1))
    pair("thinned: heavy tails", heavy(rng, 2500, 3e5, 0.02), heavy(rng, 3000, 3e5, 0.02))
    pair("thinned: a slow stretch", stretch(rng, 2400, 1e6, 800, 300, 1.3), lognormal(rng, 2100, 1e6, 0.03))
    # a run that slows in its last queries: a moving-block bootstrap samples a run's ends less
    # often than its middle, so the resamples' mean (or p99) stays below the run's: the interval
    # is widened to contain its point
    for n, k, seed in ((500, 5, 6), (1001, 3, 0), (200, 1, 1)):
        own = random.Random(seed)
        la, lb = lognormal(own, n, 1e5, 0.02), lognormal(own, n, 1e5, 0.02)
        pair(f"slow end {n}/{k}", la, lb[:n - k] + [x * 10 for x in lb[n - k:]])
    pair("server scenario", lognormal(rng, 200, 1e6), lognormal(rng, 200, 1.3e6), scenario="server")
    pair("offline scenario", lognormal(rng, 200, 1e6), lognormal(rng, 200, 1.3e6), scenario="offline")
    la, lb = lognormal(rng, 300, 1e6), lognormal(rng, 300, 1.1e6)
    add("batch sizes differ", record("abatch", la), record("bbatch", lb, batch=4), la, lb)
    la, lb = [0] * 150 + lognormal(rng, 50, 1e3), lognormal(rng, 200, 1e3)
    add("zero latencies", record("azero", la), record("bzero", lb), la, lb)
    la, lb = lognormal(rng, 100, 1e6), lognormal(rng, 100, 1e6)
    b = record("bnop90", lb)
    del b["metrics"]["latency_ns"]["p90"]
    add("a record without p90", record("anop90", la), b, la, lb)
    la, lb = lognormal(rng, 200, 1e6), lognormal(rng, 200, 1.2e6)
    # figures that are not the samples' (a record whose summary and samples disagree): the
    # interval is centred on the figures, widened when they fall outside it
    b = record("bshifted", lb)
    b["metrics"]["latency_ns"]["p99"] *= 3
    add("figures off the samples", record("ashifted", la), b, la, lb)
    add("no raw samples", record("anoraw", la), {**record("bnoraw", lb), "raw": None}, la, None)
    add("raw unreadable", record("aunread", la), record("bunread", lb), la, None)
    add("too few samples", record("afew", la), record("bfew", lb[:10]), la, lb[:10])
    add("failed run", record("afail", la), {**record("bfail", lb), "status": "failed"}, la, None)
    # random small pairs of every shape, to cover what the named ones do not
    for i in range(12):
        n_a, n_b = rng.choice((25, 60, 150, 400)), rng.choice((25, 60, 150, 400))
        make = rng.choice((lognormal, heavy))
        la, lb = make(rng, n_a, 1e5), make(rng, n_b, 1e5 * rng.choice((0.8, 0.97, 1.0, 1.03, 1.25)))
        pair(f"random {i}", la, lb)
    return out


def main() -> int:
    vectors = []
    for case in cases():
        case["expected"] = compare_pair(case["a"], case["b"], case["lat_a"], case["lat_b"])
        vectors.append(case)
    rows = [m for v in vectors for m in v["expected"]["metrics"]]
    assert any(len(v["lat_a"] or []) > SAMPLES_MAX for v in vectors), "no case exercises the thinning"
    assert {m["verdict"] for m in rows} >= {"faster", "slower", "inconclusive", None}, "a verdict is never exercised"
    assert any(m["widened"] for m in rows), "no case exercises the widening"
    doc = {"about": "cr/results/significance.py and dashboard/lib/stats.js must both reproduce these "
                    "(tests/test_stat_vectors.py); regenerate deliberately with scripts/make_stat_vectors.py",
           "settings": settings(), "vectors": vectors}
    assert doc["settings"]["resamples"] == RESAMPLES and doc["settings"]["seed"] == SEED
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n", encoding="utf-8")
    widened = sum(m["widened"] for m in rows)
    print(f"{OUT.relative_to(ROOT)}: {len(vectors)} pairs, {len(rows)} judged rows ({widened} widened), "
          f"{OUT.stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
