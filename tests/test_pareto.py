"""The Pareto rule every study shares (cr.results.pareto): noise ties, never dominates."""
from __future__ import annotations

import random

import pytest

from cr.errors import CRError
from cr.results import pareto

P50, TOP1, THR = pareto.objective("p50"), pareto.objective("top1"), pareto.objective("throughput")


def fig(value, half=0.0):
    return {"value": value, "lo": value - half, "hi": value + half}


def point(pid, p50, top1, p50_half=0.0, top1_half=0.0, **kw):
    return {"id": pid, "values": {"p50": fig(p50, p50_half), "top1": fig(top1, top1_half)}, **kw}


def status(result):
    return {p["id"]: p["status"] for p in result["points"]}


def test_a_point_worse_on_both_objectives_is_dominated_by_the_one_that_beats_it():
    r = pareto.analyse([point("fast", 10, 0.98), point("slow", 20, 0.90)], [P50, TOP1])
    assert status(r) == {"fast": "front", "slow": "dominated"}
    assert next(p for p in r["points"] if p["id"] == "slow")["dominated_by"] == "fast"
    assert r["front"] == ["fast"]


def test_a_trade_off_keeps_both_points_on_the_front():
    r = pareto.analyse([point("fast-int8", 10, 0.95), point("slow-fp32", 20, 0.99)], [P50, TOP1])
    assert status(r) == {"fast-int8": "front", "slow-fp32": "front"}


def test_equal_accuracy_and_overlapping_latency_intervals_tie_instead_of_dominating():
    # 10.0 +- 0.5 vs 10.3 +- 0.5: the intervals overlap, so neither beats the other on latency;
    # accuracy is the same: the second is tied with the first, not dominated (the dashboard used to
    # draw its line through such points).
    r = pareto.analyse([point("a", 10.0, 0.98, p50_half=0.5), point("b", 10.3, 0.98, p50_half=0.5)], [P50, TOP1])
    assert status(r) == {"a": "front", "b": "tied"}
    assert next(p for p in r["points"] if p["id"] == "b")["tied_with"] == ["a"]


def test_a_difference_below_the_minimum_effect_is_noise_even_with_tight_intervals():
    r = pareto.analyse([point("a", 100.0, 0.9), point("b", 100.5, 0.9)], [P50, TOP1])
    assert status(r) == {"a": "front", "b": "tied"}
    r = pareto.analyse([point("a", 100.0, 0.9), point("b", 102.0, 0.9)], [P50, TOP1])
    assert status(r) == {"a": "front", "b": "dominated"}


def test_infeasible_and_unmeasured_points_take_no_part():
    pts = [point("ok", 20, 0.98), point("fast-but-wrong", 1, 0.50, feasible=False),
           {"id": "no-accuracy", "values": {"p50": fig(1)}}]
    r = pareto.analyse(pts, [P50, TOP1])
    assert status(r) == {"ok": "front", "fast-but-wrong": "infeasible", "no-accuracy": "unmeasured"}


def test_no_objective_and_an_unknown_objective_are_errors_naming_the_choices():
    with pytest.raises(CRError, match="no objective"):
        pareto.analyse([point("a", 1, 1)], [])
    with pytest.raises(CRError, match="unknown") as e:
        pareto.objective("speed")
    assert "p50" in e.value.hint and "energy" in e.value.hint


def test_the_front_is_exactly_the_non_dominated_set_of_random_points_without_noise():
    rng = random.Random(7)
    pts = [point(f"p{i}", rng.uniform(1, 100), rng.uniform(0.5, 1.0)) for i in range(60)]
    r = pareto.analyse(pts, [P50, TOP1], min_effect=0.0)
    brute = {p["id"] for p in pts
             if not any(q["values"]["p50"]["value"] <= p["values"]["p50"]["value"]
                        and q["values"]["top1"]["value"] >= p["values"]["top1"]["value"] and q is not p for q in pts)}
    assert set(r["front"]) == brute


def test_hypervolume_is_exact_in_two_and_three_dimensions():
    objs = [pareto.objective("p50"), pareto.objective("p99")]
    vals = [{"p50": 1, "p99": 3}, {"p50": 2, "p99": 2}, {"p50": 3, "p99": 1}]
    # staircase under reference (4, 4): 3*1 + 2*1 + 1*1 = 6
    assert pareto.hypervolume(vals, objs, {"p50": 4, "p99": 4}) == pytest.approx(6.0)
    # an objective to raise is negated: top1 0.9 and 0.8 against reference 0.5 with p50 1 and 2 (ref 3)
    assert pareto.hypervolume([{"p50": 1, "top1": 0.8}, {"p50": 2, "top1": 0.9}], [P50, TOP1],
                              {"p50": 3, "top1": 0.5}) == pytest.approx(2 * 0.3 + 1 * 0.1)
    objs3 = [pareto.objective("p50"), pareto.objective("p90"), pareto.objective("p99")]
    assert pareto.hypervolume([{"p50": 0, "p90": 0, "p99": 0}], objs3, {"p50": 2, "p90": 3, "p99": 4}) == pytest.approx(24)
    # a dominated point adds nothing
    assert pareto.hypervolume(vals + [{"p50": 3.5, "p99": 3.5}], objs, {"p50": 4, "p99": 4}) == pytest.approx(6.0)


def test_recall_counts_front_points_found_or_tied_and_names_the_missed():
    exhaustive = [point("a", 10, 0.90), point("b", 20, 0.99), point("c", 30, 0.80)]
    assert pareto.recall(exhaustive, [point("a", 10, 0.90)], [P50, TOP1]) == {"recall": 0.5, "matched": 1, "of": 2, "missed": ["b"]}
    # a found configuration measured within noise of b (another run) ties it: matched
    found = [point("a", 10, 0.90), point("b2", 20.1, 0.99)]
    assert pareto.recall(exhaustive, found, [P50, TOP1])["recall"] == 1.0


def test_measure_gives_intervals_from_raw_latencies_and_a_wilson_interval_for_accuracy():
    rng = random.Random(1)
    lat = [int(rng.gauss(1_000_000, 50_000)) for _ in range(400)]
    bench = {"action": "benchmark", "metrics": {"latency_ns": {"p50": 1_000_000, "count": 400},
                                                 "throughput": {"samples_per_s": 1000.0}}}
    m = pareto.measure(bench, [P50, THR, TOP1], lat)
    assert set(m) == {"p50", "throughput"}
    assert m["p50"]["lo"] < m["p50"]["value"] < m["p50"]["hi"]
    assert m["p50"]["hi"] - m["p50"]["lo"] < 0.05 * m["p50"]["value"]
    assert m["throughput"]["lo"] < 1000.0 < m["throughput"]["hi"]
    val = {"action": "validate", "validation": {"task": "classification", "top1": 0.95, "samples": 160}}
    t = pareto.measure(val, [TOP1])["top1"]
    assert t["lo"] == pytest.approx(0.9042, abs=2e-3) and t["hi"] == pytest.approx(0.9753, abs=2e-3)
    assert pareto.missing(bench, [TOP1, pareto.objective("energy")]) == {
        "top1": "a benchmark record measures no top-1", "energy": "no energy meter measured this run"}
