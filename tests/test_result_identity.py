"""A result is identified by its full configuration (action, scenario, threads, batch size,
backend options, variant, ...): pack keeps one reference per configuration, reproduce
compares each with its own counterpart, compare names configuration differences; every
kind of solution reproduces to a clear outcome; `cr results show` shows a failure's own
words, escaped."""
from __future__ import annotations

import json
import random
import re
import zipfile
from array import array
from pathlib import Path

import pytest

from conftest import make_component, make_repo, write_json

# tiny runs: the harness's own cost, no framework (the null backend), no dataset to load
TINY = {"min_duration_s": 0, "min_queries": 20, "warmup_queries": 2, "seed": 0, "inputs": "synthetic"}
CONFIGS = [("single-stream", 1), ("single-stream", 2), ("offline", 1), ("offline", 2)]


def _benchmark_only_solution(tmp_path: Path, run_cr, name: str = "four", **changes) -> Path:
    """solution:NAME: lenet-digits on the null backend, four declared benchmarks (two
    scenarios x threads 1 and 2), no validate."""
    repo = make_repo(tmp_path / "sols", "sols")
    fields = dict(
        model="model:lenet-digits@1.0.0", dataset="dataset:digits@1.0.0", backend="null", license="MIT",
        deps=["software:python@>=3.9", "software:numpy@>=1.23"],
        actions=[{"action": "benchmark", "params": {"scenario": scenario, "threads": threads, "batch_size": 1, **TINY}}
                 for scenario, threads in CONFIGS],
    )
    fields.update(changes)
    path = make_component(repo, "solution", name, **fields)
    assert run_cr("repo", "add", repo).returncode == 0
    return path


def _ok(done):
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_four_configurations_pack_four_references_and_each_reproduces_against_its_own(run_cr, tmp_path):
    _benchmark_only_solution(tmp_path, run_cr)
    _ok(run_cr("init", "solution", "four"))
    _ok(run_cr("benchmark", "solution", "four"))
    listed = json.loads(_ok(run_cr("results", "list", "--solution", "four", "--json")).stdout)
    assert len(listed) == 4

    packed = json.loads(_ok(run_cr("pack", "solution", "four", "-o", tmp_path / "out", "--json")).stdout)
    assert len(packed["results"]) == 4 and packed["lock"]  # one reference per configuration, not per scenario
    with zipfile.ZipFile(packed["archive"]) as zf:
        refs = [json.loads(zf.read(name)) for name in packed["results"]]
    assert sorted((r["config"]["scenario"], r["config"]["threads"]) for r in refs) == sorted(CONFIGS)
    by_uid = {r["uid"]: r for r in refs}
    text = _ok(run_cr("pack", "solution", "four", "-o", tmp_path / "out2")).stdout
    assert "with 4 reference result(s)" in text and "offline threads=2 batch=1" in text  # each named

    # another machine: a fresh CR_HOME; a benchmark-only solution reproduces to PASS
    other = {"CR_HOME": str(tmp_path / "other-home")}
    done = _ok(run_cr("reproduce", packed["archive"], env=other, timeout=300))
    assert "outcome: PASS" in done.stdout and "nothing found" not in done.stderr
    # one verdict line per configuration; performance shown in the tables' units, not judged (no tolerance)
    for scenario, threads in CONFIGS:
        label = f"benchmark {scenario} threads={threads} batch=1 inputs=synthetic"
        assert any(l.startswith("PASS") and label in l for l in done.stdout.splitlines()), label
    assert done.stdout.count("not judged: no tolerance declared") == 4 * (3 + 1) and "samples/s" in done.stdout  # figures + rule
    assert "e+0" not in done.stdout, done.stdout
    assert re.search(r"p50 latency +here [\d.]+ (ns|us|ms), reference [\d.]+ (ns|us|ms)", done.stdout), done.stdout
    report = json.loads(_ok(run_cr("reproduce", packed["archive"], "--json", env=other, timeout=300)).stdout)
    assert report["outcome"] == "PASS" and report["checks"] == [] and report["unmatched"] == []
    assert [l["verdict"] for l in report["lines"]] == ["PASS"] * 4 and all(l["reference_uid"] for l in report["lines"])
    assert all("performance not judged: no tolerance declared" in l["rule"] for l in report["lines"])
    rows = report["performance"]
    # the label names every setting that ran: these ran on synthetic inputs
    assert sorted(r["config"] for r in rows) == sorted(f"{s} threads={t} batch=1 inputs=synthetic" for s, t in CONFIGS)
    for row in rows:
        ref = by_uid[row["reference_uid"]]  # compared with the reference of its own configuration
        assert f"{ref['config']['scenario']} threads={ref['config']['threads']} batch=1 inputs=synthetic" == row["config"]
        assert row["p50_ns"]["reference"] == ref["metrics"]["latency_ns"]["p50"]
        assert row["p50_ns"]["here"] and row["p50_ns"]["ratio"] and row["samples_per_s"]["ratio"]
        here = json.loads(_ok(run_cr("results", "show", row["here_uid"], "--json", env=other)).stdout)
        assert (here["config"]["scenario"], here["config"]["threads"]) == (ref["config"]["scenario"], ref["config"]["threads"])

    # cr pack --result FILE keeps the lock that result ran with
    one = next(r["file"] for r in listed if r["scenario"] == "offline")
    packed = json.loads(_ok(run_cr("pack", "solution", "four", "-o", tmp_path / "out3", "--result", one, "--json")).stdout)
    assert packed["lock"] == "lock.json" and len(packed["results"]) == 1


