"""`cr gate --baseline-repo` as a call: the candidate against the newest matching record
published in a results repository (cr publish --git)."""
from __future__ import annotations

from ..errors import CRError


def gate_published(*uids: str, baseline_repo: str, branch: str | None = None, any_machine: bool = False,
                   metric: str = "p50", threshold="5%") -> dict:
    """Gate stored result CANDIDATE_UID against the baseline a results repository holds
    (`cr gate --baseline-repo URL CANDIDATE_UID --json`): the newest ok benchmark of the
    candidate's model, dataset and configuration on the candidate's machine (any_machine:
    from another machine will do). The report as cr.gate gives it (verdict, exit_code)."""
    from ..results import gate as g
    from .baseline import from_repo

    t = g.parse_threshold(str(threshold))
    if len(uids) != 1:
        raise CRError(f"--baseline-repo takes one result uid (the candidate), found {len(uids)}",
                      hint="cr gate --baseline-repo URL CANDIDATE_UID")
    candidate = g.from_store(uids[0], "candidate")
    baseline = from_repo(baseline_repo, candidate, branch=branch, any_machine=any_machine)
    return g.evaluate(baseline, candidate, metric=metric, threshold=t)
