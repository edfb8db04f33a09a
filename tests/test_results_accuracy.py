"""Accuracy differences with statistics: per-sample hits in validate records, the exact McNemar
test and the paired bootstrap (cr.results.accuracy), and `cr results compare`'s accuracy section
on real lenet-digits validations."""
from __future__ import annotations

import base64
import copy
import json
import os
import shutil
import subprocess
import sys
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest
from conftest import HEAVY, IMPORT_PROBE, make_component, make_repo

from cr.results import accuracy

ROOT = Path(__file__).resolve().parent.parent
LENET = ROOT / "repo/model/lenet-digits/1.0.0"


def _exact_p(b: int, c: int) -> float:
    n, k = b + c, min(b, c)
    return 1.0 if n == 0 else float(min(Fraction(1), 2 * Fraction(sum(comb(n, i) for i in range(k + 1)), 2 ** n)))


def _record(uid: str, hits: list[int], ids=None, metric_value=None, task="classification") -> dict:
    """A validate record holding per-sample top-1 hits as the validate action writes them."""
    from cr.runtime.actions.infer import sample_hits

    ids = ids if ids is not None else [str(5 * i) for i in range(len(hits))]
    value = sum(hits) / len(hits) if metric_value is None else metric_value
    return {"uid": uid, "action": "validate", "status": "ok", "config": {"dataset": "dataset:digits@1.0.0", "split": "test"},
            "validation": {"task": task, "samples": len(hits), "top1": value,
                           "hits": sample_hits(ids, {"top1": [bool(h) for h in hits]})}}


# -- the statistics ------------------------------------------------------------------------

@pytest.mark.parametrize("b,c", [(0, 0), (1, 0), (5, 1), (10, 2), (3, 3), (40, 20), (600, 520)])
def test_mcnemar_is_the_exact_binomial_test(b, c):
    assert accuracy.mcnemar(b, c) == pytest.approx(_exact_p(b, c), rel=1e-9)
    assert accuracy.mcnemar(b, c) == accuracy.mcnemar(c, b)


def test_bootstrap_is_seeded_and_matches_resampling_the_pairs():
    first = accuracy.bootstrap(360, 2, 12)
    assert first == accuracy.bootstrap(360, 2, 12)  # deterministic
    lo, hi = first
    assert lo < 10 / 360 < hi and lo > 0  # 12 vs 2 of 360: clearly positive
    # the same interval as resampling the 360 pairs themselves (the slow way), within resampling noise
    import random

    rng = random.Random(7)
    d = [-1] * 2 + [1] * 12 + [0] * 346
    slow = sorted(sum(rng.choices(d, k=360)) / 360 for _ in range(4000))
    assert abs(slow[100] - lo) <= 2 / 360 and abs(slow[3899] - hi) <= 2 / 360
    assert accuracy.bootstrap(360, 0, 0) == [0.0, 0.0]


def test_paired_counts_discordant_samples_and_states_its_rule():
    a = [1] * 300 + [0] * 60
    b = [1] * 290 + [0] * 10 + [1] * 40 + [0] * 20  # B misses 10 A got, gets 40 A missed
    t = accuracy.paired(_record("a" * 16, a), _record("b" * 16, b))
    assert t["comparable"] and t["samples"] == 360
    assert t["discordant"] == {"a_only": 10, "b_only": 40}
    assert t["delta"] == pytest.approx(30 / 360) and t["values"] == [pytest.approx(300 / 360), pytest.approx(330 / 360)]
    assert t["mcnemar_p"] == pytest.approx(_exact_p(10, 40))
    assert t["interval"][0] < t["delta"] < t["interval"][1]
    assert t["verdict"] == "significant" and "p < 0.05" in t["rule"] and "excludes 0" in t["rule"]
    # two more discordant samples each way than equal: within noise
    even = [1] * 300 + [0] * 60
    even[:3] = [0, 0, 0]
    even[300:303] = [1, 1, 1]
    t = accuracy.paired(_record("a" * 16, a), _record("c" * 16, even))
    assert t["verdict"] == "within noise" and t["mcnemar_p"] == 1.0 and t["interval"][0] < 0 < t["interval"][1]


