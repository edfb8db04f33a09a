"""The dashboard's views tell the truth about every result, and no record breaks them.

In Chromium, as tests/test_dashboard.py drives it (its browser and page fixtures and
helpers are reused): the Pareto plot keeps every point inside its frame and its tick
labels apart, draws one frontier per task and dataset, and plots benchmarks that have no
accuracy; a benchmark-only row shows its model's task; the compare page colours only
differences beyond noise; runs that differ only in their configuration are separate
leaderboard rows; and a hundred schema-valid mutated records (seeded) render in every view
without a JavaScript error.
"""
from __future__ import annotations

import copy
import json
import random
import sys
from pathlib import Path

import pytest

from cr.dashboard import build, sample
from cr.events import CollectingReporter, set_reporter
from cr.platform import detect
from cr.results.validate import problems

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers.dashboard import PLATFORMS, _load_js, _open, _rows, _wait, browser, page, write  # noqa: E402,F401  (fixtures)

MIB = 1 << 20


def _laptop() -> dict:
    return detect(PLATFORMS / "x86-laptop").to_dict()


def _pi() -> dict:
    return detect(PLATFORMS / "rpi4-64").to_dict()


def _on_dataset(rec: dict, ref: str) -> dict:
    rec["config"]["dataset"] = ref
    rec["inputs"]["dataset"] = ref
    return rec


def make_views_store(folder: Path) -> dict:
    """Records for the view tests; returns {name: uid}."""
    rng = random.Random(11)
    laptop, pi = _laptop(), _pi()
    uids = {}
    n = 0

    def put(name, rec):
        nonlocal n
        n += 1
        write(rec, folder / f"{n:03d}-{name.replace('/', '-')}.json")
        uids[name] = rec["uid"]

    def bench(name, model, backend, variant, platform, median, **extra):
        put(name, sample.benchmark_record(model, backend, variant, "fp32", platform, sample.latencies(median, 600, rng),
                                          uid=f"b{n + 1:015x}", started=f"2026-12-01T10:{n + 1:02d}:00.000Z", **extra))

    def validate(name, model, backend, variant, platform, top1, dataset=None):
        rec = sample.validate_record(model, backend, variant, "fp32", platform, top1, uid=f"a{n + 1:015x}",
                                     started=f"2026-12-01T09:{n + 1:02d}:00.000Z")
        put(name, _on_dataset(rec, dataset) if dataset else rec)

    # lenet-digits on the digits dataset: onnxruntime at 100 % top-1, tflite at 98 %
    bench("lenet/ort", "lenet-digits", "onnxruntime", "onnx", laptop, 25_000)
    validate("lenet/ort/val", "lenet-digits", "onnxruntime", "onnx", laptop, 1.0)
    bench("lenet/tflite", "lenet-digits", "tflite", "tflite", laptop, 10_000)
    validate("lenet/tflite/val", "lenet-digits", "tflite", "tflite", laptop, 0.98)
    # torch: benchmarked only (no validation with torch anywhere): the model's task still shows
    bench("lenet/torch", "lenet-digits", "torch", "torchscript", laptop, 52_000)
    # another model on another dataset: a frontier of its own
    for backend, variant, median, top1 in (("onnxruntime", "onnx", 40_000, 0.99), ("tflite", "tflite", 20_000, 0.97)):
        rec = sample.benchmark_record("mnist-net", backend, variant, "fp32", laptop, sample.latencies(median, 600, rng),
                                      uid=f"b{n + 1:015x}", started=f"2026-12-01T11:{n + 1:02d}:00.000Z")
        put(f"mnist/{backend}", _on_dataset(rec, "dataset:mnist@1.0.0"))
        validate(f"mnist/{backend}/val", "mnist-net", backend, variant, laptop, top1, dataset="dataset:mnist@1.0.0")
    # a benchmark-only model whose record names its task (the component entry carries it)
    rec = sample.benchmark_record("det-net", "onnxruntime", "onnx", "fp32", laptop, sample.latencies(400_000, 600, rng),
                                  uid=f"b{n + 1:015x}", started="2026-12-01T12:00:00.000Z")
    rec["components"][0]["task"] = "detection"
    put("det/ort", rec)
    # two runs on the Pi that differ only in their threads
    for threads in (1, 2):
        rec = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", pi,
                                      sample.latencies(300_000 / threads, 600, rng), uid=f"b{n + 1:015x}",
                                      started=f"2026-12-01T13:0{threads}:00.000Z")
        rec["config"]["threads"] = threads
        put(f"pi/threads{threads}", rec)
    validate("pi/val", "lenet-digits", "onnxruntime", "onnx", pi, 0.9806)
    # compare: the same memory within 0.8 %, twice the latency
    for name, median, rss in (("cmp/base", 25_000, 190_000_000), ("cmp/slow", 50_000, 191_520_000),
                              ("cmp/same", 25_000, 190_000_000)):
        rec = sample.benchmark_record("cmp-net", "onnxruntime", "onnx", "fp32", laptop, sample.latencies(median, 600, rng),
                                      uid=f"c{n + 1:015x}", started=f"2026-12-01T14:{n + 1:02d}:00.000Z")
        rec["metrics"]["peak_rss_bytes"] = rss
        put(name, rec)
    return uids


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    folder = tmp_path_factory.mktemp("views-results")
    uids = make_views_store(folder)
    for path in folder.glob("*.json"):
        assert problems(json.loads(path.read_text(encoding="utf-8")), path.name) == []
    out = tmp_path_factory.mktemp("views-site") / "dash"
    old = set_reporter(CollectingReporter())
    try:
        info = build(folder, out)
    finally:
        set_reporter(old)
    return out, info, uids


