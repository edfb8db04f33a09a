"""README's short tour works as written right after the main job, in a fresh CR_HOME.

Every command of the tour runs through the real CLI in order, in one working folder, with
only what a user would add: the photo the tour runs on (scikit-image's chelsea), the script
`cr env exec` runs, the uids `cr results compare` compares. `cr repo pull` of the example URL
is the one command left out (no network here). Each command must exit 0 with no traceback.
"""
from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest

from conftest import ROOT, _env


def _section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def tour() -> list[str]:
    lines = [line.strip() for line in _section("A short tour").splitlines() if line.startswith("    cr ")]
    return [line.split("  #", 1)[0].strip() for line in lines]


def main_job() -> list[str]:
    first = [line.strip() for line in _section("Set up on a fresh machine").splitlines() if line.startswith("    ")][0]
    return [step.strip() for step in first.split("&&") if step.strip().startswith("cr ")]


def test_the_tour_lists_the_commands_this_test_runs():
    commands = tour()
    assert len(commands) >= 15
    assert any(c.startswith("cr repo pull") for c in commands)  # the one skipped below
    assert all(c.startswith("cr ") for c in commands)


@pytest.mark.slow
def test_every_tour_command_works_after_the_main_job(tmp_path, cr_home):
    work = tmp_path / "work"
    work.mkdir()
    from skimage import data  # noqa: PLC0415  (the photo the tour runs on)
    from PIL import Image

    Image.fromarray(data.chelsea()).save(work / "photo.jpg")
    (work / "my_script.py").write_text("import torch, numpy\nprint('my script ran with torch', torch.__version__)\n")

    def cr(command: str, timeout: float = 600) -> subprocess.CompletedProcess:
        args = shlex.split(command)
        assert args[0] == "cr"
        done = subprocess.run([sys.executable, "-m", "cr", *args[1:]], cwd=work, capture_output=True, text=True,
                              env=_env({"CR_HOME": str(cr_home)}), timeout=timeout)
        assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr, f"{command}\n{done.stderr[-3000:]}"
        return done

    for step in main_job():
        cr(step)
    ran = []
    for command in tour():
        if command.startswith("cr repo pull"):
            continue  # the example URL is not reachable from here
        for part in command.split("&&"):
            part = part.strip()
            if "UID1 UID2" in part:
                listed = json.loads(cr("cr results list --solution lenet-digits-torch --json").stdout)
                uids = [r["uid"] for r in listed if r["action"] == "benchmark"][:2]
                assert len(uids) == 2, listed
                part = part.replace("UID1 UID2", " ".join(uids))
            done = cr(part)
            ran.append(part)
            if part.startswith("cr env exec"):
                assert "my script ran with torch" in done.stdout
            if part.startswith("cr run model efficientnet-lite0"):
                assert "photo.jpg" in done.stdout and " 285 (Egyptian cat) " in done.stdout, done.stdout
            if part.startswith("cr validate model lenet-digits --parity onnxruntime,torch,tflite,tensorflow"):
                assert "lenet-digits@1.0.0+savedmodel (tensorflow)" in done.stdout and "onnxruntime vs tensorflow" in done.stdout, done.stdout
            if part.startswith("cr reproduce"):
                assert "outcome: PASS" in done.stdout
    assert (work / "r.json").is_file() and (work / "lenet-digits-torch-1.0.0.cr.zip").is_file()
    # every command but the pull ran, each part of an `a && b` line on its own
    assert len(ran) == sum(len(c.split("&&")) for c in tour() if not c.startswith("cr repo pull"))
