"""The dashboard shows what the monitor recorded: the result page's machine, energy and
memory section and the leaderboard's energy column, from a real benchmark's record (in
Chromium, with tests/test_dashboard.py's browser and page fixtures)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cr.dashboard import build
from cr.events import CollectingReporter, set_reporter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers.dashboard import _open, _wait, browser, page, to_fixed  # noqa: E402,F401  (fixtures)
from helpers.machine_state import FAST, _meter_script  # noqa: E402


@pytest.mark.slow
def test_result_page_and_leaderboard_show_machine_state_memory_and_measured_energy(run_cr, page, tmp_path):
    meter = _meter_script(tmp_path, "print(f'{time.time() * 3.0:.3f}')\n")
    results = tmp_path / "results"
    done = run_cr("benchmark", "model:iris-logreg", *FAST, "-o", results / "r.json", env={"CR_ENERGY_COMMAND": meter})
    assert done.returncode == 0, done.stderr
    record = json.loads((results / "r.json").read_text())
    old = set_reporter(CollectingReporter())
    try:
        info = build(results, tmp_path / "site")
    finally:
        set_reporter(old)
    site = (tmp_path / "site", info, {})

    _open(page, site, f"#/result/{record['uid']}")
    page.wait_for_selector("#machine table.machine")
    text = page.locator("#machine").inner_text()
    assert "Machine, energy and memory" in text and "measured" in text and "W average" in text and "(command)" in text
    assert "USS" in text and "PSS" in text and "other processes' CPU" in text and "Snapshot at the start" in text
    share = record["machine"]["summary"]["cpu_other_share"]
    assert f"{to_fixed(share * 100, 1)} %" in text  # as the page rounds (an exact tie goes up)

    _open(page, site, "#/leaderboard")
    _wait(page, "() => document.querySelectorAll('#leaderboard tbody tr[data-row]').length > 0")
    heads = page.locator("#leaderboard thead th").all_inner_texts()
    cells = page.locator("#leaderboard tbody tr[data-row]").first.locator("td").all_inner_texts()
    energy = cells[heads.index("Energy")]  # the measured joules per sample, in the column's unit
    per_sample = record["metrics"]["energy"]["joules_per_sample"]
    assert energy not in ("", "—") and energy.endswith("J"), energy
    scale = {"J": 1, "mJ": 1e-3, "µJ": 1e-6, "nJ": 1e-9}[energy.split()[-1]]
    assert float(energy.split()[0]) * scale == pytest.approx(per_sample, rel=0.02)
    assert not page.problems
