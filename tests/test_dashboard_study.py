"""The dashboard's study views tell which configuration to ship, by the same rule as cr.

In Chromium (tests/helpers/dashboard.py's browser): a campaign's page is a matrix of the
keys its jobs vary (backend x threads here), each cell PASS / FAIL / failed / not run with
its p50 and top-1; a campaign that varies pipeline keys gets a table of accuracy per
variant with its delta to the baseline; the Pareto plot joins only the points no other
point dominates and rings the tied ones; the site's Pareto rule (lib/pareto.js) gives
exactly the statuses cr.results.pareto.analyse gives on the same random points; a tune
run's page lists its trials, its front and its recommendation.
"""
from __future__ import annotations

import base64
import copy
import hashlib
import json
import random
import sys
from pathlib import Path

import pytest

from cr.dashboard import build, records, sample
from cr.events import CollectingReporter, set_reporter
from cr.platform import detect
from cr.results.pareto import analyse, measure, objective
from cr.results.validate import problems

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers.dashboard import PLATFORMS, _open, _wait, browser, page, write  # noqa: E402,F401  (fixtures)


def _laptop() -> dict:
    return detect(PLATFORMS / "x86-laptop").to_dict()


VARIANT = {"onnxruntime": "onnx", "tflite": "tflite", "torch": "torchscript"}


