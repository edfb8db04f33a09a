"""`cr find` before click is imported.

A search is the command users run most, and over a large store its whole cost is a few
tens of milliseconds of stats (cr.store.snapshot): importing click and building the
command group would add about as much again. So when `cr find` is called with nothing
but its own options, each given once, in the forms below, cli/main.py answers it here,
with the same function the click command calls (run). Anything else (--help, -q or
--debug before `find`, an unknown or repeated option, a value that starts with '-', a
second KIND) is declined and left to click, which parses it, or words its error, as for
any command.

    cr find [KIND] [--tags T] [--version V] [--repo R] [--name N] [--json] [--wide]   (also --opt=value)
"""
from __future__ import annotations

from . import output

_VALUED = {"--tags": "tags", "--version": "version", "--repo": "repo", "--name": "name"}


def parse(args: list[str]) -> dict | None:
    """find's arguments as run() takes them, or None: not a form this parser accepts."""
    opts: dict = {"kind": None, "tags": None, "version": None, "repo": None, "name": None, "as_json": False}
    seen: set[str] = set()
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--json":
            key, value = "as_json", True
        elif arg == "--wide":
            key, value = "wide", True
        elif arg.startswith("--"):
            flag, eq, value = arg.partition("=")
            if flag not in _VALUED:
                return None
            key = _VALUED[flag]
            if not eq:
                i += 1
                if i == len(args) or args[i].startswith("-"):
                    return None
                value = args[i]
        elif arg.startswith("-"):
            return None
        else:
            key, value = "kind", arg
        if key in seen:
            return None
        seen.add(key)
        opts[key] = value
        i += 1
    return opts


def split_tags(value: str | None) -> list[str]:
    return [t.strip() for t in value.split(",") if t.strip()] if value else []


def run(kind, tags, version, repo, name, as_json, wide=False) -> None:
    """The find command itself (the click command and the fast path both call this)."""
    from ..api import find as api_find

    if wide:
        from . import tables

        tables.WIDE = True

    found = api_find(kind, tags=split_tags(tags), version=version, repo=repo, name=name)
    if as_json:
        output.emit_json([c.to_dict() for c in found])
        return
    rows = [[c.ref, c.repo, ",".join(c.tags), c.description] for c in found]
    output.table(FIND_COLUMNS, rows, empty="no matching components")


def _find_columns():
    from .tables import Col

    # the ref is what the next command takes: kept whole where it fits, else cut in its middle;
    # the description gives way first, then the tags
    return [Col("REF", shorten="middle", min=16), Col("REPO", shorten="middle", min=8),
            Col("TAGS", keep=False, drop=1, shorten="end", min=10), Col("DESCRIPTION", keep=False, drop=0, shorten="end", min=12)]


FIND_COLUMNS = _find_columns()


def main(args: list[str]) -> int | None:
    """The exit status of `cr find ARGS`, or None when declined (click must run it)."""
    opts = parse(args)
    if opts is None:
        return None
    from ..errors import CRError
    from ..events import set_reporter

    set_reporter(output.CLIReporter())
    try:
        run(**opts)
    except CRError as exc:  # as cli.main.main words it
        output.error(exc.message, exc.hint)
        return 1
    except KeyboardInterrupt:
        output.echo("Interrupted.", err=True)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - a full disk is one Error: line; anything else is a bug
        said = output.environment_error(exc)
        if said is None:
            raise
        output.error(*said)
        return 1
    return 0

