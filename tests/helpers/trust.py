"""Untrusted archives and recipes that leave a marker when they run (test_trust, test_shown_escaped)."""
from __future__ import annotations

from pathlib import Path

from conftest import make_repo, write_json


MARK = "cr-trust-marker"


def recipe(name: str, marker: Path | None = None, probe_marker: Path | None = None, **install) -> dict:
    """A recipe whose script install writes marker and whose executable probe writes probe_marker."""
    meta = {"uid": "a1b2c3d4e5f60718", "kind": "software", "name": name, "version": "1.0.0", "tags": [],
            "description": "from the archive", "detect": [], "install": []}
    if probe_marker is not None:
        meta["detect"].append({"type": "executable", "names": ["/bin/sh"], "args": ["-c", f"touch {probe_marker}; echo 1.0.0"],
                               "regex": r"(\d+\.\d+\.\d+)"})
    if marker is not None:
        meta["install"].append({"method": "script", "versions": ["1.0.0"], "script": f"touch {marker}; mkdir -p $PREFIX/bin"})
    for method, spec in install.items():
        meta["install"].append({"method": method, "versions": ["1.0.0"], **spec})
    return meta


def author_archive(tmp_path: Path, run_cr, software: list[dict], name: str = "evil-sol", extra=None) -> Path:
    """An archive of solution:NAME (the shipped iris model on onnxruntime) that needs `software`."""
    repo = make_repo(tmp_path / "author-repo", "author")
    for meta in software:
        write_json(repo / "software" / meta["name"] / meta["version"] / "meta.json", meta)
    for kind, meta in (extra or []):
        write_json(repo / kind / meta["name"] / meta["version"] / "meta.json", meta)
    write_json(repo / "solution" / name / "1.0.0" / "meta.json", {
        "uid": "0f1e2d3c4b5a6978", "kind": "solution", "name": name, "version": "1.0.0", "tags": [],
        "model": "model:iris-logreg@1.0.0", "backend": "onnxruntime",
        "actions": [{"action": "benchmark", "params": {"min_duration_s": 0, "min_queries": 5}}],
        "deps": [f"software:{m['name']}" for m in software],
    })
    author = {"CR_HOME": str(tmp_path / "author-home")}
    assert run_cr("repo", "add", str(repo), env=author).returncode == 0
    out = tmp_path / "out"
    out.mkdir()
    done = run_cr("pack", "solution", name, "-o", str(out), env=author)
    assert done.returncode == 0, done.stderr
    return next(out.glob("*.cr.zip"))