def _settle(pg, timeout: float = 15.0) -> None:
    """Wait until the view has done its asynchronous work (results loaded, charts drawn)."""
    _wait(pg, "() => window.CR_DASHBOARD.ready && !(window.CR_DASHBOARD.pending > 0)", timeout)


def _pareto(pg, plot: str | None = None) -> dict:
    if plot is not None:
        pg.select_option("select[data-control=x-axis]", plot)
    _wait(pg, "() => !!window.CR_DASHBOARD.pareto && document.querySelector('#pareto').getAttribute('data-plot') === "
              f"{json.dumps(plot) if plot else 'window.CR_DASHBOARD.pareto.plot'}")
    _settle(pg)
    return pg.evaluate("window.CR_DASHBOARD.pareto")


def _row_index(pg, uid: str) -> int:
    return pg.evaluate("""(uid) => {
        const i = Array.from(document.querySelectorAll('#leaderboard tbody tr[data-row]'))
          .find(tr => tr.querySelector(`a[href="#/result/${uid}"]`));
        return i ? Number(i.getAttribute('data-row')) : -1; }""", uid)


def _assert_inside(info: dict) -> None:
    area = info["area"]
    assert info["points"], info
    for p in info["points"]:
        assert area["left"] <= p["x"] - p["r"] and p["x"] + p["r"] <= area["right"], (p, area)
        assert area["top"] <= p["y"] - p["r"] and p["y"] + p["r"] <= area["bottom"], (p, area)


def _assert_apart(info: dict) -> None:
    xs = sorted(info["x"]["labels"], key=lambda b: b["left"])
    assert len(xs) >= 2 and info["x"]["rotation"] == 0
    for a, b in zip(xs, xs[1:]):
        assert a["right"] + 2 <= b["left"], (a, b)
    ys = sorted(info["y"]["labels"], key=lambda b: b["top"])
    assert len(ys) >= 2
    for a, b in zip(ys, ys[1:]):
        assert a["bottom"] <= b["top"], (a, b)
    for label in xs + ys:  # a handful of significant digits, not "5.000"
        assert len(label["text"]) <= 8, label


# ---------------------------------------------------------------- Pareto


def test_pareto_keeps_a_point_at_100_percent_inside_and_labels_apart(page, views):
    _open(page, views, "#/pareto")
    info = _pareto(page)
    assert info["plot"] == "latency"
    _assert_inside(info)
    y = info["y"]
    assert y["max"] > 100 and y["max"] - y["min"] >= 2 and not (y["min"] >= 99.5 and y["max"] <= 100)
    assert not [l for l in y["labels"] if l["value"] > 100]  # no tick claims more than 100 %
    _assert_apart(info)
    page.uncheck("input[data-control=log]")
    _wait(page, "() => window.CR_DASHBOARD.pareto.x.type === 'linear'")
    _assert_inside(page.evaluate("window.CR_DASHBOARD.pareto"))
    _assert_apart(page.evaluate("window.CR_DASHBOARD.pareto"))
    page.check("input[data-control=log]")
    page.screenshot(path=str(page.shots / "pareto-views.png"), full_page=True)
    assert not page.problems