def make_study_store(folder: Path) -> dict:
    """Records of a backend x threads campaign, a pipeline campaign and a tune run; {name: uid}."""
    rng = random.Random(25)
    laptop = _laptop()
    uids, n = {}, 0

    def put(name, rec):
        nonlocal n
        n += 1
        write(rec, folder / f"{n:03d}-{name}.json")
        uids[name] = rec["uid"]
        return rec

    def settle(rec, threads, dataset):
        if threads is not None:
            rec["config"]["threads"] = threads
            if "threads" in rec["backend"]["info"]:  # torch reports the threads it ran with
                rec["backend"]["info"]["threads"] = threads
        if dataset:
            rec["config"]["dataset"] = rec["inputs"]["dataset"] = dataset
        return rec

    def bench(name, model, backend, median, threads=None, dataset=None, **extra):
        rec = sample.benchmark_record(model, backend, VARIANT[backend], "fp32", laptop, sample.latencies(median, 600, rng),
                                      uid=f"b{n + 1:015x}", started=f"2026-12-02T10:{n + 1:02d}:00.000Z", **extra)
        return put(name, settle(rec, threads, dataset))

    def validate(name, model, backend, top1, expected=None, threads=None, dataset=None, **extra):
        rec = sample.validate_record(model, backend, VARIANT[backend], "fp32", laptop, top1, expected=expected,
                                     uid=f"a{n + 1:015x}", started=f"2026-12-02T11:{n + 1:02d}:00.000Z", **extra)
        return put(name, settle(rec, threads, dataset))

    def job(campaign, jid):
        return {"name": campaign, "uid": "6a1f0c2e9b7d4a35", "job": hashlib.sha256(jid.encode()).hexdigest()[:16], "attempt": 1}

    # campaign "grid": backend x threads. torch threads=2 never ran; tflite threads=2's
    # benchmark failed; onnxruntime threads=2's validation FAILed.
    for backend, threads, median, top1, expected in (("onnxruntime", 1, 30_000, 0.98, 0.98), ("onnxruntime", 2, 18_000, 0.96, 0.98),
                                                      ("tflite", 1, 12_000, 0.97, 0.97), ("tflite", 2, 8_000, 0.97, 0.97),
                                                      ("torch", 1, 50_000, 0.98, 0.98)):
        jid = f"{backend[:4]}{threads}"
        b = bench(f"grid-{jid}-b", "lenet-digits", backend, median, threads=threads, campaign=job("grid", jid))
        if (backend, threads) == ("tflite", 2):
            b["status"], b["metrics"], b["raw"] = "failed", None, None
            b["error"] = {"message": "the benchmark process crashed", "hint": None}
            write(b, next(folder.glob(f"*-grid-{jid}-b.json")))
        # the validate records of threads=1 jobs do not state the threads: the job's benchmark does
        validate(f"grid-{jid}-v", "lenet-digits", backend, top1, expected, threads=threads if threads > 1 else None,
                 campaign=job("grid", jid))

    # campaign "three": backend x threads x batch, benchmarks only (a full grid: no key follows another)
    for backend in ("onnxruntime", "tflite"):
        for threads in (1, 2):
            for batch in (1, 8):
                jid = f"3{backend[:4]}{threads}{batch}"
                rec = bench(f"three-{jid}", "mnist-net", backend, 20_000 * batch / threads, threads=threads, campaign=job("three", jid))
                rec["config"]["batch_size"] = batch
                write(rec, next(folder.glob(f"*-three-{jid}.json")))

    # campaign "pipe": a pipeline study (validations only): the baseline and two overrides
    for jid, override, top1 in (("base", None, 0.9875), ("near", ("resize.interpolation", "nearest"), 0.975),
                                ("nonorm", ("normalize.std", "[1,1,1]"), 0.50)):
        v = validate(f"pipe-{jid}", "lenet-digits", "onnxruntime", top1, campaign=job("pipe", jid), samples=160)
        if override:
            v["config"]["pipeline." + override[0]] = override[1]
        if jid != "nonorm":  # per-sample correctness (cr.results.accuracy), on the same 160 samples
            right = round(top1 * 160)
            bits = bytes(sum(1 << b for b in range(8) if 8 * i + b < right) for i in range(20))
            ids = [str(i) for i in range(160)]
            v["validation"]["hits"] = {"encoding": "bitset-lsb0-base64", "count": 160, "ids": ids,
                                       "ids_sha256": hashlib.sha256("\n".join(ids).encode()).hexdigest(),
                                       "top1": base64.b64encode(bits).decode()}
        write(v, next(folder.glob(f"*-pipe-{jid}.json")))

    # tune run "tune-lenet": trial 0 and 2 within noise of each other (fast, 95 %), trial 1
    # slower and more accurate (front), trial 3 slower and no more accurate (dominated),
    # trial 4 excluded by a constraint, trial 5 failed; the study recommends trial 1. (Its own
    # model and dataset: a Pareto group of its own on the site's plot.)
    tuned = {"dataset": "dataset:digits@2.0.0"}
    for trial, backend, threads, median, top1, extra in ((0, "tflite", 1, 10_000, 0.95, {}), (1, "onnxruntime", 2, 20_000, 0.99, {"recommended": True}),
                                                         (2, "tflite", 2, 10_040, 0.95, {}), (3, "torch", 1, 30_000, 0.94, {}),
                                                         (4, "torch", 2, 5_000, 0.80, {"feasible": False}), (5, "onnxruntime", 1, 0, 0, {})):
        study = {"name": "tune-lenet", "uid": "9c1d7e2a4b6f8035", "trial": trial, **extra}
        if trial == 5:
            b = bench(f"tune-{trial}-b", "lenet-tune", backend, 20_000, threads=threads, study=study, **tuned)
            b["status"], b["metrics"], b["raw"] = "failed", None, None
            b["error"] = {"message": "onnxruntime: unsupported op", "hint": None}
            write(b, next(folder.glob(f"*-tune-{trial}-b.json")))
            continue
        bench(f"tune-{trial}-b", "lenet-tune", backend, median, threads=threads, study=study, **tuned)
        validate(f"tune-{trial}-v", "lenet-tune", backend, top1, threads=threads, study=study, **tuned)
    return uids


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("study-results")
    uids = make_study_store(folder)
    for path in folder.glob("*.json"):
        assert problems(json.loads(path.read_text(encoding="utf-8")), path.name) == []
    out = tmp_path_factory.mktemp("study-site") / "dash"
    old = set_reporter(CollectingReporter())
    try:
        info = build(folder, out)
    finally:
        set_reporter(old)
    return out, info, uids, folder


