"""The dashboard's first view on a realistic store, in Chromium at 1366x768 and 1920x1080.

The store holds what a user's store holds after the README's tour: a solution benchmarked
single-stream and offline and validated, other backends (tflite single-stream, torch
offline), a failed benchmark, a `cr run` record and a real profile record made by
`cr.run_action("profile", ...)`. Every benchmark's config carries the action's defaults as
run_action merges them (max_duration_s=25, warmup_max_s=5, ...), as real records do.

What a user relies on: the first row has figures; failed and figure-less rows wait behind a
toggle that says how many; the page never scrolls sideways at 1366 px (the table scrolls in
its own box, the model column pinned); configuration labels leave out how long a run
measured; "Runs of this configuration" lists only runs of the same configuration; profiles
are never leaderboard rows; a Pareto latency axis holds one latency definition, named.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from cr.dashboard import build, sample
from cr.events import CollectingReporter, set_reporter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers.dashboard import ROOT, _load_js, _rows, _wait, browser, write  # noqa: E402,F401  (fixtures)

SIZES = [(1366, 768), (1920, 1080)]
MEASUREMENT_WORDS = ("max_duration_s", "warmup_max_s", "min_duration_s", "min_queries", "warmup_queries", "timeout_s",
                     "seed", "input_pool")
BENCH_DEFAULTS = json.loads((ROOT / "actions" / "benchmark" / "meta.json").read_text(encoding="utf-8"))["defaults"]


def _bench(rng, uid, started, backend, variant, median, scenario="single-stream", batch=1, threads=1, model="lenet-digits",
           solution=None, **config):
    rec = sample.benchmark_record(model, backend, variant, "fp32", sample.XEON, sample.latencies(median, 400, rng),
                                  uid=uid, started=started, scenario=scenario)
    rec["metrics"] = sample.latency_metrics(rec["raw"]["latencies_ns"], scenario, batch)
    rec["metrics"]["samples_per_query"] = batch  # the harness: one query is one batch outside multi-stream
    rec["config"] = {**BENCH_DEFAULTS, **rec["config"], "scenario": scenario, "batch_size": batch, "threads": threads,
                     **config}
    if solution:
        _as_solution(rec, solution)
    return rec


def _as_solution(rec, name):
    rec["components"].insert(0, {"ref": f"solution:{name}@1.0.0", "kind": "solution", "name": name, "version": "1.0.0",
                                 "uid": "0f264e78857548d8", "repo": "builtin",
                                 "sha256": "0f6b2ea4c05b4b9c36a3b8fb4d5e0f9a8f60b3ce1e0b3d3c0b0f5f2f0e0d0c0b"})


def make_store(folder: Path) -> dict:
    """The records (as files in folder); returns {name: uid}."""
    rng = random.Random(28)
    uids = {}

    def put(name, rec):
        write(rec, folder / f"{name}.json")
        uids[name] = rec["uid"]

    sol = "lenet-digits-onnxruntime"
    # the solution: single-stream twice (an older run of the same configuration), once with
    # 2 threads (another configuration), offline, and its validation
    put("sol-ss-old", _bench(rng, "a000000000000001", "2026-12-03T09:00:00.000Z", "onnxruntime", "onnx", 17_000, solution=sol,
                             min_duration_s=2, min_queries=1000))
    put("sol-ss", _bench(rng, "a000000000000002", "2026-12-03T10:00:00.000Z", "onnxruntime", "onnx", 16_200, solution=sol,
                         min_duration_s=2, min_queries=1000))
    put("sol-ss-t2", _bench(rng, "a000000000000003", "2026-12-03T10:05:00.000Z", "onnxruntime", "onnx", 12_000, solution=sol,
                            threads=2))
    put("sol-off", _bench(rng, "a000000000000004", "2026-12-03T10:01:00.000Z", "onnxruntime", "onnx", 88_700, solution=sol,
                          scenario="offline", batch=32, min_duration_s=2, min_queries=200))
    val = sample.validate_record("lenet-digits", "onnxruntime", "onnx", "fp32", sample.XEON, 0.9806, uid="a000000000000005",
                                 started="2026-12-03T10:02:00.000Z")
    _as_solution(val, sol)
    put("sol-val", val)
    # other backends on the model
    put("tflite-ss", _bench(rng, "b000000000000001", "2026-12-03T11:00:00.000Z", "tflite", "tflite", 4_700))
    put("tflite-val", sample.validate_record("lenet-digits", "tflite", "tflite", "fp32", sample.XEON, 0.9806,
                                             uid="b000000000000002", started="2026-12-03T11:01:00.000Z"))
    put("torch-off", _bench(rng, "b000000000000003", "2026-12-03T11:02:00.000Z", "torch", "torchscript", 376_000,
                            scenario="offline", batch=32))
    # a failed benchmark (the runtime timed out): no metrics, no precision; it sorts first by name
    failed = _bench(rng, "c000000000000001", "2026-12-03T12:00:00.000Z", "onnxruntime", "onnx", 10_000, timeout_s=0.05)
    failed.update(status="failed", metrics=None, raw=None,
                  error={"type": "RuntimeTimeout", "message": "the runtime did not finish within 0.05 s and was stopped",
                         "hint": "raise --timeout if the run needs longer"})
    failed["pipeline"]["precision"] = None
    put("failed", failed)
    # a `cr run` record: predictions, no figure
    run = sample.validate_record("lenet-digits", "onnxruntime", "onnx", "fp32", sample.XEON, 0.0, uid="c000000000000002",
                                 started="2026-12-03T12:01:00.000Z")
    run["components"][2]["ref"] = "action:run@0.1.0"
    run.update(action="run", validation=None, predictions=[{"sample": 0, "label": 0, "top": [[0, 1.0]]}])
    run["config"] = {"limit": 8, "top_k": 5, "timeout_s": 600, **run["config"]}
    put("run", run)
    return uids


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The made-up records plus a real profile record, made by cr.run_action("profile", ...) into its own CR_HOME."""
    folder = tmp_path_factory.mktemp("firstview-results")
    uids = make_store(folder)
    home = tmp_path_factory.mktemp("firstview-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CR_HOME", str(home))
        import cr

        profile = cr.run_action("profile", "model:lenet-digits", backend="onnxruntime", params={"samples": 10})
    uids["profile"] = profile["uid"]
    out = tmp_path_factory.mktemp("firstview-site") / "dash"
    old = set_reporter(CollectingReporter())
    try:
        build([folder, home / "results"], out)
    finally:
        set_reporter(old)
    return {"site": out, "uids": uids, "profile": profile, "home": home, "folder": folder}


