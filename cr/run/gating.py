"""`cr gate` as a call on stored results or interleaved A/B runs made here: the report its
--json prints. (A baseline from a results repository: cr.dashboard.gating.gate_published.)"""
from __future__ import annotations

from ..errors import CRError


def check_options(uids, *, ab=None, baseline_repo=None, branch=None, any_machine=False, rounds: int = 4, queries=None,
                  min_duration=None, scenario=None, lock_a=None, lock_b=None, store: bool = True) -> None:
    """CRError for options of `cr gate` that do not go together (the same words for the CLI
    and the calls)."""
    ab_only = {"--rounds": rounds != 4, "--queries": queries, "--min-duration": min_duration, "--scenario": scenario,
               "--lock-a": lock_a, "--lock-b": lock_b, "--no-store": not store}
    if not ab:
        given = [name for name, value in ab_only.items() if value]
        if given:
            raise CRError(f"{given[0]} goes with --ab", hint="cr gate --ab SOLUTION_A SOLUTION_B --rounds N")
    if (branch or any_machine) and not baseline_repo:
        raise CRError(f"{'--branch' if branch else '--any-machine'} goes with --baseline-repo",
                      hint="cr gate --baseline-repo URL CANDIDATE")
    if ab and (uids or baseline_repo):
        raise CRError("--ab runs both sides itself: give no result uids and no --baseline-repo",
                      hint="cr gate --ab SOLUTION_A SOLUTION_B, or cr gate BASELINE CANDIDATE")


def gate(*uids: str, ab: tuple[str, str] | None = None, rounds: int = 4, queries: int | None = None,
         min_duration: float | None = None, scenario: str | None = None, lock_a: str | None = None,
         lock_b: str | None = None, store: bool = True, metric: str = "p50", threshold="5%") -> dict:
    """Gate a candidate against a baseline (`cr gate BASELINE CANDIDATE --json`, or
    `cr gate --ab A B --json`); the report's "verdict" is PASS, REGRESSION or INCONCLUSIVE
    and "exit_code" the status the CLI exits with (0, 1, 2).

    Two stored results: gate(BASELINE_UID, CANDIDATE_UID). Interleaved runs made here:
    gate(ab=(SOLUTION_A, SOLUTION_B), rounds=4[, queries, min_duration, scenario, lock_a,
    lock_b, store]). metric: p50, p90, p99, mean or throughput; threshold: the regression
    that must not pass, in percent ("5%" or 5). CRError for options that do not go together
    and for a threshold below the baseline's noise floor."""
    from ..results import gate as g

    t = g.parse_threshold(str(threshold))
    check_options(uids, ab=ab, rounds=rounds, queries=queries, min_duration=min_duration, scenario=scenario,
                  lock_a=lock_a, lock_b=lock_b, store=store)
    if ab:
        params = {k: v for k, v in (("min_queries", queries), ("min_duration_s", min_duration)) if v is not None}
        from .gate import run_ab

        base, cand = run_ab(ab[0], ab[1], rounds, params, scenario=scenario, lock_a=lock_a, lock_b=lock_b, store=store)
    else:
        if len(uids) != 2:
            raise CRError(f"cr gate takes a baseline and a candidate result uid, found {len(uids)}",
                          hint="cr gate BASELINE_UID CANDIDATE_UID (cr results list shows the uids), or --baseline-repo, or --ab")
        base, cand = g.from_store(uids[0], "baseline"), g.from_store(uids[1], "candidate")
    return g.evaluate(base, cand, metric=metric, threshold=t)