def _settle(pg, timeout: float = 15.0) -> None:
    _wait(pg, "() => window.CR_DASHBOARD.ready && !(window.CR_DASHBOARD.pending > 0)", timeout)


def test_rows_carry_the_intervals_and_the_setting_of_a_record():
    rng = random.Random(3)
    rec = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", sample.XEON, sample.latencies(25_000, 600, rng),
                                  uid="b1", started="2026-12-02T10:00:00.000Z")
    rec["config"]["threads"] = 2
    rec["config"]["pipeline.resize.interpolation"] = "nearest"
    row = dict(zip(records.FIELDS, records.summarise(rec)))
    assert row["p50_lo"] < row["p50_ns"] < row["p50_hi"] and row["throughput_lo"] < row["throughput"] < row["throughput_hi"]
    assert row["setting"] == row["figures"] == ""  # not from a campaign or a study: the run list stays small
    rec["study"] = {"name": "t", "uid": "0123456789abcdef", "trial": 3}
    row = dict(zip(records.FIELDS, records.summarise(rec)))
    setting = json.loads(row["setting"])
    assert setting["threads"] == "2" and setting["backend"] == "onnxruntime" and setting["pipeline.resize.interpolation"] == "nearest"
    assert json.loads(row["figures"])[:2] == [row["p50_lo"], row["p50_hi"]] and row["trial"] == "3" and row["study"] == "t"
    val = sample.validate_record("lenet-digits", "onnxruntime", "onnx", "fp32", sample.XEON, 0.95, uid="a1",
                                 started="2026-12-02T10:00:00.000Z", samples=360, study=rec["study"])
    row = dict(zip(records.FIELDS, records.summarise(val)))
    assert 0.92 < row["top1_lo"] < 0.95 < row["top1_hi"] < 0.97 and row["p50_lo"] is None
    assert json.loads(row["figures"]) == [None, None, None, None, row["top1_lo"], row["top1_hi"], 360, None]  # no hits kept


def test_a_study_benchmarks_intervals_are_cr_results_paretos_from_its_raw_latencies(site, tmp_path):
    """What cr tune and cr results pareto judge ties by: the p50's order statistics, not the IQR's approximation;
    from inline latencies and from a side file alike."""
    from helpers.dashboard import _load_js

    from cr.results.latencies import SIDE_SUFFIX, encode, side_raw

    folder = site[3]
    runs = _load_js(site[0] / "data" / "runs.js", "CR_DATA_RUNS")
    figures = dict(zip(runs["values"]["uid"], runs["values"]["figures"]))
    rec = json.loads(next(folder.glob("*-tune-1-b.json")).read_text(encoding="utf-8"))
    want = measure(rec, [objective("p50")], rec["raw"]["latencies_ns"])["p50"]
    assert json.loads(figures[rec["uid"]])[:2] == [records._num(want["lo"]), records._num(want["hi"])]
    approx = measure(rec, [objective("p50")])["p50"]
    assert records._num(approx["lo"]) != records._num(want["lo"])  # the two differ: the raw one was used
    # the same record with its latencies in a side file (as the store keeps them)
    blob = encode(rec["raw"]["latencies_ns"])
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / f"{rec['uid']}{SIDE_SUFFIX}").write_bytes(blob)
    rec["raw"] = side_raw(blob, f"{rec['uid']}{SIDE_SUFFIX}")
    write(rec, tmp_path / "r" / f"{rec['uid']}.json")
    old = set_reporter(CollectingReporter())
    try:
        build(tmp_path / "r", tmp_path / "site")
    finally:
        set_reporter(old)
    runs = _load_js(tmp_path / "site" / "data" / "runs.js", "CR_DATA_RUNS")
    assert json.loads(runs["values"]["figures"][0])[:2] == [records._num(want["lo"]), records._num(want["hi"])]


