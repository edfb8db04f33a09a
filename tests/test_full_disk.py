"""A full disk is one Error: line (docs/security.md "Hostile input never crashes cr"): cr find,
cr benchmark and cr pack with CR_HOME on a full tmpfs say so, name the way out and exit 1: no
sqlite traceback. (A record that the store cannot take once a run has finished is kept beside:
tests/test_crash_hygiene.py.)"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import _env

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount") or not sys.platform.startswith("linux"),
                                reason="mounts a small tmpfs (root)")


@pytest.fixture
def full_home(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("tmpfs cannot be mounted here")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def _cr(home, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "cr", *map(str, args)], capture_output=True, text=True, timeout=300,
                          env=_env({"CR_HOME": str(home)}), cwd=cwd)


def _fill(disk):
    with open(disk / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass


def _one_error(done, *words):
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error: ")]
    assert done.returncode == 1 and len(errors) == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    for w in words:
        assert w in errors[0], errors
    return errors[0]


def test_find_benchmark_and_pack_on_a_full_disk_are_one_error(full_home, tmp_path):
    home = full_home / "home"
    _fill(full_home)
    _one_error(_cr(home, "find", "model"), "no space left")
    _one_error(_cr(home, "find", "model", "--json"), "no space left")
    out = tmp_path / "out"
    out.mkdir()
    packed = _cr(home, "pack", "solution", "iris-logreg-onnxruntime", "-o", out)
    _one_error(packed, "no space left")
    bench = _cr(home, "benchmark", "model", "iris-logreg", "--backend", "null", "--min-duration", "0", "--min-queries", "5",
                cwd=tmp_path)
    _one_error(bench, "no space left")