@pytest.mark.parametrize("change,reason", [
    (lambda r: r["validation"].pop("hits"), "keeps no per-sample correctness"),
    (lambda r: r["validation"].update(task="detection"), "per-image hits are not recorded"),
    (lambda r: r.update(action="benchmark"), "is not a validate record"),
    (lambda r: r["validation"]["hits"].update(top1="not base64!"), "is not base64"),
    (lambda r: r["validation"]["hits"].update(top1=base64.b64encode(b"\xff\xff").decode()), "16 bits for 8 samples"),
    (lambda r: r["validation"].update(top1=0.5), "disagrees with its top1"),
    (lambda r: r["validation"]["hits"].update(ids="x"), "damaged"),
    (lambda r: r.update(validation="junk"), "holds no validation"),
    (lambda r: r.update(status="failed", validation=None), "holds no validation (status failed)"),
])
def test_paired_refuses_with_a_reason_never_an_exception(change, reason):
    good = _record("a" * 16, [1, 0, 1, 1, 1, 1, 0, 1])
    bad = copy.deepcopy(good)
    bad["uid"] = "b" * 16
    change(bad)
    t = accuracy.paired(good, bad)
    assert t["comparable"] is False and reason in t["reason"], t


def test_paired_refuses_records_on_other_samples():
    a = _record("a" * 16, [1] * 8)
    moved = _record("b" * 16, [1] * 8, ids=[str(5 * i + 1) for i in range(8)])
    t = accuracy.paired(a, moved)
    assert not t["comparable"] and "not the same samples" in t["reason"]
    shorter = _record("c" * 16, [1] * 7)
    assert "not the same samples" in accuracy.paired(a, shorter)["reason"]


def test_bitset_holds_each_sample_in_order():
    from cr.runtime.actions.infer import sample_hits

    hits = [i % 3 == 0 for i in range(11)]
    per = sample_hits(range(11), {"top1": hits})
    assert per["count"] == 11 and per["ids"] == [str(i) for i in range(11)] and len(per["ids_sha256"]) == 64
    got, why = accuracy.hits({"uid": "x", "action": "validate", "status": "ok",
                              "validation": {"task": "classification", "top1": sum(hits) / 11, "hits": per}})
    assert why is None and got["hits"] == hits


# -- real validations ------------------------------------------------------------------------

def _validate(run_cr, out: Path, *args) -> dict:
    done = run_cr("validate", "model", *args, "-o", out)
    assert done.returncode in (0, 1) and out.exists(), done.stderr
    return json.loads(out.read_text())


def _degraded_copy(tmp_path: Path, run_cr) -> None:
    """model:lenet-coarse: the shipped ONNX fed raw 0..16 pixels, its scale step made 1 (a pipeline mistake)."""
    repo = make_repo(tmp_path / "mine", "mine")
    meta = json.loads((LENET / "meta.json").read_text())
    meta = {k: v for k, v in meta.items() if k not in ("uid", "kind", "name", "version", "variants", "architecture", "files",
                                                       "provenance", "expected")}
    meta["preprocess"] = [dict(s, factor=1.0) if s["op"] == "scale" else s for s in meta["preprocess"]]
    path = make_component(repo, "model", "lenet-coarse", **meta)
    shutil.copy(LENET / "lenet-digits.onnx", path.parent)
    assert run_cr("repo", "add", repo).returncode == 0