def test_the_campaign_page_is_a_matrix_of_the_keys_its_jobs_vary(page, site):
    _open(page, site, "#/campaign/grid")
    _settle(page)
    table = "table[data-campaign=grid]"
    assert page.get_attribute(table, "data-columns") == "backend" and page.get_attribute(table, "data-rows") == "threads"
    heads = page.eval_on_selector_all(f"{table} thead th", "els => els.map(e => e.textContent)")
    assert heads == ["threads", "backend=onnxruntime", "backend=tflite", "backend=torch"]
    rows = page.eval_on_selector_all(f"{table} tbody th", "els => els.map(e => e.textContent)")
    assert rows == ["threads=1", "threads=2"]
    status = page.eval_on_selector_all(f"{table} tbody tr", "trs => trs.map(tr => Array.from(tr.querySelectorAll('td')).map(td => td.getAttribute('data-status')))")
    assert status == [["PASS", "PASS", "PASS"], ["FAIL", "failed", "not run"]]
    cells = page.eval_on_selector_all(f"{table} td", "els => els.map(e => e.textContent)")
    assert "p50" in cells[0] and "top-1 98.00 %" in cells[0] and cells[-1] == "not run"
    links = page.eval_on_selector_all(f"{table} td a", "els => els.map(e => e.getAttribute('href'))")
    assert len(links) == 10 and f"#/result/{site[2]['grid-onnx2-v']}" in links
    rule = page.text_content("#campaign-rule")
    assert "first as columns" in rule and "variant (follows backend)" in rule
    summary = page.text_content("#campaign-summary")
    assert "5 jobs: 3 PASS, 1 FAIL (validation), 1 failed" in summary and "1 cell not run" in summary
    page.click(f"{table} td a")
    _wait(page, "() => location.hash.startsWith('#/result/') && !!document.querySelector('main[data-result]')")
    assert not page.problems


def test_more_than_two_varied_keys_the_first_is_columns_the_rest_rows(page, site):
    _open(page, site, "#/campaign/three")
    _settle(page)
    table = "table[data-campaign=three]"
    assert page.get_attribute(table, "data-columns") == "backend" and page.get_attribute(table, "data-rows") == "threads,batch_size"
    rows = page.eval_on_selector_all(f"{table} tbody th", "els => els.map(e => e.textContent)")
    assert rows == ["threads=1 \u00B7 batch=1", "threads=1 \u00B7 batch=8", "threads=2 \u00B7 batch=1", "threads=2 \u00B7 batch=8"]
    status = page.eval_on_selector_all(f"{table} td", "els => els.map(e => e.getAttribute('data-status'))")
    assert status == ["done"] * 8  # benchmarks without a validation
    assert "the others combined as rows" in page.text_content("#campaign-rule")
    assert not page.problems


def test_a_pipeline_campaign_shows_accuracy_per_variant_and_its_delta(page, site):
    _open(page, site, "#/campaign/pipe")
    _settle(page)
    # the pipeline variants are one dimension (each job overrides one step), not a cross of the steps
    assert page.get_attribute("table[data-campaign=pipe]", "data-columns") == "pipeline"
    heads = page.eval_on_selector_all("table[data-campaign=pipe] thead th", "els => els.map(e => e.textContent)")
    assert heads[1:] == ["pipeline as declared", "pipeline normalize.std=[1,1,1]", "pipeline resize.interpolation=nearest"]
    assert page.eval_on_selector_all("table[data-campaign=pipe] td", "els => els.map(e => e.getAttribute('data-status'))") == ["PASS"] * 3
    rows = page.eval_on_selector_all("#pipeline-table tbody tr", """trs => trs.map(tr => ({
        baseline: tr.getAttribute('data-baseline'), cells: Array.from(tr.querySelectorAll('td')).map(td => td.textContent),
        delta: tr.querySelector('[data-delta]').getAttribute('data-delta'),
        paired: tr.querySelectorAll('td')[7].getAttribute('data-paired')}))""")
    assert len(rows) == 3
    base = [r for r in rows if r["baseline"] == "1"]
    assert len(base) == 1 and "as declared" in base[0]["cells"][0] and base[0]["cells"][1] == "98.75 %"
    near = next(r for r in rows if "nearest" in r["cells"][0])
    assert near["cells"][4] == "-1.25 points" and near["cells"][5] == "intervals overlap"
    nonorm = next(r for r in rows if "normalize.std" in r["cells"][0])
    assert nonorm["cells"][4] == "-48.75 points" and nonorm["cells"][5] == "intervals apart"
    assert nonorm["cells"][7].startswith(f"cr results compare {site[2]['pipe-base']} ")
    assert nonorm["paired"] == "no hits" and near["paired"] == "paired"  # nonorm's record kept no per-sample correctness
    assert "re-run cr validate" in nonorm["cells"][7]
    assert "paired test" in page.text_content("#pipeline-study")
    assert not page.problems


