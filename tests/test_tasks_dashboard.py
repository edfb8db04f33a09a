"""Segmentation and regression validations in `cr results list` and on the dashboard: the
task's metric where classification shows top-1 (real records from cr validate)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import make_repo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import tasks  # noqa: E402
from helpers.dashboard import _load_js, _open, _rows, browser, page  # noqa: E402,F401  (fixtures)

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")


@pytest.fixture
def validated(tmp_path, run_cr, cr_home):
    repo = make_repo(tmp_path / "mine", "mine")
    tasks.segmentation(repo)
    tasks.regression(repo)
    assert run_cr("repo", "add", repo).returncode == 0
    figures = {}
    for model in ("seg-threshold", "diabetes-ols"):
        done = run_cr("validate", "model", model, "--backend", "onnxruntime", "--json")
        assert done.returncode == 0, done.stderr
        figures[model] = json.loads(done.stdout)["validation"]
    return figures


def test_results_list_shows_the_tasks_metric(run_cr, validated):
    done = run_cr("results", "list")
    assert done.returncode == 0, done.stderr
    assert f"miou {validated['seg-threshold']['miou']:.4f}" in done.stdout
    assert f"rmse {validated['diabetes-ols']['rmse']:.4f}" in done.stdout
    rows = {r["model"].split("@")[0]: r for r in json.loads(run_cr("results", "list", "--json").stdout)}
    assert rows["model:seg-threshold"]["task_metric"] == "miou" and rows["model:seg-threshold"]["top1"] is None
    assert rows["model:diabetes-ols"]["task_value"] == pytest.approx(validated["diabetes-ols"]["rmse"])
    csv = run_cr("results", "export", "--format", "csv").stdout.splitlines()
    assert "task_metric,task_value" in csv[0]


def test_dashboard_rows_and_columns_carry_the_tasks_metrics(page, validated, cr_home, tmp_path):
    from cr.dashboard import build

    out = tmp_path / "site"
    build(cr_home / "results", out)
    rows = {r["subject"].split("@")[0]: r for r in _rows(_load_js(out / "data" / "index.js", "CR_DATA_INDEX"))}
    seg, reg = rows["model:seg-threshold"], rows["model:diabetes-ols"]
    assert seg["miou"] == pytest.approx(validated["seg-threshold"]["miou"], abs=1e-4) and seg["top1"] is None
    assert reg["rmse"] == pytest.approx(validated["diabetes-ols"]["rmse"], abs=1e-3)
    assert reg["mae"] == pytest.approx(validated["diabetes-ols"]["mae"], abs=1e-3)  # the site keeps 6 digits
    _open(page, (out, None, None), "#/leaderboard")
    page.wait_for_selector("#leaderboard tbody tr[data-row]")
    headers = page.locator("#leaderboard thead th").all_text_contents()
    assert any(h.startswith("mIoU") for h in headers) and any(h.startswith("RMSE") for h in headers)
    assert not any(h.startswith("NME") for h in headers)  # no landmarks row: the optional column stays hidden
    text = page.locator("#leaderboard tbody").inner_text()
    assert f"{validated['seg-threshold']['miou'] * 100:.2f} %" in text
    assert not page.problems
