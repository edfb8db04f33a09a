"""cr gate: a candidate against a baseline, exit 0 PASS / 1 REGRESSION / 2 INCONCLUSIVE.

Thin: parse, get the two sides (stored results: cr.results.gate; a results repository:
cr.dashboard.baseline; interleaved A/B runs: cr.run.gate), evaluate, print. On stored results and a results repository it
imports no numerical framework.
"""
from __future__ import annotations

import sys

import click

from . import output


class _GateCommand(click.Command):
    """Usage errors exit 1 (bad input), never 2: 2 is the gate's INCONCLUSIVE, and a CI job
    must not read a typo as 'could not tell'."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            exc.exit_code = 1
            raise


@click.command("gate", cls=_GateCommand)
@click.argument("uids", nargs=-1, metavar="[BASELINE] CANDIDATE")
@click.option("--baseline-repo", metavar="PATH|URL",
              help="Take the baseline from this results repository (cr publish --git): the newest ok benchmark of the "
                   "candidate's model, dataset and configuration on the candidate's machine.")
@click.option("--branch", help="With --baseline-repo: the branch to read (default: the one its HEAD names).")
@click.option("--any-machine", is_flag=True, help="With --baseline-repo: a baseline from another machine will do.")
@click.option("--ab", nargs=2, metavar="SOLUTION_A SOLUTION_B",
              help="Run the two solutions' declared benchmark here, interleaved A, B, A, B, ... (A is the baseline).")
@click.option("--rounds", type=click.IntRange(min=1), default=4, show_default=True, help="With --ab: runs of each side.")
@click.option("--queries", type=click.IntRange(min=1), metavar="N", help="With --ab: timed queries per run (min_queries).")
@click.option("--min-duration", type=click.FloatRange(min=0), metavar="S", help="With --ab: timed seconds per run at least.")
@click.option("--scenario", help="With --ab: which declared benchmark to run (default: the first declared).")
@click.option("--lock-a", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="With --ab: run side A in this lock (two software versions of one solution: cr resolve -o FILE).")
@click.option("--lock-b", type=click.Path(exists=True, dir_okay=False), metavar="FILE", help="With --ab: B's lock.")
@click.option("--no-store", is_flag=True, help="With --ab: do not keep the runs in the results store.")
@click.option("--metric", type=click.Choice(["p50", "p90", "p99", "mean", "throughput"]), default="p50", show_default=True,
              help="What is gated.")
@click.option("--threshold", default="5%", show_default=True, metavar="PERCENT",
              help="The regression that must not pass, in percent of the baseline (5 or 5%).")
@click.option("--markdown", "markdown_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write the summary as markdown here (for a CI job to post).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def gate(uids, baseline_repo, branch, any_machine, ab, rounds, queries, min_duration, scenario, lock_a, lock_b, no_store,
         metric, threshold, markdown_file, as_json):
    """Gate a candidate against a baseline: exit 0 PASS, 1 REGRESSION, 2 INCONCLUSIVE.

    \b
      cr gate BASELINE_UID CANDIDATE_UID                  two stored results
      cr gate --baseline-repo URL CANDIDATE_UID           the newest matching published record
      cr gate --ab SOLUTION_A SOLUTION_B --rounds 4       interleaved runs made here

    The metric's 95% interval of candidate/baseline (cr.results.significance, the
    statistic of cr results compare) decides: REGRESSION when the whole interval lies above
    1 + threshold/2; PASS when its upper end lies below 1 + threshold; INCONCLUSIVE
    otherwise. A threshold below the baseline's noise floor is refused (exit 1) with the
    smallest change detectable there. docs/ci.md has CI jobs and the measured error rates.
    """
    from ..results import gate as g
    from ..run.gating import check_options, gate as run_gate

    g.parse_threshold(threshold)  # a bad threshold is the first thing said, as before anything is read
    check_options(uids, ab=ab, baseline_repo=baseline_repo, branch=branch, any_machine=any_machine, rounds=rounds,
                  queries=queries, min_duration=min_duration, scenario=scenario, lock_a=lock_a, lock_b=lock_b,
                  store=not no_store)
    if baseline_repo:
        from ..dashboard.gating import gate_published

        report = gate_published(*uids, baseline_repo=baseline_repo, branch=branch, any_machine=any_machine, metric=metric,
                                threshold=threshold)
    else:
        report = run_gate(*uids, ab=ab, rounds=rounds, queries=queries, min_duration=min_duration, scenario=scenario,
                          lock_a=lock_a, lock_b=lock_b, store=not no_store, metric=metric, threshold=threshold)
    if as_json:
        output.emit_json(report)
    else:
        for line in g.lines(report):
            click.echo(output.clean(line))
    sys.stdout.flush()
    if markdown_file:  # after the verdict is out: a file that cannot be written loses nothing
        _write(markdown_file, g.markdown(report))
    sys.exit(report["exit_code"])


def _write(path: str, text: str) -> None:
    from ..errors import CRError

    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise CRError(f"cannot write the markdown summary to {path} ({exc.strerror or exc})",
                      hint="give --markdown a writable file path") from None
