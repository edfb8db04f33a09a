"""What every action command shares: how it picks its target (--backend, --variant, -O,
--lock, -o, --json, --no-store, ...), and how it shows a record and concludes (a failed
run, a record the store did not take). Used by cr benchmark/run/validate, cr profile,
cr compile and cr do."""
from __future__ import annotations

import click

from . import output
from .options import BackendOption


def target_options(f):
    """--backend, --variant, --dataset, --split, -O, --lock: how every action picks what it runs."""
    for opt in reversed([
        click.option("--backend", cls=BackendOption, help="Backend name (cr.backends entry point): {backends}."),
        click.option("--variant", help="Model variant to run (default: the first the backend loads, fp32 first); see cr show MODEL."),
        click.option("--dataset", "dataset", metavar="REF", help="Dataset (default: the solution's, else the model meta's)."),
        click.option("--split", help="Dataset split: test, train or all (default: the model meta's, else test)."),
        click.option("-O", "--option", "options", multiple=True, metavar="KEY=VALUE", help="Backend option (repeatable), e.g. -O graph_optimization_level=basic."),
        click.option("--lock", "lock_file", type=click.Path(exists=True, dir_okay=False), help="Run inside this lock's interpreter and environment."),
        click.option("-o", "--output", "out", type=click.Path(dir_okay=False), help="Write the result record (JSON) here."),
        click.option("--json", "as_json", is_flag=True, help="Print the result record as JSON."),
        click.option("--no-store", "store", is_flag=True, default=True, flag_value=False,
                     help="Do not keep the result in the results store (cr results list)."),
        click.option("--install", is_flag=True,
                     help="Install what running the model needs and is missing here (its lock's software) first."),
    ]):
        f = opt(f)
    return f


def _placement_requirement(ctx, param, value):
    """Parse --require-placement at the command line: a malformed one is an Error before anything runs."""
    if value:
        from ..runtime.placement import parse

        parse(value)
    return value


def require_placement_option(f):
    """--require-placement NAME[:SHARE],...: the run fails unless the framework placed that share there."""
    return click.option(
        "--require-placement", "require_placement", metavar="NAME[:SHARE],...", callback=_placement_requirement,
        help="Fail the run (before measuring) unless the framework placed at least SHARE (default 1) of the model on "
             "each named execution provider or delegate, e.g. CUDAExecutionProvider:0.95, cuda:95%, xnnpack:1.0 "
             "(docs/placement.md).")(f)


def kept(call):
    """(what call returns, None), or, when the results store did not take a record,
    (the records it carries: one, or a list for a solution, NotStored): the result is shown
    first, then the command fails naming the file the record was kept in."""
    from ..run.actions import NotStored

    try:
        return call(), None
    except NotStored as exc:
        return exc.records, exc


def conclude(not_stored, *checks) -> None:
    """Run each check (each raises CRError for a failure the user must see); the first one
    that fails is the Error, and a record not stored is then a warning; else NotStored is."""
    from ..errors import CRError

    for check in checks:
        try:
            check()
        except CRError:
            if not_stored is not None:
                output.warn(not_stored.message + (f" ({not_stored.hint})" if not_stored.hint else ""))
            raise
    if not_stored is not None:
        raise not_stored


def show(record: dict, out, as_json: bool, table=None) -> None:
    """The result as JSON or (when it succeeded) as the table; the -o file named."""
    from ..results.record import to_json

    if as_json:
        output.emit_json(to_json(record))
    elif record["status"] == "ok" and table is not None:
        table()
    if out:
        click.echo(f"result: {out}", err=True)


def status(record: dict) -> None:
    """CRError for a run that failed (cr.run.outcome.failure: the library raises the same)."""
    from ..run.outcome import failure

    error = failure(record)
    if error is not None:
        raise error


def finish(record: dict, out, as_json: bool, table=None, not_stored=None) -> None:
    show(record, out, as_json, table)
    conclude(not_stored, lambda: status(record))


def one(result):
    """A record from kept()'s first value (NotStored carries a list)."""
    return result[0] if isinstance(result, list) else result


def sustained_options(f):
    """--sustained DURATION and --sustained-window DURATION of cr benchmark (docs/sustained.md)."""
    f = click.option("--sustained-window", "sustained_window", metavar="DURATION",
                     help="--sustained: the window of the latency curve (default 1s; duration/600 above 10 minutes).")(f)
    return click.option("--sustained", "sustained", metavar="DURATION",
                        help="Sustained mode: queries back to back for DURATION (5m, 90s, 1m30s), the latency curve per "
                             "window beside the CPU clock, temperature and load; throttling onset and drift are judged.")(f)


def sustained_params(params: dict) -> dict:
    """params with --sustained / --sustained-window as the action's sustained_s /
    sustained_window_s (seconds); CRError naming the option for a bad duration."""
    from ..errors import CRError
    from ..durations import parse_duration
    from ..runtime.sustained import window_for

    duration, window = params.pop("sustained", None), params.pop("sustained_window", None)
    if window is not None and duration is None:
        raise CRError("--sustained-window needs --sustained", hint="add --sustained DURATION (e.g. --sustained 5m)")
    if duration is not None:
        params["sustained_s"] = parse_duration(duration, "--sustained")
        if window is not None:
            params["sustained_window_s"] = parse_duration(window, "--sustained-window")
        window_for(params["sustained_s"], params.get("sustained_window_s"))
        if params.get("timeout_s") is None:  # the action's default (600 s) would stop a long run
            params["timeout_s"] = params["sustained_s"] + 600
    return params
