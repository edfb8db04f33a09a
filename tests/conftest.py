"""Shared fixtures: an isolated CR_HOME per test and a helper that runs the real `cr` CLI."""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def cr_home(tmp_path, monkeypatch) -> Path:
    """Every test gets its own empty CR_HOME, so nothing leaks between tests or into ~."""
    home = tmp_path / "crhome"
    monkeypatch.setenv("CR_HOME", str(home))
    from cr.events import Reporter, set_reporter

    old = set_reporter(Reporter())
    yield home
    set_reporter(old)


def _env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONWARNINGS", None)
    env.update(extra or {})
    return env


@pytest.fixture
def run_cr(cr_home):
    """run_cr("find", "model", "--json") -> CompletedProcess of `python -m cr ...` (text mode)."""

    def run(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 120, input: str | None = None):
        return subprocess.run(
            [sys.executable, "-m", "cr", *map(str, args)],
            capture_output=True, text=True, env=_env({"CR_HOME": str(cr_home), **(env or {})}),
            cwd=cwd, timeout=timeout, input=input,
        )

    return run


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def make_repo(path: Path, name: str, **extra) -> Path:
    """A directory holding a valid cr-repo.json (default layout)."""
    write_json(path / "cr-repo.json", {"name": name, "uid": secrets.token_hex(8), "version": "1.0.0", **extra})
    return path


def make_component(repo: Path, kind: str, name: str, version: str = "1.0.0", **fields) -> Path:
    """A valid component meta at <repo>/<kind>/<name>/<version>/meta.json; returns the meta path."""
    meta = {"uid": secrets.token_hex(8), "kind": kind, "name": name, "version": version, "tags": [], **fields}
    return write_json(repo / kind / name / version / "meta.json", meta)


# Start-up checks: run the CLI in a child and list what it imported.
IMPORT_PROBE = """
import json, sys
out, argv = sys.argv[1], json.loads(sys.argv[2])
from cr.cli.main import main
code = None
try:
    main(argv)
except SystemExit as exc:
    code = exc.code
with open(out, "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""
HEAVY = ("numpy", "torch", "tensorflow", "onnxruntime", "dask", "distributed")
