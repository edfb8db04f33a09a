"""cr gate: exit 0 PASS / 1 REGRESSION / 2 INCONCLUSIVE on stored results, a results
repository and interleaved A/B runs; the markdown summary; each bad input (exit 1, one
Error: line and a Hint:). The real CLI in a child process, real git, real onnxruntime."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from array import array
from pathlib import Path

import pytest
from conftest import HEAVY, IMPORT_PROBE
from helpers.results import make_record

from cr.results.gate import DETECTABLE_FACTOR, Side, decide, evaluate
from cr.results.latencies import inline_raw

BASE_NS = 100_000.0


def _samples(seed: int, center: float, n: int = 2000, spread: float = 0.05) -> array:
    rng = random.Random(seed)
    return array("q", (int(center * rng.lognormvariate(0, spread)) for _ in range(n)))


def _record(uid: str, values: array, **kw) -> dict:
    return make_record(uid, values=values, **kw)


@pytest.fixture
def store(cr_home):
    from cr.results.store import default_store

    with default_store() as s:
        yield s


@pytest.fixture
def stored(store):
    """Stored results with controlled samples: a baseline, an unchanged rerun, a 20% slower
    run, a noisy 4% slower run (too wide to tell at 5%), a very noisy baseline, another
    model, another dataset, one without raw latencies."""
    uids = {
        "base": ("a000000000000001", _samples(1, BASE_NS, spread=0.02)),
        "same": ("a000000000000002", _samples(2, BASE_NS, spread=0.02)),
        "slow": ("a000000000000003", _samples(3, BASE_NS * 1.20, spread=0.02)),
        "wide": ("a000000000000004", _samples(4, BASE_NS * 1.04, spread=0.8)),
        "noisy": ("a000000000000005", _samples(5, BASE_NS, spread=0.8)),
    }
    for uid, values in uids.values():
        store.add(_record(uid, values))
    store.add(_record("b000000000000001", _samples(6, BASE_NS), model="iris-logreg"))
    other = _record("b000000000000002", _samples(7, BASE_NS))
    for c in other["components"]:
        if c["kind"] == "dataset":
            c.update(ref="dataset:mnist-5k@1.0.0", name="mnist-5k")
    store.add(other)
    bare = _record("b000000000000003", _samples(8, BASE_NS))
    bare["raw"] = None
    store.add(bare)
    return {name: uid for name, (uid, _) in uids.items()}


def _gate(run_cr, *args):
    done = run_cr("gate", *args)
    return done, done.stdout + done.stderr


# -- the rule -------------------------------------------------------------------------------

def test_the_rule_decides_on_the_whole_interval():
    assert decide(1.026, 1.04, 0.05) == "REGRESSION"  # wholly beyond 1 + t/2
    assert decide(0.99, 1.049, 0.05) == "PASS"  # a 5% regression is ruled out
    assert decide(1.02, 1.06, 0.05) == "INCONCLUSIVE"  # neither
    assert decide(0.90, 0.95, 0.05) == "PASS"  # faster


def test_throughput_is_gated_as_a_slowdown():
    base, slow = _samples(1, BASE_NS, spread=0.02), _samples(2, BASE_NS * 1.2, spread=0.02)
    report = evaluate(Side.of(_record("a000000000000001", base), base, "x"),
                      Side.of(_record("a000000000000002", slow), slow, "y"), metric="throughput", threshold=0.05)
    assert report["verdict"] == "REGRESSION" and report["ratio"] < 1 < report["slowdown"]
    assert report["ci"][0] > 1.025 and "baseline/candidate" in report["rule"]


def test_the_noise_floor_compares_the_halves_own_figures():
    """The A/A halves carry the figures of their own samples: a run whose odd blocks are 10%
    slower shows it in the floor (had the halves kept the whole run's p50, every A/A ratio
    would be exactly 1 and the floor a fraction of the truth)."""
    from cr.results.gate import noise_floor

    values = array("q")
    for block in range(16):
        values.extend(_samples(100 + block, BASE_NS * (1.10 if block % 2 else 1.0), n=125, spread=0.01))
    floor = noise_floor(Side.of(_record("a000000000000009", values), values, "x"), "p50")
    assert floor["ratio"] == pytest.approx(1.10, rel=0.02)  # the odd blocks over the even ones
    assert floor["floor"] > 0.08 and floor["detectable"] > 0.2


def test_pooled_rounds_state_the_joined_samples_figures():
    from cr.results.gate import pool
    from cr.results.significance import latency_figures

    fast, slow = _samples(1, BASE_NS, n=500, spread=0.01), _samples(2, 2 * BASE_NS, n=1500, spread=0.01)
    side = pool([_record("a000000000000011", fast), _record("a000000000000012", slow)], [fast, slow], "A/B side A")
    assert len(side.latencies) == 2000 and side.uids == ["a000000000000011", "a000000000000012"]
    joined = latency_figures(list(fast) + list(slow))
    assert {k: side.record["metrics"]["latency_ns"][k] for k in joined} == joined
    assert side.record["metrics"]["latency_ns"]["p50"] > 1.9 * BASE_NS  # the first round's p50 was ~BASE_NS


# -- verdicts and exit codes on stored results -----------------------------------------------

def test_pass_regression_inconclusive_exit_codes(run_cr, stored):
    done, text = _gate(run_cr, stored["base"], stored["same"])
    assert done.returncode == 0, text
    assert done.stdout.startswith("PASS: p50 latency") and "rule: p50 latency, 95% interval of candidate/baseline" in text
    done, text = _gate(run_cr, stored["base"], stored["slow"])
    assert done.returncode == 1, text
    assert done.stdout.startswith("REGRESSION:") and "slowdown 1.1" in text and "Error:" not in text
    done, text = _gate(run_cr, stored["base"], stored["wide"])
    assert done.returncode == 2, text
    assert done.stdout.startswith("INCONCLUSIVE:")
    # a 20% regression passes a 50% gate
    done, text = _gate(run_cr, stored["base"], stored["slow"], "--threshold", "50%")
    assert done.returncode == 0, text


def test_json_report_states_rule_interval_and_both_sides(run_cr, stored):
    done = run_cr("gate", stored["base"], stored["slow"], "--json", "--metric", "p99")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "REGRESSION" and report["exit_code"] == 1 and report["metric"] == "p99"
    lo, hi = report["ci"]
    assert lo <= report["slowdown"] <= hi and lo > 1 + report["threshold"] / 2
    assert report["baseline"]["uids"] == [stored["base"]] and report["candidate"]["uids"] == [stored["slow"]]
    assert report["baseline"]["samples"] == 2000 and report["baseline"]["machine"]
    assert report["noise_floor"]["detectable"] == pytest.approx(DETECTABLE_FACTOR * report["noise_floor"]["floor"])
    assert report["statistic"]["method"].startswith("moving-block bootstrap")


def test_markdown_summary(run_cr, stored, tmp_path):
    out = tmp_path / "gate.md"
    done = run_cr("gate", stored["base"], stored["slow"], "--markdown", out)
    assert done.returncode == 1, done.stderr
    md = out.read_text(encoding="utf-8")
    assert md.startswith("## cr gate: REGRESSION")
    assert "Rule: p50 latency, 95% interval of candidate/baseline (>1 is slower): REGRESSION when the whole interval " \
           "lies above 1+2.5%; PASS when its upper end lies below 1+5%" in md
    assert "95% interval 1.1" in md and " µs" in md and " us" not in md  # figures in µs, never raw ns
    assert "| configuration | single-stream batch=1 | single-stream batch=1 |" in md
    assert f"| results | {stored['base']} | {stored['slow']} |" in md
    assert "| machine |" in md and "smallest detectable change here:" in md
    assert "e+0" not in md


# -- bad input: one Error: line, a Hint:, exit 1 ----------------------------------------------

def _refused(done, *words):
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and "Hint:" in done.stderr and "Traceback" not in text, text
    for w in words:
        assert w in errors[0], errors[0]
    return errors[0]


def test_different_models_or_datasets_are_refused(run_cr, stored):
    _refused(run_cr("gate", stored["base"], "b000000000000001"), "model lenet-digits", "model iris-logreg")
    _refused(run_cr("gate", stored["base"], "b000000000000002"), "dataset digits", "dataset mnist-5k")


def test_a_baseline_without_raw_samples_says_why_no_interval(run_cr, stored):
    _refused(run_cr("gate", "b000000000000003", stored["base"]), "no interval for the baseline",
             "carries no raw latencies")


def test_a_threshold_below_the_noise_floor_says_what_is_detectable(run_cr, stored):
    line = _refused(run_cr("gate", stored["noisy"], stored["same"], "--threshold", "2"),
                    "--threshold 2% is below the noise floor", "smallest detectable change here:")
    detectable = float(line.split("smallest detectable change here: ")[1].split("%")[0])
    assert detectable > 2
    # at what it says is detectable, the same pair is judged
    done = run_cr("gate", stored["noisy"], stored["same"], "--threshold", f"{detectable + 0.1:.1f}")
    assert done.returncode in (0, 1, 2) and "Error:" not in done.stderr, done.stderr


def test_unknown_uids_and_bad_options(run_cr, stored):
    _refused(run_cr("gate", "ffff", stored["base"]), "baseline 'ffff'", "no result")
    _refused(run_cr("gate", stored["base"], "ffff"), "candidate 'ffff'")
    _refused(run_cr("gate", stored["base"]), "found 1")
    _refused(run_cr("gate", stored["base"], stored["same"], "--threshold", "five"), "--threshold 'five'")
    _refused(run_cr("gate", stored["base"], stored["same"], "--rounds", "3"), "--rounds goes with --ab")
    done = run_cr("gate", stored["base"], stored["same"], "--no-such-option")
    assert done.returncode == 1  # a usage error is bad input (1), never INCONCLUSIVE (2)


def test_unreadable_results_repository(run_cr, stored, tmp_path):
    _refused(run_cr("gate", "--baseline-repo", tmp_path / "nowhere", stored["same"]), "does not exist")
    (tmp_path / "plain").mkdir()
    _refused(run_cr("gate", "--baseline-repo", tmp_path / "plain", stored["same"]),
             "cannot read results repository")


def test_gate_on_stored_results_imports_no_framework(stored, cr_home, tmp_path):
    decoys = tmp_path / "decoys"
    for name in HEAVY:
        (decoys / name).mkdir(parents=True)
        (decoys / name / "__init__.py").write_text("")
    out = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", IMPORT_PROBE, str(out), json.dumps(["gate", stored["base"], stored["same"]])],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "CR_HOME": str(cr_home),
                               "PYTHONPATH": str(decoys) + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["code"] == 0
    top = {m.split(".")[0] for m in result["modules"]}
    assert not top & set(HEAVY), sorted(top & set(HEAVY))


# -- a results repository as the baseline -------------------------------------------------------

def _git(*args, cwd=None):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                   env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd or Path.cwd())})


def _write(record: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**record, "raw": inline_raw(record["raw"]["latencies_ns"])}), encoding="utf-8")


def test_baseline_from_a_results_repository_is_the_newest_of_the_same_configuration(run_cr, store, tmp_path):
    bare = tmp_path / "results.git"
    _git("init", "-q", "--bare", "--initial-branch=main", str(bare))
    folder = tmp_path / "published"
    old = _record("c000000000000001", _samples(11, BASE_NS * 1.3, spread=0.02), started="2026-03-01T10:00:00.000Z")
    new = _record("c000000000000002", _samples(12, BASE_NS, spread=0.02), started="2026-03-02T10:00:00.000Z")
    threads = _record("c000000000000003", _samples(13, BASE_NS * 2, spread=0.02), started="2026-03-03T10:00:00.000Z")
    threads["config"]["threads"] = 2  # another configuration, newer: not a baseline for a 1-thread candidate
    elsewhere = _record("c000000000000004", _samples(14, BASE_NS * 2, spread=0.02), started="2026-03-04T10:00:00.000Z")
    elsewhere["platform"] = {**elsewhere["platform"], "fingerprint": "0123456789abcdef"}
    for r in (old, new, threads, elsewhere):
        _write(r, folder / f"{r['uid']}.json")
    done = run_cr("publish", "--git", f"file://{bare}", "--results", folder, timeout=300)
    assert done.returncode == 0, done.stderr
    candidate = _record("d000000000000001", _samples(15, BASE_NS * 1.2, spread=0.02), started="2026-03-05T10:00:00.000Z")
    store.add(candidate)
    md = tmp_path / "gate.md"
    done = run_cr("gate", "--baseline-repo", f"file://{bare}", candidate["uid"], "--json", "--markdown", md)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "REGRESSION" and report["baseline"]["uids"] == [new["uid"]]
    assert report["baseline"]["source"].startswith(f"results repository file://{bare}")
    assert "results repository" in md.read_text(encoding="utf-8")
    # --any-machine lets a newer record of another machine be the baseline
    done = run_cr("gate", "--baseline-repo", f"file://{bare}", candidate["uid"], "--any-machine", "--json")
    assert json.loads(done.stdout)["baseline"]["uids"] == [elsewhere["uid"]]
    assert any("different machines" in n for n in json.loads(done.stdout)["notes"])
    # a configuration the repository does not hold: refused, saying what was looked for
    lonely = _record("d000000000000002", _samples(16, BASE_NS), model="iris-logreg")
    store.add(lonely)
    _refused(run_cr("gate", "--baseline-repo", f"file://{bare}", lonely["uid"]), "no baseline in results repository",
             "iris-logreg")


# -- interleaved A/B runs of two real solutions -----------------------------------------------------

@pytest.mark.slow
def test_ab_runs_two_solutions_interleaved(run_cr, tmp_path):
    for name in ("lenet-digits-onnxruntime", "lenet-digits-tflite"):
        done = run_cr("init", "solution", name, timeout=300)
        assert done.returncode == 0, done.stderr
    md = tmp_path / "ab.md"
    done = run_cr("gate", "--ab", "lenet-digits-onnxruntime", "lenet-digits-tflite", "--rounds", "2", "--queries", "200",
                  "--min-duration", "0", "--threshold", "500", "--json", "--markdown", md, timeout=600)
    assert done.returncode in (0, 1, 2), done.stderr
    assert "Error:" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    assert report["exit_code"] == done.returncode and report["verdict"] in ("PASS", "REGRESSION", "INCONCLUSIVE")
    a, b = report["baseline"], report["candidate"]
    assert len(a["uids"]) == 2 and len(b["uids"]) == 2 and a["samples"] >= 400 and b["samples"] >= 400
    assert a["backend"].startswith("onnxruntime") and b["backend"].startswith("tflite")
    assert "interleaved round" in a["source"] and a["config"].startswith("single-stream threads=1 batch=1") and b["config"].startswith("single-stream threads=1 batch=1")
    assert any("config differs" in n and "backend onnxruntime vs tflite" in n for n in report["notes"])
    # the runs are kept in the store, interleaved in time: A, B, A, B
    listed = json.loads(run_cr("results", "list", "--json").stdout)
    order = [r["backend"] for r in sorted(listed, key=lambda r: r["started"])]
    assert order == ["onnxruntime", "tflite", "onnxruntime", "tflite"]
    assert md.read_text(encoding="utf-8").startswith("## cr gate: ")