def test_the_pareto_line_joins_only_non_dominated_points_and_rings_ties(page, site):
    _open(page, site, "#/pareto")
    _wait(page, "() => !!window.CR_DASHBOARD.pareto")
    _settle(page)
    info = page.evaluate("window.CR_DASHBOARD.pareto")
    rows = page.evaluate("window.CR_SITE.S.rows.map(r => ({i: r.i, bench: r.bench_uid, study: r.study}))")
    uid_row = {r["bench"]: r["i"] for r in rows if r["bench"]}
    trial = {t: uid_row[site[2][f"tune-{t}-b"]] for t in (0, 1, 2, 3)}
    status = {p["row"]: p for p in info["points"]}
    # every point on a line is a "front" point; no dominated or tied point is on one
    on_lines = {r for f in info["frontiers"] for r in f["rows"]}
    assert on_lines and all(status[r]["status"] == "front" for r in on_lines)
    assert status[trial[3]]["status"] == "dominated" and trial[3] not in on_lines
    # trials 0 and 2: within noise of each other, one on the line and the other tied with it
    pair = sorted((status[trial[0]]["status"], status[trial[2]]["status"]))
    assert pair == ["front", "tied"]
    tied, front = (trial[0], trial[2]) if status[trial[0]]["status"] == "tied" else (trial[2], trial[0])
    assert status[tied]["tied_with"] == [front] and front in on_lines and tied not in on_lines
    assert any(tied in f["tied"] for f in info["frontiers"])
    assert "tied with a front point" in page.text_content("#pareto-note")
    assert not page.problems


def _random_sets(seed: int, count: int) -> list[dict]:
    """Random point sets with many near-ties, equal values, zero-width intervals, infeasible and unmeasured points;
    one in ten large (up to 300 points, with twins); a few with a value outside its interval (another path)."""
    rng = random.Random(seed)
    names = ["p50", "throughput", "top1", "memory"]
    out = []
    for s in range(count):
        objs = rng.sample(names, rng.choice((1, 2, 2, 2, 3)))
        points = []
        outside = s % 25 == 0
        for i in range(rng.randint(1, 12) if s % 10 else rng.randint(50, 300)):
            if i > 3 and rng.random() < 0.1:  # a twin of an earlier point
                points.append({**copy.deepcopy(rng.choice(points)), "id": f"p{i}"})
                continue
            values = {}
            for name in objs:
                if rng.random() < 0.03:
                    continue  # unmeasured
                base = {"p50": 20_000, "throughput": 5_000, "top1": 0.9, "memory": 2e8}[name]
                value = base * rng.choice((1.0, 1.0, 1.005, 1.02, 1.1, 0.95, rng.uniform(0.5, 2)))
                width = rng.choice((0.0, 0.0, 0.004, 0.01, 0.05)) * value
                values[name] = {"value": value, "lo": value - width * rng.random(), "hi": value + width * rng.random()}
                if outside and rng.random() < 0.3:
                    values[name]["value"] = value * rng.choice((0.97, 1.03))
            point = {"id": f"p{i}", "values": values}
            if rng.random() < 0.1:
                point["feasible"] = False
            points.append(point)
        out.append({"objectives": objs, "points": points})
    return out


