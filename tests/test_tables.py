"""Tables that fit (docs/output.md): on a terminal of 80, 120 and 200 columns every line fits
and the metric and verdict cells are there, with the numbers --json gives; a pipe gets one
fixed format whatever the terminal; --wide shows everything whole.

One real run of the shipped lenet-digits ONNX Runtime solution is stored in a temporary
CR_HOME and reused by every test; terminals are real pseudo-terminals of a set size.
"""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import _env
from helpers.terminal import open_terminal, read_terminal

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="drives pseudo-terminals")

FAST = ("--min-duration", "0.05", "--min-queries", "20", "--warmup", "1")
WIDTHS = (80, 120, 200)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _cr(home, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "cr", *args], capture_output=True, text=True, timeout=timeout,
                          env=_env({"CR_HOME": str(home)}))


def _on_terminal(home, columns: int, *args) -> str:
    """stdout of `cr ARGS` on a pseudo-terminal `columns` wide, escapes removed."""
    master, slave = open_terminal(columns, rows=50)
    env = _env({"CR_HOME": str(home), "COLUMNS": str(columns)})
    proc = subprocess.Popen([sys.executable, "-m", "cr", *args], stdin=slave, stdout=slave, stderr=subprocess.PIPE,
                            env=env, close_fds=True)
    os.close(slave)
    out = read_terminal(master, proc, timeout=120)
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    os.close(master)
    return ANSI.sub("", out.decode("utf-8")).replace("\r\n", "\n")


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A CR_HOME holding one run of solution lenet-digits-onnxruntime: (home, its records)."""
    home = tmp_path_factory.mktemp("tables") / "crhome"
    done = _cr(home, "init", "solution", "lenet-digits-onnxruntime")
    assert done.returncode == 0, done.stderr
    done = _cr(home, "benchmark", "solution", "lenet-digits-onnxruntime", *FAST, "--json")
    assert done.returncode == 0, done.stderr
    return home, json.loads(done.stdout)


def _ms(ns) -> str:
    return f"{ns / 1e6:.4f}"


def _figures(records) -> list[str]:
    """The cells a table of these records must show: p50/p99 in ms, samples/s, top-1, verdicts."""
    cells = []
    for r in records:
        m, v = r.get("metrics") or {}, r.get("validation") or {}
        if m.get("latency_ns"):
            cells += [_ms(m["latency_ns"]["p50"]), _ms(m["latency_ns"]["p99"]),
                      f"{m['throughput']['samples_per_s']:.1f}", m["validity"]]
        if v.get("top1") is not None:
            cells += [f"{v['top1']:.4f}", v["outcome"]]
    return cells


def _fits(text: str, width: int) -> None:
    for line in text.splitlines():
        assert len(line) <= width, (width, line)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("width", WIDTHS)
def test_solution_table_keeps_every_figure_and_verdict(stored, width, monkeypatch):
    """The table `cr benchmark solution` prints, drawn from its --json records at each width."""
    from cr.cli import output
    from cr.cli.solution import SOLUTION_HEADERS, solution_rows

    _, records = stored
    out = _Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setenv("COLUMNS", str(width))
    output.table(SOLUTION_HEADERS, solution_rows(records), title=f"{records[0]['components'][0]['ref']} on onnxruntime")
    text = ANSI.sub("", out.getvalue())
    _fits(text, width)
    assert records[0]["components"][0]["ref"] in text  # the title is whole (wrapped, never cut)
    for cell in _figures(records) + ["ACTION", "P50", "P99", "THROUGHPUT", "ACCURACY", "CHECK", "RESULT"]:
        assert cell in text, (width, cell, text)
    assert "(ms)" in text and "(samples/s)" in text
    assert all(r["uid"][:8] in text for r in records)  # a prefix cr results show takes


@pytest.mark.parametrize("width", WIDTHS)
def test_results_list_shows_p50_throughput_accuracy_and_status(stored, width):
    home, records = stored
    listed = json.loads(_cr(home, "results", "list", "--json").stdout)
    text = _on_terminal(home, width, "results", "list")
    _fits(text, width)
    for row in listed:
        assert row["uid"][:8] in text
        if row["p50_ns"] is not None:
            assert _ms(row["p50_ns"]) in text and _ms(row["p99_ns"]) in text
            assert f"{row['throughput_sps']:.1f}" in text
        if row["top1"] is not None:
            assert f"{row['top1']:.4f}" in text and "PASS" in text
    assert text.count("ok") >= len(listed)  # every status
    if width >= 120:
        assert "benchmark" in text and "validate" in text  # what ran, once there is room


def test_results_list_wide_shows_everything_whole(stored):
    home, records = stored
    text = _on_terminal(home, 80, "results", "list", "--wide")
    for r in records:
        assert r["uid"] in text
    assert "solution:lenet-digits-onnxruntime@1.0.0" in text and "onnxruntime/onnx" in text
    assert max(len(line) for line in text.splitlines()) > 80


def test_piped_results_list_is_one_fixed_format(stored):
    """Not a terminal: every column, nothing cut, cells split at runs of two spaces, '-' for
    none; the same bytes whatever COLUMNS says."""
    home, _ = stored
    listed = {r["uid"]: r for r in json.loads(_cr(home, "results", "list", "--json").stdout)}
    texts = [subprocess.run([sys.executable, "-m", "cr", "results", "list"], capture_output=True, text=True,
                            env=_env({"CR_HOME": str(home), "COLUMNS": c})).stdout for c in ("40", "300")]
    assert texts[0] == texts[1]
    lines = texts[0].splitlines()
    header = re.split(r"\s{2,}", lines[0])
    assert header == ["UID", "WHEN", "ACTION", "TARGET", "BACKEND/VARIANT", "CONFIG", "FROM", "PLATFORM", "P50 (ms)",
                      "P99 (ms)", "THROUGHPUT (samples/s)", "ACCURACY", "STATUS"]
    assert "\x1b" not in texts[0] and "…" not in texts[0]
    for line in lines[1:]:
        cells = dict(zip(header, re.split(r"\s{2,}", line)))
        assert len(cells) == len(header), line
        row = listed[cells["UID"]]
        assert cells["TARGET"] == row["solution"]
        assert cells["P50 (ms)"] == (_ms(row["p50_ns"]) if row["p50_ns"] is not None else "-")
        assert cells["ACCURACY"] == (f"{row['top1']:.4f}" if row["top1"] is not None else "-")
        assert cells["STATUS"].startswith(row["status"]) and cells["FROM"] == "-"


@pytest.mark.parametrize("width", WIDTHS)
def test_results_compare_keeps_every_figure(stored, width):
    home, records = stored
    bench = [r for r in records if r["action"] == "benchmark"]
    text = _on_terminal(home, width, "results", "compare", bench[0]["uid"], bench[1]["uid"])
    _fits(text.split("verdicts")[0], width)  # the table; the verdict lines under it are sentences
    for r in bench:
        assert _ms(r["metrics"]["latency_ns"]["p50"]) in text
        assert f"{r['metrics']['throughput']['samples_per_s']:.1f}" in text
    assert "p50 latency (ms)" in text.replace("\n", " ") or "p50 latency" in text
    assert "NO" in text or "yes" in text  # the WITHIN NOISE verdict


@pytest.mark.parametrize("width", WIDTHS)
def test_find_keeps_refs_whole(stored, width):
    home, _ = stored
    found = json.loads(_cr(home, "find", "model", "--json").stdout)
    text = _on_terminal(home, width, "find", "model")
    _fits(text, width)
    for c in found:
        assert c["ref"] in text  # what the next command takes is never cut at these widths
    wide = _on_terminal(home, width, "find", "model", "--wide")
    assert all(c["description"].split(". ")[0] in wide for c in found if c["description"])


def test_benchmark_model_summary_at_80_columns(stored, tmp_path):
    home, _ = stored
    record_file = tmp_path / "r.json"
    text = _on_terminal(home, 80, "benchmark", "model", "lenet-digits", "--backend", "onnxruntime", *FAST,
                        "-o", str(record_file))
    _fits(text, 80)
    record = json.loads(record_file.read_text())
    lat = record["metrics"]["latency_ns"]
    for key in ("p50", "p99"):
        assert re.search(rf"^{re.escape(key)}\s+{re.escape(_ms(lat[key]))} ms$", text, re.M), text
    assert f"{record['metrics']['throughput']['samples_per_s']:.1f} samples/s" in text.replace("\n", " ")


# -- the layout itself ------------------------------------------------------------------------

def test_kept_columns_are_never_dropped_at_any_width():
    from cr.cli.tables import Col, fit, plan

    cols = [Col("ID", shorten="prefix", min=8), Col("NOTE", keep=False, shorten="end"), Col("P50 (ms)"),
            Col("STATUS")]
    rows = [["0123456789abcdef", "a long free-text note " * 3, "0.0109", "PASS"]]
    for width in range(10, 220):
        p = plan(cols, rows, width)
        lines, _ = fit(cols, rows, width)
        text = "\n".join(lines)
        assert "0.0109" in text and "PASS" in text, width
        if not p.records:
            assert all(len(line) <= width for line in lines), width
            assert "NOTE" in p.dropped() or "a long" in text
    assert plan(cols, rows, 23).records and not plan(cols, rows, 24).records  # 8 + 6 + 6 and two gaps
    assert plan(cols, rows, 20, wide=True).widths[1] == len(rows[0][1])  # --wide: nothing cut


def test_refs_are_cut_in_the_middle_after_the_known_abbreviations():
    from cr.cli.tables import cut_middle

    assert cut_middle("solution:lenet-digits-onnxruntime@1.0.0", 60) == "solution:lenet-digits-onnxruntime@1.0.0"
    assert cut_middle("solution:lenet-digits-onnxruntime@1.0.0", 31) == "solution:lenet-digits-ort@1.0.0"
    short = cut_middle("solution:lenet-digits-onnxruntime@1.0.0", 20)
    assert len(short) == 20 and short.startswith("solution:") and short.endswith("@1.0.0") and "…" in short


@pytest.mark.parametrize("width", WIDTHS)
def test_campaign_summary_keeps_the_configuration_figures_and_verdicts(width, monkeypatch):
    """cr campaign run/status's job table: what tells jobs apart and what they measured stay."""
    from cr.cli import campaign

    rows = [{"job": f"{i:02d}1a2b3c4d5e6f", "solution": "solution:lenet-digits-onnxruntime@1.0.0",
             "platform": "AMD EPYC (linux/x86_64, 2 cores)", "varied": {"threads": threads}, "repetition": 1,
             "state": "done", "validation": "PASS", "worker": "worker-on-a-long-host-name", "p50_ns": 10_900 * threads,
             "samples_per_s": 35975.8 / threads, "top1": 0.9806, "attempts": 1, "results": ["3b67f7941381dae7"],
             "error": None} for i, threads in enumerate((1, 2))]
    out = _Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setenv("COLUMNS", str(width))
    campaign._summary(rows, "campaign sweep", status_view=True)
    text = ANSI.sub("", out.getvalue())
    _fits(text, width)
    for threads in (1, 2):
        assert f"{10_900 * threads / 1e6:.4f}" in text and f"{35975.8 / threads:.1f}" in text
    assert text.count("PASS") == 2 and text.count("0.9806") == 2 and text.count("done") == 2
    assert "(ms)" in text and "(samples/s)" in text


def test_a_cell_with_line_breaks_keeps_the_terminal_table_aligned(monkeypatch):
    from cr.cli import output

    out = _Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setenv("COLUMNS", "80")
    output.table(["FIELD", "VALUE"], [["error", "line one\nline two\tand a tab"], ["p50", "0.0109 ms"]])
    lines = ANSI.sub("", out.getvalue()).splitlines()
    assert lines[1].split(None, 1) == ["error", "line one line two and a tab"] and lines[2].split() == ["p50", "0.0109", "ms"]
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stdout", piped)
    output.table(["FIELD", "VALUE"], [["error", "line one\nline two"], ["empty", ""]])
    assert piped.getvalue().splitlines()[1:] == ["error  line one line two", "empty  -"]