def test_run_action_profile_works_and_its_record_is_stored_but_never_a_row(store):
    profile = store["profile"]
    assert profile["status"] == "ok", profile.get("error")
    assert profile["action"] == "profile" and profile["profile"]["layers"]
    assert profile["trace"]["file"]  # the trace kept beside the stored record
    assert list((store["home"] / "results").rglob(f"{profile['uid']}.json"))
    index = _load_js(store["site"] / "data" / "index.js", "CR_DATA_INDEX")
    rows = _rows(index)
    assert profile["uid"] not in {r["other_uid"] for r in rows}
    assert not any(r["other_action"] in ("profile", "benchmark (profiled)") for r in rows)
    # the profile's configuration (the model on onnxruntime, fp32) holds an older `cr run`: its row is the run's
    own = [r for r in rows if (r["subject"], r["backend"], r["precision"]) == ("model:lenet-digits@1.0.0", "onnxruntime", "fp32")]
    assert [(r["other_action"], r["other_uid"]) for r in own] == [("run", store["uids"]["run"])]
    runs = _load_js(store["site"] / "data" / "runs.js", "CR_DATA_RUNS")
    assert profile["uid"] in runs["values"]["uid"]  # its result page and run lists still find it


def _page(browser, size, shots):
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    pg = context.new_page()
    problems = []
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    pg.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    pg.problems, pg.shots = problems, shots
    return context, pg