def test_the_sites_pareto_rule_agrees_with_cr_results_pareto(page, site):
    _open(page, site, "#/leaderboard")
    sets = _random_sets(2512, 500)
    got = page.evaluate("""sets => sets.map(s => {
        const better = {p50: 'lower', throughput: 'higher', top1: 'higher', memory: 'lower'};
        const r = window.CR_SITE.pareto.analyse(s.points, s.objectives.map(n => ({name: n, better: better[n]})));
        return {front: r.front, points: r.points.map(p => [p.id, p.status, p.tied_with, p.dominated_by])};
    })""", sets)
    statuses = set()
    for s, js in zip(sets, got):
        want = analyse(s["points"], [objective(n) for n in s["objectives"]])
        assert js["front"] == want["front"], s
        assert js["points"] == [[p["id"], p["status"], p["tied_with"], p["dominated_by"]] for p in want["points"]], s
        statuses.update(p["status"] for p in want["points"])
    assert statuses == {"front", "tied", "dominated", "infeasible", "unmeasured"}  # every case was exercised
    assert not page.problems


def test_the_tune_page_lists_a_studys_trials_front_and_recommendation(page, site):
    _open(page, site, "#/study")
    _settle(page)
    assert page.eval_on_selector_all("#study li a", "els => els.map(e => e.textContent)") == ["tune-lenet"]
    assert page.eval_on_selector_all("[data-nav=study]", "els => els.length") == 1
    _open(page, site, "#/study/tune-lenet")
    _settle(page)
    info = page.evaluate("window.CR_DASHBOARD.study")
    trials = {t["trial"]: t for t in info["trials"]}
    assert sorted(trials) == ["0", "1", "2", "3", "4", "5"]
    assert trials["5"]["status"] == "failed" and trials["5"]["pareto"] == "unmeasured"
    assert trials["4"]["pareto"] == "infeasible" and trials["3"]["pareto"] == "dominated"
    assert trials["1"]["pareto"] == "front" and trials["1"]["recommended"] and info["recommended"] == ["1"]
    assert sorted((trials["0"]["pareto"], trials["2"]["pareto"])) == ["front", "tied"]
    assert sorted(info["front"]) == sorted(["1", "0" if trials["0"]["pareto"] == "front" else "2"])
    assert "backend=onnxruntime" in trials["1"]["setting"] and "threads=2" in trials["1"]["setting"]
    table = page.eval_on_selector_all("#study-trials tbody tr", "trs => trs.map(tr => tr.textContent)")
    assert len(table) == 6 and "[" in table[0] and "%" in table[0]
    assert "Recommended: trial 1" in page.text_content("#study-recommendation")
    _wait(page, "() => document.querySelector('#study-pareto').getAttribute('data-drawn') === '5'")
    assert not page.problems


def test_a_study_whose_records_name_no_pick_points_to_cr_tune(page, site, tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    rng = random.Random(4)
    for trial, median in ((0, 10_000), (1, 20_000)):
        rec = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", sample.XEON, sample.latencies(median, 300, rng),
                                      uid=f"d{trial:015x}", started=f"2026-12-02T12:0{trial}:00.000Z",
                                      study={"name": "plain", "uid": "0123456789abcdef", "trial": trial})
        rec["config"]["threads"] = trial + 1
        write(rec, folder / f"{trial}.json")
    old = set_reporter(CollectingReporter())
    try:
        build(folder, tmp_path / "dash")
    finally:
        set_reporter(old)
    _open(page, (tmp_path / "dash",), "#/study/plain")
    _settle(page)
    text = page.text_content("#study-recommendation")
    assert "cr tune plain --json" in text and "trial 0" in text
    assert page.evaluate("window.CR_DASHBOARD.study.front") == ["0"]  # no accuracy: p50 vs throughput, trial 0 wins both
    assert not page.problems


