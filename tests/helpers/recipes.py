"""Test recipe repositories and fake executables (shared by the detect, install, lock and architecture tests)."""
from __future__ import annotations

import secrets
from pathlib import Path

from conftest import make_repo, write_json

import cr.api as api


def recipe_repo(tmp_path: Path, *recipes: dict) -> Path:
    """A registered repository of test recipes (layout 'name', like recipes/)."""
    repo = make_repo(tmp_path / "testrecipes", "testrecipes", layout="name", kind="software", meta_file="recipe.json")
    for r in recipes:
        write_json(repo / r["name"] / "recipe.json", {"uid": secrets.token_hex(8), "kind": "software", "version": "1.0.0", **r})
    api.repo_add(repo)
    return repo


def fake_exe(bindir: Path, name: str, output: str, sleep: float = 0) -> Path:
    bindir.mkdir(parents=True, exist_ok=True)
    path = bindir / name
    body = f"sleep {sleep}\n" if sleep else ""
    path.write_text(f"#!/bin/sh\n{body}cat <<'CR_EOF'\n{output}CR_EOF\n")
    path.chmod(0o755)
    return path