def test_pareto_at_100_percent_only_has_a_sensible_range(page, views):
    _open(page, views, "#/pareto")
    page.select_option("select[data-filter=name]", "lenet-digits")
    page.select_option("select[data-filter=backend]", "onnxruntime")
    page.select_option("select[data-filter=platform]", _laptop()["fingerprint"])
    _wait(page, "() => document.querySelector('#pareto').getAttribute('data-points') === '1'")
    info = page.evaluate("window.CR_DASHBOARD.pareto")
    _assert_inside(info)
    y = info["y"]
    assert y["max"] - y["min"] >= 2 and 100 < y["max"] < 101
    assert float(y["labels"][-1]["text"]) == 100  # the top label is 100 %, none above
    assert not page.problems


def test_two_datasets_give_two_frontiers_and_the_dataset_filter_works(page, views):
    _open(page, views, "#/pareto")
    info = _pareto(page, "latency")
    laptop = [f for f in info["frontiers"] if "Latitude" in f["label"]]
    assert sorted(f["line"] for f in laptop) == ["classification \u00B7 digits@1.0.0 test", "classification \u00B7 mnist@1.0.0 test"]
    legend = page.locator("#pareto-legend [data-legend=frontier]").all_text_contents()
    assert any("mnist@1.0.0" in t for t in legend) and any("digits@1.0.0" in t for t in legend)
    page.select_option("select[data-filter=dataset]", "mnist@1.0.0 test")
    _wait(page, "() => document.querySelector('#pareto').getAttribute('data-points') === '2'")
    info = page.evaluate("window.CR_DASHBOARD.pareto")
    assert [f["line"] for f in info["frontiers"]] == ["classification \u00B7 mnist@1.0.0 test"]
    assert not page.problems


def test_a_benchmark_only_row_is_on_the_latency_throughput_plot(page, views):
    _open(page, views, "#/leaderboard")
    page.wait_for_selector("#leaderboard tbody tr[data-row]")
    torch, det = _row_index(page, views[2]["lenet/torch"]), _row_index(page, views[2]["det/ort"])
    assert torch >= 0 and det >= 0
    _open(page, views, "#/pareto")
    info = _pareto(page, "latency")
    assert torch not in info["rows"]  # no accuracy: not on an accuracy plot
    info = _pareto(page, "latency-throughput")
    assert torch in info["rows"] and det in info["rows"]
    _assert_inside(info)
    _assert_apart(info)
    page.screenshot(path=str(page.shots / "pareto-throughput.png"), full_page=True)
    info = _pareto(page, "latency-memory")
    assert torch in info["rows"]
    _assert_inside(info)
    assert not page.problems


def test_a_site_of_benchmarks_only_opens_on_a_plot_that_shows_them(page, tmp_path):
    rng = random.Random(3)
    laptop = _laptop()
    for i, (backend, median) in enumerate((("onnxruntime", 25_000), ("tflite", 10_000))):
        write(sample.benchmark_record("lenet-digits", backend, backend, "fp32", laptop, sample.latencies(median, 100, rng),
                                      uid=f"e{i:015x}", started="2026-12-02T10:00:00.000Z"), tmp_path / "r" / f"{i}.json")
    info = build(tmp_path / "r", tmp_path / "site")
    _open(page, (tmp_path / "site", info, {}), "#/pareto")
    info = _pareto(page)
    assert info["plot"] == "latency-throughput" and len(info["rows"]) == 2
    assert not page.problems


# ---------------------------------------------------------------- leaderboard


def test_a_benchmark_only_row_shows_its_model_task(page, views):
    _open(page, views, "#/leaderboard")
    page.wait_for_selector("#leaderboard tbody tr[data-row]")
    for name, task in (("lenet/torch", "classification"), ("det/ort", "detection")):
        row = page.locator(f"#leaderboard tbody tr[data-row]:has(a[href='#/result/{views[2][name]}'])")
        assert row.locator("td[data-col=top1]").inner_text() == "\u2014"  # benchmark only
        assert row.locator("td[data-col=task]").inner_text().split("\n")[0] == task
    _open(page, views, f"#/result/{views[2]['lenet/torch']}")
    page.wait_for_selector("table.overview")
    assert "classification" in page.locator("table.overview").inner_text()
    assert not page.problems


