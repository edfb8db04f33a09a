"""`cr benchmark` end to end: the real CLI, the real onnxruntime, result records."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import make_component, make_repo

from cr.resolve.lock import component_sha256

ROOT = Path(__file__).resolve().parent.parent
QUICK = ["--min-duration", "0.2", "--min-queries", "200", "--warmup", "10"]


def _meta(path: str) -> dict:
    return json.loads((ROOT / path).read_text())


def test_iris_on_onnxruntime_end_to_end(run_cr, tmp_path):
    out = tmp_path / "result.json"
    done = run_cr("benchmark", "model", "iris-logreg", "--backend", "onnxruntime", *QUICK, "--threads", "1", "-o", out)
    assert done.returncode == 0, done.stderr
    assert "p99" in done.stdout and "queries/s" in done.stdout and "VALID" in done.stdout
    r = json.loads(out.read_text())
    assert r["status"] == "ok" and r["error"] is None and r["action"] == "benchmark"
    assert len(r["uid"]) == 16 and r["started"] <= r["ended"] and r["cr_version"]
    refs = {c["ref"]: c for c in r["components"]}
    model = refs["model:iris-logreg@1.0.0"]
    assert model["uid"] == "a3f4c2d18e6b7091"
    assert model["sha256"] == component_sha256(_meta("repo/model/iris-logreg/1.0.0/meta.json"))
    assert refs["action:benchmark@0.1.0"]["sha256"] == component_sha256(_meta("actions/benchmark/meta.json"))
    # a model runs inside the lock of what it needs here (the model, numpy, the backend's onnxruntime)
    assert r["platform"]["fingerprint"] and r["lock"]["root"] == "model:iris-logreg@1.0.0"
    assert "software:onnxruntime@>=1.17" in r["lock"]["requires"]
    cfg = r["config"]
    assert cfg["scenario"] == "single-stream" and cfg["min_queries"] == 200 and cfg["threads"] == 1
    assert cfg["timeout_s"] == 600 and cfg["backend"] == "onnxruntime"  # defaults from the action meta
    m = r["metrics"]
    assert m["queries"] >= 200 and m["duration_s"] >= 0.2 and m["batch_size"] == 3 and m["samples"] == 3 * m["queries"]
    lat = m["latency_ns"]
    assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p95"] <= lat["p99"] <= lat["p99.9"] <= lat["max"]
    assert len(r["raw"]["latencies_ns"]) == lat["count"] == m["queries"]
    assert m["throughput"]["queries_per_s"] > 0 and m["peak_rss_bytes"] > 0 and isinstance(m["noisy"], bool)
    assert r["backend"]["info"]["framework"] == "onnxruntime"
    assert r["model_file"]["path"].endswith("logreg_iris.onnx") and len(r["model_file"]["sha256"]) == 64
    assert r["inputs"] == {"provider": "synthetic", "seed": 0, "batches": 16, "batch_size": 3}


def _solution_repo(tmp_path: Path, deps: list[str]) -> None:
    """A registered repo with solution:iris-ort: the shipped iris model on onnxruntime, needing deps."""
    from cr import api

    repo = make_repo(tmp_path / "sols", "sols")
    make_component(repo, "solution", "iris-ort", model="model:iris-logreg@1.0.0", backend="onnxruntime",
                   backend_options={"intra_op_threads": 1}, deps=deps,
                   actions=[{"action": "benchmark", "params": {"warmup_queries": 100, "seed": 0}}])
    api.repo_add(repo)


def test_json_output_and_solution_runs_inside_its_lock(run_cr, tmp_path):
    _solution_repo(tmp_path, ["software:onnxruntime@>=1.17", "software:python@>=3.9"])
    done = run_cr("benchmark", "solution:iris-ort", "--min-duration", "0.1", "--min-queries", "50", "--json")
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)  # one record per declared action
    assert [r["action"] for r in records] == ["benchmark"]
    r = records[0]
    assert [c["kind"] for c in r["components"]] == ["solution", "model", "action"]
    assert r["backend"]["name"] == "onnxruntime" and r["backend"]["options"] == {"intra_op_threads": 1}
    assert r["config"]["warmup_queries"] == 100  # from the solution's benchmark params
    assert r["config"]["min_queries"] == 50  # the command line wins
    lock = r["lock"]  # the solution ran in its resolved environment, recorded with the result
    assert lock["root"] == "solution:iris-ort@1.0.0" and lock["status"] == "ready"
    assert {s["name"] for s in lock["software"]} >= {"onnxruntime", "python"}


def test_a_solution_whose_software_is_missing_is_refused_with_the_fix(run_cr, tmp_path):
    from helpers.recipes import recipe_repo

    recipe_repo(tmp_path, {
        "name": "absent-thing",
        "detect": [{"type": "python", "module": "cr_test_absent_module", "distribution": "cr-test-absent"}],
        "install": [{"method": "pip", "packages": ["cr-test-absent=={version}"], "versions": ["1.0.0"]}],
    })
    _solution_repo(tmp_path, ["software:onnxruntime@>=1.17", "software:absent-thing"])
    done = run_cr("benchmark", "solution:iris-ort", "--min-queries", "5")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "Error: solution:iris-ort@1.0.0 needs software that is not installed here: absent-thing" in done.stderr
    assert "Hint: install it first: cr init solution iris-ort (or cr install software absent-thing)" in done.stderr


def test_scenarios_through_the_cli(run_cr):
    done = run_cr("benchmark", "model:iris-logreg", "--backend", "null", "--scenario", "server", "--target-qps", "2000",
                  "-O", "sleep_ms=2", "--latency-bound-ms", "10", "--min-duration", "0.3", "--min-queries", "10", "--json")
    assert done.returncode == 0, done.stderr
    m = json.loads(done.stdout)["metrics"]
    assert m["validity"] == "INVALID" and m["server"]["p99_ms"] > 10
    assert "Warning: INVALID run: p99 latency" in done.stderr
    done = run_cr("benchmark", "model:iris-logreg", "--backend", "null", "--scenario", "multi-stream", "--samples-per-query", "6",
                  "--min-duration", "0", "--min-queries", "30", "--json")
    m = json.loads(done.stdout)["metrics"]
    assert m["samples_per_query"] == 6 and m["queries"] == 30


def test_unknown_backend(run_cr):
    done = run_cr("benchmark", "model", "iris-logreg", "--backend", "tensorflw")
    assert done.returncode == 1
    assert done.stderr.splitlines()[:2] == [
        "Error: unknown backend 'tensorflw' (did you mean tensorflow?)",
        "Hint: available backends: null, onnxruntime, tensorflow, tensorrt, tflite, torch; a distribution adds one under the entry-point group cr.backends",
    ]


def test_bad_parameters(run_cr):
    done = run_cr("benchmark", "model:iris-logreg", "--backend", "null", "--min-queries", "0")
    assert done.returncode == 1 and "Error: benchmark parameter min_queries: 0 is less than the minimum of 1" in done.stderr
    done = run_cr("benchmark", "model:iris-logreg", "--backend", "null", "--batch-size", "8")
    assert done.returncode == 1 and "fixed batch of 3 (input 'float_input' has shape [3, 2])" in done.stderr
    done = run_cr("benchmark", "model:iris-logreg", "--backend", "null", "--scenario", "server")
    assert done.returncode == 1 and "needs a target rate" in done.stderr
    done = run_cr("benchmark", "model:iris-logreg", "--backend", "onnxruntime", "-O", "intra_threads=2")
    assert done.returncode == 1 and "has no option intra_threads" in done.stderr and "intra_op_threads" in done.stderr
    assert "Traceback" not in done.stderr


def test_crash_exits_1_and_writes_the_failed_record(run_cr, tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "crashy.py").write_text(
        "import os, sys\nfrom cr.runtime.backends.null import NullBackend\n"
        "class Crashy(NullBackend):\n    name = 'crashy'\n"
        "    def run(self, batch):\n        print('segfault imminent', file=sys.stderr, flush=True)\n        os.abort()\n"
    )
    out = tmp_path / "failed.json"
    env = {"CR_BACKENDS": "crashy=crashy:Crashy", "PYTHONPATH": str(plugins)}
    done = run_cr("benchmark", "model:iris-logreg", "--backend", "crashy", "-o", out, env=env)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "Error: the runtime crashed: killed by SIGABRT" in done.stderr and "Hint: " in done.stderr
    r = json.loads(out.read_text())
    assert r["status"] == "failed" and r["metrics"] is None and r["ended"]
    assert r["error"]["kind"] == "crashed" and r["error"]["signal"] == 6
    assert "segfault imminent" in r["error"]["stderr_tail"]


def test_declared_input_that_disagrees_with_the_model(run_cr, tmp_path):
    repo = make_repo(tmp_path / "myrepo", "myrepo")
    iris = _meta("repo/model/iris-logreg/1.0.0/meta.json")
    fields = {k: iris[k] for k in ("format", "task", "source", "outputs")}
    make_component(repo, "model", "iris-wrong", inputs=[{"name": "float_input", "shape": [3, 2], "dtype": "float64"}], **fields)
    assert run_cr("repo", "add", repo).returncode == 0
    out = tmp_path / "r.json"
    done = run_cr("benchmark", "model:iris-wrong", "--backend", "onnxruntime", "-o", out)
    assert done.returncode == 1
    assert "Error: input 'float_input': expected float32 [3, 2], given float64 [3, 2]" in done.stderr
    assert json.loads(out.read_text())["error"]["type"] == "InputMismatch"


def test_format_the_backend_cannot_load(run_cr, tmp_path):
    repo = make_repo(tmp_path / "myrepo", "myrepo")
    (repo / "model/tiny/1.0.0").mkdir(parents=True)
    (repo / "model/tiny/1.0.0/tiny.tflite").write_bytes(b"TFL3")
    make_component(repo, "model", "tiny", format="tflite", file="tiny.tflite",
                   inputs=[{"name": "x", "shape": [1, 4], "dtype": "float32"}])
    assert run_cr("repo", "add", repo).returncode == 0
    done = run_cr("benchmark", "model:tiny", "--backend", "onnxruntime")
    assert done.returncode == 1
    assert "backend 'onnxruntime' cannot load model:tiny@1.0.0: its variants are tflite (tflite, fp32); the backend loads onnx" in done.stderr
    done = run_cr("benchmark", "model:tiny", "--backend", "null", "--min-duration", "0", "--min-queries", "5", "--json")
    assert done.returncode == 0, done.stderr  # null takes any format


def test_benchmark_help_imports_no_framework(tmp_path):
    code = ("import sys\nfrom cr.cli.main import main\ntry:\n    main(['benchmark', '--help'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'onnxruntime', 'torch', 'jsonschema'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "--target-qps" in done.stdout and "--latency-bound-ms" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_benchmark_inside_a_lock(run_cr, tmp_path):
    lock = tmp_path / "iris.lock.json"
    done = run_cr("resolve", "model:iris-logreg", "-o", lock)
    assert done.returncode == 0, done.stderr
    done = run_cr("benchmark", "model:iris-logreg", "--backend", "onnxruntime", "--lock", lock, *QUICK, "--json")
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    the_lock = json.loads(lock.read_text())
    assert r["lock"]["root"] == the_lock["root"] == "model:iris-logreg@1.0.0"
    assert r["runtime"]["executable"] == the_lock["interpreter"]  # the child ran the lock's interpreter
    assert r["model_file"]["package"] == "onnxruntime"  # found by the child, in the lock's environment