@pytest.mark.slow
def test_compare_tests_real_accuracy_deltas_and_refuses_another_split(run_cr, tmp_path):
    pytest.importorskip("ai_edge_litert")
    fp32 = _validate(run_cr, tmp_path / "a.json", "lenet-digits", "--backend", "onnxruntime")
    int8 = _validate(run_cr, tmp_path / "b.json", "lenet-digits", "--backend", "tflite", "--variant", "tflite-int8")
    train = _validate(run_cr, tmp_path / "c.json", "lenet-digits", "--backend", "onnxruntime", "--split", "train",
                      "--limit", "360")
    _degraded_copy(tmp_path, run_cr)
    coarse = _validate(run_cr, tmp_path / "d.json", "lenet-coarse", "--backend", "onnxruntime")
    per = fp32["validation"]["hits"]
    assert per["count"] == 360 and per["ids"][:3] == ["0", "5", "10"]
    assert int8["validation"]["hits"]["ids_sha256"] == per["ids_sha256"]
    assert train["validation"]["hits"]["ids_sha256"] != per["ids_sha256"]

    done = run_cr("results", "compare", fp32["uid"], int8["uid"], train["uid"], coarse["uid"], "--json")
    assert done.returncode == 0, done.stderr
    tests = {(t["uids"][1], t["metric"]): t for t in json.loads(done.stdout)["accuracy"]}
    same = tests[(int8["uid"], "top1")]
    assert same["comparable"] and same["values"] == [fp32["validation"]["top1"], int8["validation"]["top1"]]
    d = same["discordant"]
    assert same["delta"] == pytest.approx((d["b_only"] - d["a_only"]) / 360)
    assert same["mcnemar_p"] == pytest.approx(_exact_p(d["a_only"], d["b_only"]))
    assert same["verdict"] == "within noise"  # the int8 model keeps the fp32 accuracy on these samples
    other = tests[(train["uid"], "top1")]
    assert not other["comparable"] and "not the same samples" in other["reason"] and "train" in other["reason"]
    worse = tests[(coarse["uid"], "top1")]
    assert worse["comparable"] and worse["delta"] < 0 and worse["interval"][1] < 0
    assert worse["verdict"] == "significant" and worse["mcnemar_p"] < 0.05

    text = run_cr("results", "compare", fp32["uid"], int8["uid"], train["uid"], coarse["uid"])
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert any(line.startswith("accuracy, paired sample by sample: significant when") for line in lines)
    row = next(line for line in lines if line.strip().startswith(coarse["uid"]) and "top-1" in line)
    assert f"delta {worse['delta']:+.4f}" in row and "McNemar p" in row and row.endswith("significant")
    assert any(train["uid"] in line and "no paired test: not the same samples" in line for line in lines)
    assert f"  {coarse['uid']} vs baseline {fp32['uid']}  pipeline differs: preprocess step 1 (scale): factor=0.0625 vs factor=1" in lines
    assert worse["pipeline"] == ["preprocess step 1 (scale): factor=0.0625 vs factor=1"] and same["pipeline"] == []


def test_pipeline_differences_name_the_step():
    base = {"pipeline": {"sha256": "a", "preprocess": [{"op": "resize", "size": 224, "interpolation": "bilinear"},
                                                       {"op": "normalize", "mean": [0.5], "std": [0.5]}], "postprocess": []}}
    other = copy.deepcopy(base)
    other["pipeline"].update(sha256="b")
    other["pipeline"]["preprocess"][0]["interpolation"] = "nearest"
    other["pipeline"]["preprocess"].append({"op": "transpose", "perm": [2, 0, 1]})
    assert accuracy.pipeline_differences(base, other) == [
        "preprocess step 1 (resize): interpolation=bilinear size=224 vs interpolation=nearest size=224",
        "preprocess step 3 (transpose): only in B"]
    assert accuracy.pipeline_differences(base, copy.deepcopy(base)) == []
    assert accuracy.pipeline_differences(base, {"pipeline": None}) == []


def test_results_compare_imports_no_framework(run_cr, tmp_path, cr_home):
    """`cr results compare` stays light: pure-stdlib statistics (decoy frameworks would show up)."""
    from helpers.results import make_record

    decoys = tmp_path / "decoys"
    for name in HEAVY:
        (decoys / name).mkdir(parents=True)
        (decoys / name / "__init__.py").write_text("")
    a, b = _record("a" * 16, [1, 0, 1, 1]), _record("b" * 16, [1, 1, 1, 1])
    for r in (a, b):
        full = make_record(r["uid"], action="validate", top1=r["validation"]["top1"])
        full["validation"].update(r["validation"])
        (tmp_path / f"{r['uid']}.json").write_text(json.dumps(full))
        assert run_cr("results", "add", tmp_path / f"{r['uid']}.json").returncode == 0
    out = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", IMPORT_PROBE, str(out), json.dumps(["results", "compare", a["uid"], b["uid"]])],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "CR_HOME": str(cr_home), "PYTHONPATH": str(decoys)})
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["code"] == 0
    top = {m.split(".")[0] for m in result["modules"]}
    assert "cr" in top and not top & set(HEAVY), sorted(top & set(HEAVY))