def test_runs_that_differ_only_in_threads_are_two_rows_with_their_config(page, views):
    rows = _rows(_load_js(views[0] / "data" / "index.js", "CR_DATA_INDEX"))
    pi = [r for r in rows if r["name"] == "lenet-digits" and r["platform_label"].startswith("Raspberry")]
    assert sorted(r["config"] for r in pi) == ["threads=1 batch=1", "threads=2 batch=1"]
    assert all(r["top1"] == pytest.approx(0.9806) and r["runs"] == 2 for r in pi)  # the one validation joins both
    assert {r["bench_uid"] for r in pi} == {views[2]["pi/threads1"], views[2]["pi/threads2"]}
    _open(page, views, "#/leaderboard")
    page.wait_for_selector("#leaderboard tbody tr[data-row]")
    configs = page.locator("#leaderboard td[data-col=scenario] [data-part=config]").all_text_contents()
    assert sorted(c for c in configs if "threads" in c) == ["threads=1 batch=1", "threads=2 batch=1"]
    assert set(configs) == {"batch=1", "threads=1 batch=1", "threads=2 batch=1"}  # every benchmark: the batch that ran
    page.select_option("select[data-filter=config]", "threads=2 batch=1")
    assert page.locator("#leaderboard tbody tr[data-row]").count() == 1
    _open(page, views, f"#/result/{views[2]['pi/threads1']}")
    page.wait_for_selector("table.runs")
    assert "threads=1" in page.locator("table.overview").inner_text()
    # another thread count is another configuration: not among the runs of this one
    assert "threads=2" not in page.locator("table.runs").inner_text()
    assert "threads=1 batch=1" in page.locator("table.runs").inner_text()
    assert not page.problems


def test_config_cell_names_what_differs_and_leaves_defaults_out():
    from cr.dashboard.records import SHOWN_BESIDE, summarise, F

    def cell(record):
        return summarise(record)[F["config"]]

    rec = sample.benchmark_record("m", "onnxruntime", "onnx", "fp32", sample.PI4, [1, 2, 3], uid="0" * 16,
                                  started="2026-12-01T10:00:00.000Z")
    assert cell(rec) == "batch=1"  # the batch that ran; no default, measurement knob or column of its own
    assert set(SHOWN_BESIDE) == {"scenario", "split"}  # the leaderboard's cell shows the scenario above it
    rec["config"].update(threads=2, batch_size=4, engine="loadgen", include_preprocess=True, target_qps=50,
                         backend_options={"intra_op_num_threads": 1}, max_duration_s=25, warmup_max_s=5)
    assert cell(rec) == "threads=2 batch=4 engine=loadgen include_preprocess=true intra_op_num_threads=1"
    rec["config"]["scenario"] = "server"
    assert "target_qps=50" in cell(rec) and "samples_per_query" not in cell(rec)
    rec["config"]["scenario"] = "multi-stream"
    assert "samples_per_query=8" in cell(rec)
    val = sample.validate_record("m", "onnxruntime", "onnx", "fp32", sample.PI4, 0.9, uid="0" * 16,
                                 started="2026-12-01T10:00:00.000Z")
    assert cell(val) == ""
    val["config"]["limit"] = 100
    assert cell(val) == "limit=100"


def test_a_configuration_with_only_run_results_has_a_row(tmp_path):
    rec = sample.validate_record("run-only", "tflite", "tflite", "fp32", sample.PI4, 0.9, uid="f" * 16,
                                 started="2026-12-01T10:00:00.000Z")
    rec["action"], rec["validation"] = "run", None
    write(rec, tmp_path / "r" / "run.json")
    info = build(tmp_path / "r", tmp_path / "site")  # (this raised TypeError before)
    rows = _rows(_load_js(tmp_path / "site" / "data" / "index.js", "CR_DATA_INDEX"))
    assert info.rows == 1 and rows[0]["other_uid"] == "f" * 16 and rows[0]["other_action"] == "run"


# ---------------------------------------------------------------- compare