def test_a_studys_latency_axis_names_the_one_definition_it_plots(page, tmp_path):
    """Trials of one batch size: the axis says per sample; trials that vary it: per query,
    a query being one batch of the trial's size (what cr tune ranks), with the sizes named."""
    folder = tmp_path / "results"
    folder.mkdir()
    rng = random.Random(5)
    for study, batches in (("one", (1, 1)), ("mixed", (1, 8))):
        for trial, batch in enumerate(batches):
            rec = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", sample.XEON,
                                          sample.latencies(10_000 * batch, 300, rng), uid=f"{study[0]}{trial:015x}",
                                          started=f"2026-12-02T12:0{trial}:00.000Z",
                                          study={"name": study, "uid": f"{study[0]}123456789abcde", "trial": trial})
            rec["config"]["batch_size"] = batch
            rec["config"]["threads"] = trial + 1
            write(rec, folder / f"{study}-{trial}.json")
    old = set_reporter(CollectingReporter())
    try:
        build(folder, tmp_path / "dash")
    finally:
        set_reporter(old)
    seen = {}
    for study in ("one", "mixed"):
        _open(page, (tmp_path / "dash",), f"#/study/{study}")
        _settle(page)
        seen[study] = page.evaluate("[window.CR_DASHBOARD.study.latencyKind, window.CR_DASHBOARD.study.xTitle]")
    assert seen["one"][0] == "sample" and "per sample" in seen["one"][1]
    assert seen["mixed"][0] == "query" and "per query" in seen["mixed"][1] and "1, 8" in seen["mixed"][1]
    assert "per sample" not in seen["mixed"][1]
    assert not page.problems


ODD = ["", "abc", "\u202e\u0301\U0001F600" * 10, "<b>x</b>", [], {}, None, 0, -1, 1.5, 1e308, 10 ** 30, True, False,
       [1, "a", None], {"a": {"b": [None]}}, "1e309", "PASS"]
ODD_PATHS = ["study", "study/name", "study/trial", "study/recommended", "study/feasible", "config/threads",
             "config/pipeline.resize.interpolation", "config/pipeline", "pipeline/overrides", "validation/samples",
             "validation/outcome", "validation/top1", "metrics/latency_ns/iqr", "metrics/latency_ns/count",
             "metrics/latency_ns/stdev", "campaign/name", "config/batch_size", "config/backend_options"]


def test_odd_study_and_campaign_records_render_without_an_error(page, tmp_path):
    """Schema-valid records with odd values where a study or campaign page reads them: every page renders, no JS error."""
    source = tmp_path / "source"
    source.mkdir()
    make_study_store(source)
    templates = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(source.glob("*.json"))]
    rng = random.Random(77)
    folder = tmp_path / "odd"
    folder.mkdir()
    kept = tried = 0
    while kept < 60 and tried < 2000:
        tried += 1
        rec = copy.deepcopy(rng.choice(templates))
        for _ in range(rng.randint(1, 4)):
            *parents, leaf = rng.choice(ODD_PATHS).split("/")
            node = rec
            for part in parents:
                node = node.setdefault(part, {}) if isinstance(node, dict) else None
                if not isinstance(node, dict):
                    break
            if isinstance(node, dict):
                node[leaf] = copy.deepcopy(rng.choice(ODD))
        rec["uid"] = f"e{kept:015x}"
        if problems(rec):
            continue
        kept += 1
        write(rec, folder / f"{kept:03d}.json")
    assert kept == 60
    old = set_reporter(CollectingReporter())
    try:
        build(folder, tmp_path / "site")
    finally:
        set_reporter(old)
    site = (tmp_path / "site",)
    _open(page, site, "#/campaign")
    _settle(page)
    campaigns = page.eval_on_selector_all("#campaign li a", "els => els.map(e => e.getAttribute('href'))")
    _open(page, site, "#/study")
    _settle(page)
    studies = page.eval_on_selector_all("#study li a", "els => els.map(e => e.getAttribute('href'))")
    assert campaigns and studies
    for route in campaigns + studies + ["#/pareto"]:
        page.evaluate("(r) => { location.hash = r; }", route)
        _wait(page, f"() => location.hash === {json.dumps(route)} && window.CR_DASHBOARD.renders > 0")
        _settle(page)
        assert not page.evaluate("window.CR_DASHBOARD.errors") and not page.problems, route