def test_a_benchmark_only_solution_without_references_passes(run_cr, tmp_path):
    done = run_cr("reproduce", "solution:iris-logreg-onnxruntime", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "outcome: PASS" in done.stdout and "no reference results: checked that every run succeeds" in done.stdout
    assert "NO-REFERENCE" not in done.stdout + done.stderr and "nothing found" not in done.stderr


def test_a_declared_performance_tolerance_fails_a_run_beyond_it(run_cr, tmp_path):
    # a declared value to judge against (no reference): p50 at most 1 ns is impossible
    _benchmark_only_solution(tmp_path, run_cr, "fast", expected={"p50_ns": {"value": 1, "rel": 0.5}},
                             actions=[{"action": "benchmark", "params": {"scenario": "single-stream", **TINY}}])
    assert run_cr("check", "solution:fast").returncode == 0  # the schema takes performance tolerances
    done = run_cr("reproduce", "solution:fast", timeout=300)
    assert done.returncode == 1 and "outcome: FAIL" in done.stdout and "FAIL (p50_ns declared rel 0.5, value 1)" in done.stdout
    # judged on the figure against the declared value, in the table's units (never 8.19976e+06)
    assert "Error: reproduction of solution:fast@1.0.0: FAIL (1 of 1 configurations)" in done.stderr
    assert "against the declared value 1 ns" in done.stderr and "e+0" not in done.stdout + done.stderr


# -- the comparison, on records -------------------------------------------------------------

def _record(uid: str, action: str = "benchmark", threads: int = 1, scenario: str = "single-stream",
            p50: float = 100_000.0, top1: float | None = None, software: dict | None = None) -> dict:
    config = {"threads": threads, "batch_size": 1, "backend": "onnxruntime", "variant": "onnx",
              "dataset": "dataset:digits@1.0.0", "split": "test"}
    if action == "benchmark":
        config.update({"scenario": scenario, "engine": "cr", "inputs": "auto"})
    rec = {"uid": uid, "action": action, "status": "ok", "started": "2026-03-01T10:00:00.000Z", "config": config,
           "backend": {"name": "onnxruntime", "options": {}}, "pipeline": {"sha256": "ab", "variant": "onnx", "precision": "fp32"},
           "model_file": {"sha256": "cd"},
           "lock": {"software": [{"name": n, "version": v} for n, v in (software or {"onnxruntime": "1.32.0"}).items()]}}
    if action == "benchmark":
        rec["metrics"] = {"scenario": scenario, "batch_size": 1, "latency_ns": {"p50": p50, "p99": 2 * p50},
                          "throughput": {"queries_per_s": 1e9 / p50, "samples_per_s": 1e9 / p50}}
    else:
        rec["validation"] = {"top1": top1, "top5": 1.0, "checks": []}
    return rec


def test_configuration_key_and_label():
    from cr.results.summary import config_differences, config_key, config_label

    a, b = _record("a", threads=1), _record("b", threads=2)
    assert config_key(a) != config_key(b) and config_key(a) == config_key(_record("c", threads=1, p50=5.0))
    assert config_label(b) == "single-stream threads=2 batch=1"
    assert config_differences(a, b) == [("threads", 1, 2)]
    c = _record("c")
    c["backend"]["options"] = {"intra_op_threads": 4}
    c["config"]["backend_options"] = {"intra_op_threads": 4}
    assert [d[0] for d in config_differences(a, c)] == ["backend_options"]


def test_each_reference_is_compared_with_its_own_configuration():
    from cr.run.reproduce import compare

    reference = [_record("r1", threads=1, p50=100.0), _record("r2", threads=2, p50=60.0), _record("r4", threads=4)]
    here = [_record("h2", threads=2, p50=66.0), _record("h1", threads=1, p50=110.0), _record("h8", threads=8)]
    report = compare(reference, here, {})
    pairs = {r["reference_uid"]: (r["here_uid"], r["p50_ns"]["ratio"]) for r in report["performance"] if r["reference_uid"]}
    assert pairs == {"r1": ("h1", 1.1), "r2": ("h2", 1.1)}
    unmatched = {(u["side"], u["uid"]) for u in report["unmatched"]}
    assert unmatched == {("reference", "r4"), ("here", "h8")}
    assert report["outcome"] == "PASS" and any("threads 4 vs 8" in n for n in report["notes"])


def test_declared_performance_tolerance_against_the_reference():
    from cr.run.reproduce import compare

    reference, here = [_record("r", p50=100.0)], [_record("h", p50=200.0)]
    assert compare(reference, here, {"p50_ns": {"rel": 0.5}})["outcome"] == "FAIL"
    report = compare(reference, here, {"p50_ns": {"rel": 1.5}})
    assert report["outcome"] == "PASS" and report["performance"][0]["p50_ns"]["ok"] is True
    assert compare(reference, [_record("h", p50=10.0)], {"p50_ns": {"rel": 0.1}})["outcome"] == "PASS"  # faster is no miss


def _timed(uid: str, lat, busy: float = 0.01) -> dict:
    """A benchmark record whose summary is its raw samples' (lat), with a machine summary."""
    rec = _record(uid, p50=float(sorted(lat)[len(lat) // 2]))
    mean = sum(lat) / len(lat)
    rec["metrics"]["latency_ns"]["p99"] = float(sorted(lat)[int(0.99 * (len(lat) - 1))])
    rec["metrics"]["throughput"] = {"queries_per_s": 1e9 / mean, "samples_per_s": 1e9 / mean}
    rec["machine"] = {"summary": {"governor": "performance", "freq_mhz_max": 3000.0, "cpu_other_share": busy,
                                  "throttled": False, "temp_c_max": 50.0, "swap_activity": False}}
    return rec


def _samples(seed: int, center: float, scale: float = 1.0, n: int = 2000) -> array:
    rng = random.Random(seed)
    return array("q", (int(scale * center * rng.lognormvariate(0, 0.04)) for _ in range(n)))


def _verdict(ref_lat, here_lat, expected, busy: float = 0.01):
    from cr.run.reproduce import compare

    lat = {"r": ref_lat, "h": here_lat}
    ref, here = _timed("r", ref_lat), _timed("h", here_lat, busy)
    ref["started"] = "2026-03-01T09:00:00.000Z"
    return compare([ref], [here], expected, lambda record: lat.get(record["uid"]))


def test_a_declared_tolerance_is_judged_on_the_interval_per_configuration():
    ref = _samples(1, 4.76e6)
    # met beyond noise: the same speed (different samples), limit 1.5
    met = _verdict(ref, _samples(2, 4.76e6), {"p50_ns": {"rel": 0.5}})
    line = met["lines"][0]
    p50 = line["performance"][0]
    assert met["outcome"] == "PASS" and line["verdict"] == "PASS" and p50["ci"][1] < 1.5
    assert "the whole interval lies within the limit, ratio at most 1.500 (declared rel 0.5)" in line["rule"]
    assert p50["reference_text"].endswith(" ms") and p50["judged"][0]["bound"] == 1.5
    # missed beyond noise: three times slower, and the interval says so whatever the load
    missed = _verdict(ref, _samples(2, 4.76e6, scale=3), {"p50_ns": {"rel": 0.5}}, busy=0.6)
    line = missed["lines"][0]
    assert missed["outcome"] == "FAIL" and line["verdict"] == "FAIL" and line["performance"][0]["ci"][0] > 1.5
    assert "the whole interval lies beyond the limit" in line["rule"] and "14.2" in line["performance"][0]["here_text"]
    assert line["likely_causes"][0].startswith("background CPU load") and missed["performance"][0]["p50_ns"]["ok"] is False
    # at the limit: 1.5 times the reference's own samples; the interval straddles 1.5
    at_limit = _verdict(ref, array("q", (int(1.5 * x) for x in ref)), {"p50_ns": {"rel": 0.5}}, busy=0.6)
    line = at_limit["lines"][0]
    lo, hi = line["performance"][0]["ci"]
    assert lo < 1.5 < hi and at_limit["outcome"] == "INCONCLUSIVE" and line["verdict"] == "INCONCLUSIVE"
    assert "straddles the limit" in line["rule"] and "cannot be told from noise" in line["rule"]
    assert [c.split(":")[0] for c in line["likely_causes"]] == ["background CPU load", "noise"]
    assert at_limit["performance"][0]["p50_ns"]["ok"] is None and at_limit["failures"][0]["verdict"] == "INCONCLUSIVE"
    # a throughput tolerance: higher is better, the limit is 1 - rel
    slow = _verdict(ref, _samples(2, 4.76e6, scale=3), {"queries_per_s": {"rel": 0.5}})
    tput = slow["lines"][0]["performance"][2]
    assert slow["outcome"] == "FAIL" and tput["judged"][0]["bound"] == 0.5 and tput["ci"][1] < 0.5


def test_without_a_tolerance_performance_is_shown_not_judged():
    ref = _samples(1, 4.76e6)
    report = _verdict(ref, _samples(2, 4.76e6, scale=3), {}, busy=0.6)
    line = report["lines"][0]
    assert report["outcome"] == "PASS" and line["verdict"] == "PASS"  # slower, but no tolerance was declared
    assert [r["comparison"] for r in line["performance"]] == ["slower"] * 3 and all(not r["judged"] for r in line["performance"])
    assert line["rule"] == "the run here succeeded; performance not judged: no tolerance declared"


def test_without_raw_samples_a_tolerance_is_judged_on_the_point_saying_why():
    from cr.run.reproduce import compare

    report = compare([_record("r", p50=4.76e6)], [_record("h", p50=8.2e6)], {"p50_ns": {"rel": 0.5}})
    line = report["lines"][0]
    assert report["outcome"] == "FAIL" and line["performance"][0]["ci"] is None
    assert "judged on the point ratio: no interval" in line["rule"] and "ratio 1.723 beyond the limit" in line["rule"]
    assert any("no confidence interval: result r carries no raw latencies" in n for n in line["notes"])
    assert line["performance"][0]["here_text"] == "8.20 ms" and line["performance"][0]["reference_text"] == "4.76 ms"


def test_accuracy_is_judged_on_the_line_of_each_benchmark_of_its_stack():
    from cr.run.reproduce import compare

    reference = [_record("r1", threads=1), _record("r2", threads=2), _record("rv", action="validate", top1=0.98)]
    here = [_record("h1", threads=1), _record("h2", threads=2), _record("hv", action="validate", top1=0.90)]
    report = compare(reference, here, {})
    assert [(l["config"], l["verdict"]) for l in report["lines"]] == [
        ("single-stream threads=1 batch=1", "FAIL"), ("single-stream threads=2 batch=1", "FAIL")]
    line = report["lines"][0]
    assert line["accuracy_from"] == "hv" and "top1 0.9000 vs 0.9800" in line["rule"] and report["outcome"] == "FAIL"
    assert [c["metric"] for c in report["checks"]] == ["top1", "top5"]  # each check once in the flat list
    failed = _record("h1", threads=1)
    failed.update(status="failed", error={"message": "onnxruntime could not load the model"})
    report = compare(reference[:1], [failed], {})
    assert [(l["verdict"], l["reference_uid"]) for l in report["lines"]] == [("FAIL", "r1")]
    assert report["lines"][0]["rule"] == "the run here failed: onnxruntime could not load the model"


@pytest.mark.parametrize("scale, code, outcome", [(1.0, 0, "PASS"), (3.0, 1, "FAIL"), (1.5, 2, "INCONCLUSIVE")])
def test_reproduce_exit_status_follows_the_outcome(monkeypatch, capsys, scale, code, outcome):
    import cr.run.reproduce as reproduce
    from cr.cli.main import main

    ref = _samples(1, 4.76e6)
    here = array("q", (int(scale * x) for x in ref)) if scale == 1.5 else _samples(2, 4.76e6, scale=scale)

    def fake(source, offline=False, trust=False):
        report = _verdict(ref, here, {"p50_ns": {"rel": 0.5}})
        report.update(solution="solution:fake@1.0.0", platforms={"reference": "x86_64", "here": "x86_64"},
                      failed_runs=[], not_stored=None)
        return report

    monkeypatch.setattr(reproduce, "reproduce", fake)
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "solution:fake"])
    out, err = capsys.readouterr()
    assert exc.value.code == code and f"outcome: {outcome}" in out
    assert re.search(rf"^{outcome} +benchmark single-stream threads=1 batch=1 ", out, re.M)
    assert re.search(r"p50 latency +here [\d.]+ ms, reference 4\.7\d ms +ratio [\d.]+, 95% interval", out)
    assert "e+0" not in out + err
    if outcome == "FAIL":
        assert err.startswith("Error: reproduction of solution:fake@1.0.0: FAIL (1 of 1 configurations)")
    if outcome == "INCONCLUSIVE":
        assert "Warning: reproduction of solution:fake@1.0.0: INCONCLUSIVE" in err and "Error:" not in err
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "solution:fake", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert exc.value.code == code and report["outcome"] == outcome and report["lines"][0]["verdict"] == outcome


def test_accuracy_tolerance_says_which_applied_and_why():
    from cr.run.reproduce import compare

    ref = _record("r", action="validate", top1=0.9800, software={"onnxruntime": "1.20.0", "numpy": "2.0.0"})
    same = _record("h", action="validate", top1=0.9790, software={"onnxruntime": "1.20.0", "numpy": "2.0.0"})
    other = _record("h", action="validate", top1=0.9790, software={"onnxruntime": "1.32.0", "numpy": "2.0.0"})
    exact = compare([ref], [same], {})
    top1 = next(c for c in exact["checks"] if c["metric"] == "top1")
    assert top1["tolerance"]["basis"] == "identical stack: exact" and not top1["ok"] and exact["outcome"] == "FAIL"
    default = compare([ref], [other], {})
    top1 = next(c for c in default["checks"] if c["metric"] == "top1")
    assert top1["tolerance"]["basis"] == "default: stacks differ (onnxruntime 1.20.0 vs 1.32.0)"
    assert top1["allowed"] == 0.005 and top1["ok"] and default["outcome"] == "PASS"
    declared = compare([ref], [other], {"top1": {"value": 0.98, "abs": 0.0001}})
    top1 = next(c for c in declared["checks"] if c["metric"] == "top1")
    assert top1["tolerance"]["basis"] == "declared" and not top1["ok"]


# -- cr results compare / show / list -------------------------------------------------------

def test_compare_names_a_configuration_difference(run_cr):
    uids = []
    for threads in (1, 2):
        done = _ok(run_cr("benchmark", "model", "lenet-digits", "--backend", "null", "--min-duration", "0",
                          "--min-queries", "20", "--warmup", "2", "--inputs", "synthetic", "--threads", str(threads), "--json"))
        uids.append(json.loads(done.stdout)["uid"])
    done = _ok(run_cr("results", "compare", *uids))
    assert "config differs: threads 1 vs 2" in done.stdout + done.stderr
    report = json.loads(_ok(run_cr("results", "compare", *uids, "--json")).stdout)
    assert report["config"][1]["differences"] == [{"field": "threads", "baseline": 1, "value": 2}]
    listed = _ok(run_cr("results", "list")).stdout
    assert "samples/s" in listed and "q/s" not in listed


def test_show_of_a_failed_result_shows_its_traceback(run_cr):
    done = run_cr("benchmark", "model", "lenet-digits", "--backend", "onnxruntime", "-O", "intra_op_threads=abc",
                  "--min-duration", "0", "--min-queries", "20", "--json")
    assert done.returncode == 1
    record = json.loads(done.stdout)
    assert record["status"] == "failed" and record["error"]["traceback"]
    shown = _ok(run_cr("results", "show", record["uid"])).stdout
    assert "traceback" in shown and "Traceback (most recent call last):" in shown and "ValueError" in shown


def test_show_escapes_terminal_control_characters_from_an_imported_record(run_cr, tmp_path):
    from cr.results import record as records

    evil = "\x1b[2J\x1b]0;pwned\x07"
    rec = records.new("benchmark", [{"ref": "model:lenet-digits@1.0.0", "kind": "model", "name": "lenet-digits",
                                     "version": "1.0.0", "uid": "c355a40e4d75023b", "repo": "builtin", "sha256": "ab" * 32}],
                      {"name": "null", "entry": "x:y", "origin": evil, "options": {}, "info": {"framework": evil, "version": evil}},
                      {"scenario": "single-stream", "threads": 1}, None, "2026-03-01T10:00:00.000Z")
    records.complete(rec, {"status": "failed", "error": {"kind": "error", "message": f"boom {evil}", "hint": evil,
                                                         "traceback": f"Traceback (most recent call last):\n  {evil}\n",
                                                         "stderr_tail": f"last words {evil}"}}, None)
    path = write_json(tmp_path / "evil.json", rec)
    _ok(run_cr("results", "add", path))
    shown = _ok(run_cr("results", "show", rec["uid"]))
    assert "\x1b" not in shown.stdout + shown.stderr and "\x07" not in shown.stdout
    assert "boom \\x1b[2J" in shown.stdout and "last words \\x1b[2J" in shown.stdout