def _judgement(pg, metric: str) -> tuple[str, str]:
    cell = pg.locator(f"#compare tr[data-metric='{metric}'] td.result-col").nth(1).locator(".diff")
    return cell.get_attribute("data-judgement"), cell.get_attribute("class")


def test_compare_colours_only_differences_beyond_noise(page, views):
    uids = views[2]
    _open(page, views, f"#/compare/{uids['cmp/base']},{uids['cmp/slow']}")
    page.wait_for_selector("#compare")
    _settle(page)
    verdict, cls = _judgement(page, "peak memory")
    assert verdict == "noise" and "better" not in cls and "worse" not in cls
    assert "+0.8 %" in page.locator("#compare tr[data-metric='peak memory']").inner_text()
    for metric in ("p50 latency", "p90 latency", "mean latency"):
        verdict, cls = _judgement(page, metric)
        assert verdict == "worse" and "worse" in cls, metric
    assert _judgement(page, "throughput")[0] == "worse"  # half the throughput
    colour = page.evaluate("""(m) => getComputedStyle(document.querySelectorAll(
        `#compare tr[data-metric='${m}'] td.result-col`)[1].querySelector('.diff')).color""", "peak memory")
    red = page.evaluate("getComputedStyle(document.querySelector('#compare .diff.worse')).color")
    assert colour != red and red == page.evaluate(
        "(() => { const s = document.createElement('span'); s.className = 'status-failed'; document.body.appendChild(s);"
        " const c = getComputedStyle(s).color; s.remove(); return c; })()")
    page.screenshot(path=str(page.shots / "compare-noise.png"), full_page=True)
    # two runs of one distribution: their latencies differ by noise only
    _open(page, views, f"#/compare/{uids['cmp/base']},{uids['cmp/same']}")
    page.wait_for_selector("#compare")
    verdict, cls = _judgement(page, "p50 latency")
    assert verdict in ("noise", "same") and "worse" not in cls and "better" not in cls
    assert _judgement(page, "peak memory")[0] == "same"
    assert not page.problems


# ---------------------------------------------------------------- fuzzed records

POOL = ["12", "abc", "", "\u202e\u0301\U0001F600" * 20, "<b>x</b>", "\u0000", "PASS", [], {}, None, 0, -1, 1.5, 1e308,
        10 ** 30, -(10 ** 20), 5e-324, True, False, [1, "a", None, {}], [None], [[1]], [{"a": 1}], {"a": {"b": [None]}},
        {"outcome": 5}, ["x"] * 3, "1e309"]
# Where the schema leaves a field open (or allows null) and a view reads it: mutated more often.
TARGETS = [tuple(p.split("/")) for p in (
    "metrics/batch_size metrics/samples_per_query metrics/server metrics/server/target_qps metrics/server/achieved_qps "
    "metrics/engine metrics/energy metrics/energy/joules_per_sample metrics/energy_j_per_sample metrics/noise "
    "metrics/noisy metrics/invalid_reasons metrics/latency_ns metrics/latency_ns/count metrics/validity metrics/scenario "
    "metrics/throughput metrics/queries metrics "
    "validation/misses validation/checks validation/checks/0 validation/checks/0/ok validation/task validation/top1 "
    "validation/outcome validation/samples validation "
    "lock lock/software lock/software/0 lock/software/0/requested_by lock/missing lock/platform lock/status "
    "parity parity/pairs parity/pairs/0 parity/pairs/0/backends parity/tolerance parity/outcome "
    "reproduction reproduction/checks reproduction/outcome reproduction/status "
    "error error/type error/stderr_tail error/kind error/hint "
    "platform/cpu platform/cpu/flags platform/cpu/cores platform/cpu/model platform/accelerators "
    "platform/accelerators/0/memory_bytes platform/accelerators/0/driver platform/capabilities platform/memory_bytes "
    "platform/libc platform/board platform/arch platform/python "
    "backend backend/options backend/info backend/info/version backend/info/framework backend/entry "
    "runtime runtime/python model_file model_file/path pipeline pipeline/preprocess pipeline/variant pipeline/precision "
    "components/0/uid components/0/sha256 components/0/task components/0/repo components/1 "
    "config config/threads config/batch_size config/backend_options config/dataset config/variant config/backend "
    "config/split config/engine config/inputs inputs inputs/dataset tags tags/0 predictions profile raw cr_version "
    "metrics/phases metrics/phases/warmup metrics/phases/warmup/window_medians_ns metrics/phases/steady metrics/fidelity "
    "metrics/fidelity/ratio machine machine/summary machine/summary/cpu_other_share machine/summary/throttled"
).split()]


