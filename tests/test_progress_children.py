"""Progress from the children of `cr compile` and `cr profile`: each conversion step of the path
(i/n, its hop and tool) and the parity check, and a profile's warm-up, plain and profiled
queries, layer table and trace, on stderr in order; nothing with -q; --json stdout the same.

Real runs: lenet-digits compiled from its TorchScript variant to a dynamic int8 ONNX (torch
export, then onnxruntime quantisation: the cheapest path of two steps), and profiled on
onnxruntime; stderr is a pipe (one plain line per phase)."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import _env

COMPILE = ("compile", "model", "lenet-digits", "--to", "onnx", "--variant", "torchscript", "--quantization", "dynamic")
PROFILE = ("profile", "model", "lenet-digits", "--backend", "onnxruntime", "--samples", "30")


def _cr(home, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cr", *args], capture_output=True, text=True, timeout=300,
                          env=_env({"CR_HOME": str(home)}))


def _three_ways(tmp_path_factory, args: tuple) -> tuple:
    """The same command piped, piped with --json, and -q --json, each in its own CR_HOME."""
    return tuple(_cr(tmp_path_factory.mktemp("home"), *pre, *args, *post)
                 for pre, post in (((), ()), ((), ("--json",)), (("-q",), ("--json",))))


def _phases(stderr: str, task: str) -> list[str]:
    return [line[len(task) + 2:] for line in stderr.splitlines() if line.startswith(task + ": ")]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    return _three_ways(tmp_path_factory, COMPILE)


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    pytest.importorskip("onnxruntime")
    return _three_ways(tmp_path_factory, PROFILE)


def test_compile_shows_each_step_of_its_path_in_order(compiled):
    piped, _, _ = compiled
    assert piped.returncode == 0, piped.stderr[-2000:]
    assert "\r" not in piped.stderr and "\x1b" not in piped.stderr
    phases = _phases(piped.stderr, "compile model:lenet-digits")
    assert phases[:-1] == ["resolve", "load", "step 1/2 torchscript -> onnx (torch-export, torch)",
                           "step 2/2 onnx -> onnx (onnx-quantize, onnxruntime)", "parity check"], phases
    assert re.fullmatch(r"ran in [\d.]+ s", phases[-1]), phases
    assert "compile model:" not in piped.stdout  # stdout: the report alone


def test_compile_quiet_shows_no_phase_and_json_stays_the_same(compiled):
    _, shown, quiet = compiled
    assert shown.returncode == quiet.returncode == 0, quiet.stderr[-2000:]
    assert not _phases(quiet.stderr, "compile model:lenet-digits"), quiet.stderr
    assert _phases(shown.stderr, "compile model:lenet-digits")  # --json keeps progress on stderr
    a, b = json.loads(shown.stdout), json.loads(quiet.stdout)
    assert sorted(a) == sorted(b)
    for key in ("action", "status", "config", "conversion", "failed_checks"):
        assert a[key] == b[key], key
    assert [h["hop"] for h in a["path"]] == [h["hop"] for h in b["path"]] == ["torch-export", "onnx-quantize"]
    assert a["output"]["ref"] == b["output"]["ref"]


def test_profile_shows_its_phases_in_order_with_the_profiled_runs_expected_time(profiled):
    piped, _, _ = profiled
    assert piped.returncode == 0, piped.stderr[-2000:]
    lines = _phases(piped.stderr, "profile model:lenet-digits")
    names = [line.split(" (")[0] for line in lines]
    assert names[:-1] == ["resolve", "load", "warm-up", "plain queries", "profiled run", "plain queries again",
                          "layer table", "trace"], lines
    assert re.fullmatch(r"ran in [\d.]+ s", names[-1]), lines
    assert "warm-up (5 samples)" in lines and "plain queries (10 samples)" in lines
    profiled_line = next(line for line in lines if line.startswith("profiled run"))
    assert re.fullmatch(r"profiled run \(30 samples\) \(about [\d.]+ s\)", profiled_line), profiled_line
    assert "profile model:" not in piped.stdout


def test_profile_quiet_shows_no_phase_and_json_stays_the_same(profiled):
    _, shown, quiet = profiled
    assert shown.returncode == quiet.returncode == 0, quiet.stderr[-2000:]
    assert quiet.stderr == ""
    a, b = json.loads(shown.stdout), json.loads(quiet.stdout)
    assert sorted(a) == sorted(b) and sorted(a["profile"]) == sorted(b["profile"])
    assert a["config"] == b["config"] and a["status"] == b["status"] == "ok"
    # the same layers (their order is by time, which differs run to run), and a trace kept by each
    assert sorted(row["name"] for row in a["profile"]["layers"]) == sorted(row["name"] for row in b["profile"]["layers"])
    assert sorted(a["trace"]) == sorted(b["trace"]) and a["trace"]["events"] > 0


@pytest.mark.parametrize("args, error", [
    ((*COMPILE, "-O", "nosuch=1"), "Error: torch-export-onnx-quantize-dynamic has no option nosuch"),
    ((*PROFILE, "--trace", "."), "Error: --trace "),
])
def test_a_refused_input_prints_its_error_and_no_phase(tmp_path, args, error):
    done = _cr(tmp_path / "home", *args)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith(error) and lines[1].startswith("Hint: "), done.stderr