@pytest.fixture(params=SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def sized(request, browser, tmp_path):
    context, pg = _page(browser, request.param, tmp_path)
    pg.size = request.param
    yield pg
    assert pg.problems == []
    context.close()


def _open(pg, site: Path, route: str) -> None:
    pg.goto((site / "index.html").as_uri() + route)
    _wait(pg, "() => !!window.CR_DASHBOARD && window.CR_DASHBOARD.ready")


def _board(pg) -> list[dict]:
    return pg.evaluate("""() => Array.from(document.querySelectorAll('#leaderboard tbody tr[data-row]')).map(tr => {
        const cell = c => tr.querySelector('td[data-col=' + c + ']');
        return {row: +tr.getAttribute('data-row'), name: cell('name').innerText, backend: cell('backend').innerText,
                scenario: cell('scenario').innerText, status: cell('status').innerText,
                figures: Array.from(tr.querySelectorAll('td.num[data-value]')).map(td => td.getAttribute('data-col'))};
    })""")


def test_first_row_has_figures_and_failed_rows_wait_behind_a_counted_toggle(sized, store):
    pg = sized
    _open(pg, store["site"], "#/leaderboard")
    rows = _board(pg)
    pg.screenshot(path=str(pg.shots / f"leaderboard-{pg.size[0]}.png"))
    assert rows and {"p50_ns", "throughput"} <= set(rows[0]["figures"])
    # every shown row has a figure and none failed
    assert all(set(r["figures"]) - {"runs"} for r in rows)
    assert not any("failed" in r["status"] for r in rows)
    assert not any(r["name"].splitlines()[-1].strip() == "run" for r in rows)
    toggle = pg.locator("[data-action=toggle-hidden]")
    assert toggle.inner_text() == "2 failed or without figures: show"
    assert pg.evaluate("window.CR_DASHBOARD.rowsHidden") == 2
    toggle.click()
    after = _board(pg)
    assert toggle.inner_text() == "2 failed or without figures: hide"
    assert len(after) == len(rows) + 2
    assert after[:len(rows)] == rows  # the rows with figures stay first
    tail = after[len(rows):]
    assert any("failed" in r["status"] and "0.05 s" in r["status"] for r in tail)
    assert any(r["name"].splitlines()[-1].strip() == "run" for r in tail)
    toggle.click()
    assert len(_board(pg)) == len(rows)


def test_the_page_never_scrolls_sideways_and_the_model_column_stays_pinned(sized, store):
    pg = sized
    _open(pg, store["site"], "#/leaderboard")
    pg.locator("[data-action=toggle-hidden]").click()  # the failed row's error text is the widest cell
    width = pg.evaluate("document.documentElement.clientWidth")
    assert pg.evaluate("document.documentElement.scrollWidth") <= width
    wrap = pg.locator(".table-wrap")
    box = wrap.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width
    pg.evaluate("document.querySelector('.table-wrap').scrollLeft = 1e6")
    name_before = pg.locator("#leaderboard tbody tr[data-row] td[data-col=name]").first.bounding_box()
    status = pg.locator("#leaderboard thead th[data-col=status]").bounding_box()
    pg.screenshot(path=str(pg.shots / f"leaderboard-scrolled-{pg.size[0]}.png"))
    # the last column can be reached inside the table's box, and the model column did not move
    assert status["x"] + status["width"] <= box["x"] + box["width"] + 1
    assert abs(name_before["x"] - (box["x"] + 30)) <= 2
    if pg.size[0] >= 1920:  # a desktop screen shows every column without scrolling
        assert pg.evaluate("(() => { const w = document.querySelector('.table-wrap'); return w.scrollWidth <= w.clientWidth; })()")


def test_config_labels_leave_out_how_long_a_run_measured(sized, store):
    pg = sized
    records = [json.loads(p.read_text(encoding="utf-8")) for p in store["folder"].glob("*.json")]
    assert any("max_duration_s" in (r.get("config") or {}) for r in records)  # real records carry them
    _open(pg, store["site"], "#/leaderboard")
    pg.locator("[data-action=toggle-hidden]").click()
    configs = pg.evaluate("Array.from(document.querySelectorAll('#leaderboard td[data-col=scenario]')).map(td => td.innerText)")
    assert configs and any("threads=1 batch=32" in c for c in configs)
    for text in configs:
        for word in MEASUREMENT_WORDS:
            assert word not in text, text


def test_runs_of_this_configuration_lists_only_its_own_runs(sized, store):
    pg = sized
    uids = store["uids"]
    _open(pg, store["site"], f"#/result/{uids['sol-ss']}")
    _wait(pg, "() => !!document.querySelector('#history table')")
    listed = pg.evaluate("""() => Array.from(document.querySelectorAll('#history table tbody tr'))
        .map(tr => tr.innerText)""")
    pg.screenshot(path=str(pg.shots / f"runs-{pg.size[0]}.png"), full_page=True)
    text = "\n".join(listed)
    assert len(listed) == 2, listed
    assert uids["sol-ss-old"] in text and "this one" in text
    for other in ("sol-ss-t2", "sol-off", "sol-val", "failed"):
        assert uids[other] not in text, other
    for word in MEASUREMENT_WORDS:
        assert word not in text


def test_pareto_latency_axes_hold_one_definition_named_in_the_title(sized, store):
    pg = sized
    _open(pg, store["site"], "#/pareto")
    pg.select_option("[data-control=x-axis]", "latency-throughput")
    _wait(pg, "() => !!window.CR_DASHBOARD.pareto && window.CR_DASHBOARD.pareto.plot === 'latency-throughput'")
    info = pg.evaluate("window.CR_DASHBOARD.pareto")
    index = _rows(_load_js(store["site"] / "data" / "index.js", "CR_DATA_INDEX"))
    assert "per sample" in info["x"]["title"] and "per batch" not in info["x"]["title"]
    assert {index[i]["query_samples"] for i in info["rows"]} == {1}
    assert {index[i]["scenario"] for i in info["rows"]} == {"single-stream"}
    assert "(2 of them measure latency per batch: choose Latency: per batch)" in pg.locator("#pareto-note").inner_text()
    pg.screenshot(path=str(pg.shots / f"pareto-sample-{pg.size[0]}.png"), full_page=True)
    pg.select_option("[data-control=latency]", "batch")
    _wait(pg, "() => document.getElementById('pareto').getAttribute('data-latency') === 'batch'")
    info = pg.evaluate("window.CR_DASHBOARD.pareto")
    assert "per batch" in info["x"]["title"]
    assert {index[i]["query_samples"] for i in info["rows"]} == {32}
    assert {index[i]["scenario"] for i in info["rows"]} == {"offline"}
    pg.screenshot(path=str(pg.shots / f"pareto-batch-{pg.size[0]}.png"), full_page=True)