def _set(rec: dict, path: tuple, value) -> None:
    """rec[path] = value, making the containers on the way (a list for a numeric part)."""
    node = rec
    for i, part in enumerate(path):
        last = i == len(path) - 1
        key = int(part) if part.isdigit() else part
        if isinstance(key, int):
            if not isinstance(node, list):
                return
            while len(node) <= key:
                node.append({})
        elif not isinstance(node, dict):
            return
        if last:
            node[key] = value
            return
        nxt = path[i + 1]
        if not isinstance(node[key] if isinstance(key, int) else node.get(key), (dict, list)):
            node[key] = [] if nxt.isdigit() else {}
        node = node[key]


def _templates() -> list[dict]:
    rng = random.Random(5)
    laptop = _laptop()
    bench = sample.benchmark_record("fuzz-net", "onnxruntime", "onnx", "fp32", laptop, sample.latencies(30_000, 50, rng),
                                    uid="0" * 16, started="2026-12-03T10:00:00.000Z", tags=["a", "b"])
    bench["metrics"]["server"] = {"target_qps": 100, "achieved_qps": 99.5, "p99_ms": 3.1, "latency_bound_ms": 100}
    bench["metrics"]["energy"] = {"joules_per_sample": 0.002}
    bench["reproduction"] = {"outcome": "PASS", "checks": [{"metric": "top1", "ok": True}]}
    val = sample.validate_record("fuzz-net", "onnxruntime", "onnx", "fp32", laptop, 0.97, uid="0" * 16,
                                 started="2026-12-03T09:00:00.000Z")
    val["parity"] = {"outcome": "PASS", "tolerance": 1e-4, "pairs": [{"backends": ["onnxruntime", "torch"], "samples": 8,
                                                                    "max_abs_diff": 1e-6, "top1_agreement": 1.0, "ok": True}]}
    failed = sample.benchmark_record("fuzz-net", "torch", "torchscript", "fp32", laptop, [1, 2], uid="0" * 16,
                                     started="2026-12-03T11:00:00.000Z", status="failed", metrics=None, raw=None,
                                     error={"kind": "crash", "type": "Signal", "message": "SIGSEGV", "hint": "h",
                                            "stderr_tail": "boom"})
    locked = copy.deepcopy(bench)
    from helpers.dashboard import LOCK
    locked["lock"] = copy.deepcopy(LOCK)
    other = sample.validate_record("run-net", "tflite", "tflite", "fp32", laptop, 0.9, uid="0" * 16,
                                   started="2026-12-03T12:00:00.000Z")  # a configuration with `cr run` results only
    other["action"], other["validation"] = "run", None
    other["predictions"] = [{"id": "1", "top": [{"label": 3, "score": 0.9}]}]
    return [bench, val, failed, locked, other]


def _paths(node, prefix=()):
    """Every (path, value) below node."""
    yield prefix, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:6]):
            yield from _paths(v, prefix + (i,))


def _mutate(rec: dict, rng: random.Random) -> dict:
    rec = copy.deepcopy(rec)
    for _ in range(rng.randint(1, 6)):
        value = copy.deepcopy(rng.choice(POOL))
        if rng.random() < 0.7:
            _set(rec, rng.choice(TARGETS), value)
            continue
        path, _value = rng.choice([(p, v) for p, v in _paths(rec) if p])
        parent = rec
        for part in path[:-1]:
            parent = parent[part]
        op = rng.random()
        if op < 0.2 and isinstance(parent, dict):
            del parent[path[-1]]
        elif op < 0.3 and isinstance(parent, dict):
            parent[f"x{rng.randint(0, 9)}"] = value
        else:
            parent[path[-1]] = value
    return rec


