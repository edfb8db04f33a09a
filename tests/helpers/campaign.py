"""A campaign's null solution (test_campaign, test_campaign_cluster)."""
from __future__ import annotations

from pathlib import Path

from conftest import make_component


FAST = {"inputs": "synthetic", "min_duration_s": 0, "min_queries": 10, "warmup_queries": 0, "max_duration_s": 0}


def null_solution(repo: Path, name: str = "null-digits", **params) -> None:
    """A solution of the shipped lenet-digits model on the null backend: no framework, a short run."""
    make_component(repo, "solution", name, model="model:lenet-digits@1.0.0", backend="null",
                   actions=[{"action": "benchmark", "params": {**FAST, **params}}],
                   deps=["software:python@>=3.9", "software:numpy@>=1.23"])


def null_repo(tmp_path: Path, run_cr) -> Path:
    """A registered repository "comps" holding the null solution (the campaign tests' fixture)."""
    from conftest import make_repo

    r = make_repo(tmp_path / "comps", "comps")
    null_solution(r)
    assert run_cr("repo", "add", r).returncode == 0
    return r
