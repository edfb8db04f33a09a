"""`cr init solution NAME` before click is imported, when its ready stamp holds.

A second `cr init solution NAME` on a machine where everything is present has nothing to
do, and most of its cost was importing what would find that out: click, the store's
index, the resolver, the runner. When the full path finds nothing to do it leaves a ready
stamp (cr.resolve.initstamp: every path its decision read, with its stat, the platform and
the report it printed). cli/main.py hands `cr init solution NAME [--json] [--offline]`
(each option once, also --opt forms of nothing else) to main() here, which prints the
stamp's report, exactly as the full path prints it, when every stamped path stats the
same and the platform detected now is the stamped one. Anything else (no stamp, a
difference, a racy stamp, --trust, --model and the other options of a new solution, an
archive or a git URL, -q or --debug before `init`) is declined and left to click and the
full path, which then decides, and writes a new stamp when it again finds nothing to do.
"""
from __future__ import annotations

from . import output

_FLAGS = {"--json": "as_json", "--offline": "offline"}


def parse(args: list[str]) -> dict | None:
    """{'source', 'as_json', 'offline'} for `solution SOURCE [--json] [--offline]`, or None."""
    if len(args) < 2 or args[0] != "solution":
        return None
    opts = {"source": None, "as_json": False, "offline": False}
    for arg in args[1:]:
        if arg in _FLAGS and not opts[_FLAGS[arg]]:
            opts[_FLAGS[arg]] = True
        elif arg.startswith("-") or opts["source"] is not None:
            return None
        else:
            opts["source"] = arg
    source = opts["source"]
    if source is None or source.endswith((".zip", ".git")) or "://" in source or source.startswith("git@"):
        return None  # archives and repositories: the full path unpacks or pulls
    return opts


def show(report: dict, as_json: bool) -> None:
    """Print init's report (the full path and this one both call it)."""
    if as_json:
        output.emit_json(report)
        return
    rows = [[s["name"], s["version"], "installed now" if s["installed_now"] else s["origin"]] for s in report["software"]]
    output.table(["SOFTWARE", "VERSION", "ORIGIN"], rows, title=f"{report['solution']} is ready ({report['seconds']:.2f} s)")
    if report["archive"]:
        output.echo(f"unpacked {report['archive'].get('archive')} into {report['archive'].get('target')}")
    if report.get("payload"):
        from ..runtime.pins import describe

        p = report["payload"]
        output.echo(f"payload: {p['path']} from package {p['package']}: {describe(p)}")
    if report["compiled"]:
        c = report["compiled"]
        output.echo(f"compiled: {c['ref']}" + (" (now)" if c["created"] else " (already present)"))
    output.echo(f"lock: {report['lock']}")


def main(args: list[str]) -> int | None:
    """The exit status of `cr init ARGS` answered from its ready stamp, or None (declined)."""
    import os
    import time

    started = time.perf_counter()
    opts = parse(args)
    if opts is None or os.path.isfile(opts["source"]):
        return None
    from ..errors import CRError
    from ..paths import cr_home
    from ..resolve import initstamp

    try:
        home = str(cr_home())
    except CRError:
        return None  # an unusable CR_HOME: the full path words the error
    report = initstamp.check(home, opts["source"])
    if report is None:
        return None
    report["seconds"] = round(time.perf_counter() - started, 3)
    try:
        show(report, opts["as_json"])
    except BrokenPipeError:
        return 0
    return 0