def test_fuzzed_schema_valid_records_render_in_every_view(page, tmp_path):
    rng = random.Random(20261203)
    templates = _templates()
    folder = tmp_path / "fuzz"
    kept, tried = [], 0
    while len(kept) < 100 and tried < 3000:
        tried += 1
        rec = _mutate(rng.choice(templates), rng)
        rec["uid"] = f"{len(kept) + 1:016x}"
        if problems(rec):
            continue
        kept.append(rec)
        write(rec, folder / f"{rec['uid']}.json")
    assert len(kept) == 100, f"only {len(kept)} of {tried} mutated records were schema-valid"
    reporter = CollectingReporter()
    old = set_reporter(reporter)
    try:
        info = build(folder, tmp_path / "site")
    finally:
        set_reporter(old)
    site = (tmp_path / "site", info, {})
    shown = {uid for uid in _load_js(tmp_path / "site" / "data" / "runs.js", "CR_DATA_RUNS")["values"]["uid"]}
    assert len(shown) >= 90, reporter.warnings  # (records.check may skip a record whose "tags" is not a list)

    def visit(route):
        page.evaluate("(r) => { location.hash = r; }", route)
        _wait(page, f"() => location.hash === {json.dumps(route)} && window.CR_DASHBOARD.renders > 0")
        _settle(page)
        errors = page.evaluate("window.CR_DASHBOARD.errors")
        assert not errors and not page.problems, (route, errors, page.problems)

    _open(page, site, "#/leaderboard")
    page.wait_for_selector("#leaderboard tbody tr")
    for column in page.locator("#leaderboard th[data-col]").all():
        column.click()
    page.select_option("select[aria-label='rows per page']", "500")
    visit("#/pareto")
    for plot in ("latency", "throughput", "latency-throughput", "latency-memory"):
        page.select_option("select[data-control=x-axis]", plot)
        _settle(page)
        page.uncheck("input[data-control=log]")
        _settle(page)
        page.check("input[data-control=log]")
        _settle(page)
    assert not page.problems
    for uid in sorted(shown):
        visit(f"#/result/{uid}")
        _wait(page, f"() => document.querySelector('main').getAttribute('data-result') === {json.dumps(uid)}")
    ordered = sorted(shown)
    for i in range(0, 30, 3):
        visit("#/compare/" + ",".join(ordered[i:i + 3]))
        assert page.locator("#compare thead th.result-col").count() == 3
    assert not page.problems


# ---------------------------------------------------------------- the site's modules and the row table
# A view is one script that registers itself in the table of views (dashboard/README.md);
# a leaderboard row is laid out by the table of fields in cr/dashboard/records.py.

HELLO_VIEW = """(function () {
  var C = window.CR_SITE;
  C.view({ id: "hello", nav: "Hello", render: function (main, arg) {
    main.appendChild(C.h("p", { id: "hello" }, "hello " + arg + ": " + C.S.rows.length + " rows"));
  } });
  C.columns.add({ id: "arch", label: "Arch" }, { after: "backend" });
})();
"""


def _site_with_a_new_view(tmp_path: Path) -> Path:
    rng = random.Random(5)
    laptop = _laptop()
    write(sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", laptop, sample.latencies(25_000, 100, rng),
                                  uid="f000000000000001", started="2026-12-02T10:00:00.000Z"), tmp_path / "r" / "b.json")
    write(sample.validate_record("lenet-digits", "onnxruntime", "onnx", "fp32", laptop, 0.98, uid="f000000000000002",
                                 started="2026-12-02T10:01:00.000Z"), tmp_path / "r" / "v.json")
    site = tmp_path / "site"
    build(tmp_path / "r", site)
    (site / "views" / "hello.js").write_text(HELLO_VIEW, encoding="utf-8")
    index = (site / "index.html").read_text(encoding="utf-8")
    assert index.count('<script src="app.js" defer></script>') == 1
    (site / "index.html").write_text(index.replace('<script src="app.js" defer></script>',
                                                   '<script src="views/hello.js" defer></script>\n<script src="app.js" defer></script>'),
                                     encoding="utf-8")
    return site


def _check_new_view(page, base: str) -> None:
    page.goto(base + "#/hello/there")
    _wait(page, "() => !!window.CR_DASHBOARD && window.CR_DASHBOARD.ready")
    assert page.locator("#hello").text_content() == "hello there: 1 rows"
    assert page.locator("nav a[data-nav]").all_text_contents() == ["Leaderboard", "Pareto", "Hello"]
    page.click("nav a[data-nav=leaderboard]")
    page.wait_for_selector("#leaderboard tbody tr[data-row]")
    headers = page.locator("#leaderboard th[data-col]").evaluate_all("(ths) => ths.map((th) => th.dataset.col)")
    assert headers[headers.index("backend") + 1] == "arch" and "ap" not in headers  # (AP: only when a row has one)
    assert page.locator("#leaderboard td[data-col=arch]").all_text_contents() == ["x86_64"]
    assert page.locator("#leaderboard td[data-col=top1]").all_text_contents() == ["98.00 %"]
    assert not page.problems


def test_a_new_view_is_one_script_in_the_table_of_views_from_file(page, tmp_path):
    site = _site_with_a_new_view(tmp_path)
    _check_new_view(page, (site / "index.html").as_uri())


def test_the_site_in_modules_works_over_http(page, tmp_path):
    import threading

    from cr.dashboard.server import DashboardServer

    site = _site_with_a_new_view(tmp_path)  # served as `cr dashboard serve` serves it
    server = DashboardServer(("127.0.0.1", 0), site, tmp_path / "r", None, 1 << 20, quiet=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        _check_new_view(page, f"http://127.0.0.1:{server.server_address[1]}/index.html")
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/index.html#/result/f000000000000001")
        _wait(page, "() => document.querySelector('main').getAttribute('data-result') === 'f000000000000001'")
        assert page.locator("section#latency").count() == 1 and page.locator("section#phases, section#metrics").count() >= 1
        assert not page.problems
    finally:
        server.shutdown()
        server.server_close()


def test_leaderboard_columns_follow_the_table_of_fields(tmp_path):
    from cr.dashboard import leaderboard, records

    rng = random.Random(6)
    laptop = _laptop()
    bench = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", laptop, sample.latencies(25_000, 100, rng),
                                    uid="f000000000000001", started="2026-12-02T10:00:00.000Z")
    bench["tags"] = ["b-tag"]
    val = sample.validate_record("lenet-digits", "onnxruntime", "onnx", "fp32", laptop, 0.98, uid="f000000000000002",
                                 started="2026-12-02T10:01:00.000Z")
    val["validation"]["ap50"] = 0.5
    write(bench, tmp_path / "r" / "b.json")
    write(val, tmp_path / "r" / "v.json")
    build(tmp_path / "r", tmp_path / "site")
    index = _load_js(tmp_path / "site" / "data" / "index.js", "CR_DATA_INDEX")
    (row,) = _rows(index)
    summary = {"bench": dict(zip(records.FIELDS, records.summarise(bench))),
               "validate": dict(zip(records.FIELDS, records.summarise(val)))}
    taken = 0
    for field in records.TABLE:  # every column a field gives the row holds that field of the run it names
        for column, source in (field.row.items() if isinstance(field.row, dict) else [(field.name, field.row)]):
            if source in ("bench", "validate"):
                value = summary[source][field.name]
                if column.endswith("_loc"):
                    assert row[column] and len(row[column]) == 4
                else:
                    assert row[column] == value, (column, row[column], value)
                taken += 1
            elif source in ("bench validate", "validate bench"):
                first, second = source.split()
                assert row[column] == (summary[first][field.name] or summary[second][field.name]), column
    assert taken >= 15 and row["ap50"] == 0.5 and row["p50_ns"] == summary["bench"]["p50_ns"] and row["tags"] == ["b-tag"]
    assert set(index["columns"]) == set(leaderboard.ROW_COLUMNS) and len(index["columns"]) == len(set(index["columns"]))
    # an older build's summary (before the fields after "loc") gets the empty values of the fields it lacks
    board = leaderboard.Leaderboard()
    board.add(records.summarise(bench)[:records.F["loc"] + 1])
    (old,) = _rows(board.result({})[0])
    assert old["dataset"] == "" and old["campaign"] == "" and old["ap"] is None and old["p50_ns"] == row["p50_ns"]


def test_a_field_with_an_unknown_row_source_is_refused(monkeypatch):
    from cr.dashboard import leaderboard, records

    bad = records.Field("speed", "number", "1", row="fastest")
    monkeypatch.setattr(leaderboard, "TABLE", records.TABLE + (bad,))
    with pytest.raises(ValueError, match="'speed'.*'fastest'"):
        leaderboard._row_plan()
