"""Entry point of `cr`: global options, error handling, and the command groups.

Heavy modules (the store, rich, gitpython) are imported inside commands, so that
`cr --help` and `cr --version` stay fast and import no numerical framework.
"""
from __future__ import annotations

import sys


def _is_cr() -> bool:
    """Whether this process is `cr` (the console script, or python -m cr), not a program
    that imported the CLI."""
    import os

    if not sys.argv[0]:
        return False
    program = os.path.basename(sys.argv[0])
    return program in ("cr", "cr.exe", "cr-script.py") or (
        program == "__main__.py" and os.path.basename(os.path.dirname(os.path.abspath(sys.argv[0]))) == "cr"
    )


def _fast_paths() -> None:
    """`cr --version`, `cr find` in its plain forms (cli/fastfind.py) and a warm
    `cr init solution NAME` (cli/fastinit.py) answer before click and the rest of the CLI
    are imported: the first then costs hardly more than starting Python, the second only
    its search, the third only the stats that prove its ready stamp current."""
    if sys.argv[1:] == ["--version"] and _is_cr():
        from ..__about__ import __version__

        sys.stdout.write(f"cr (reefkit) {__version__}\n")
        sys.stdout.flush()
        raise SystemExit(0)
    if sys.argv[1:2] == ["find"] and _is_cr():
        from .fastfind import main as fast_find

        status = fast_find(sys.argv[2:])
        if status is not None:
            raise SystemExit(status)
    if sys.argv[1:2] == ["init"] and _is_cr():
        from .fastinit import main as fast_init

        status = fast_init(sys.argv[2:])
        if status is not None:
            raise SystemExit(status)


if __name__ == "cr.cli.main":
    _fast_paths()

import click  # noqa: E402

from ..__about__ import __version__  # noqa: E402
from ..errors import CRError  # noqa: E402
from ..events import set_reporter  # noqa: E402
from . import output  # noqa: E402
from .output import CLIReporter  # noqa: E402,F401  (importable from here, as before)


# Each command's module is imported only when that command runs (or when --help lists
# them all): a `cr find` pays for click and the find command, not for the CLI of
# benchmarking, archives, campaigns and dashboards (about 15 ms of imports).
_COMMANDS = {
    "find": "components:find", "show": "components:show", "new": "components:new",
    "check": "components:check", "hash": "components:hash_", "repo": "repos:repo",
    "platform": "platform:platform_", "detect": "software:detect", "install": "software:install",
    "env": "software:env", "resolve": "resolve:resolve", "benchmark": "actions:benchmark",
    "run": "actions:run_", "validate": "actions:validate", "compile": "compile:compile_",
    "pack": "archive:pack", "unpack": "archive:unpack", "init": "solution:init",
    "reproduce": "solution:reproduce", "results": "results:results", "dashboard": "dashboard:dashboard",
    "publish": "publish:publish", "campaign": "campaign:campaign", "scheduler": "campaign:scheduler",
    "worker": "campaign:worker", "profile": "profile:profile", "do": "do:do",
    "tune": "tune:tune", "gate": "gate:gate", "export": "export:export",
}


# The commands that print a table: each takes --wide (cli/tables.py, docs/output.md).
_TABLE_COMMANDS = (
    "find", "detect", "env list", "repo list", "resolve", "benchmark", "run", "validate", "compile", "init",
    "results list", "results show", "results compare", "results pareto", "campaign show", "campaign run",
    "campaign status", "profile", "do", "tune",
)


def _wide(ctx, param, value) -> None:
    # set either way: a program that runs several commands in one process gets each one's own
    from . import tables

    tables.WIDE = bool(value)


def _add_wide(command: click.Command, name: str) -> None:
    """--wide on the table-printing commands of this top-level command (one option, one place)."""
    for path in _TABLE_COMMANDS:
        words = path.split()
        if words[0] != name:
            continue
        target = command
        for word in words[1:]:
            target = target.commands.get(word) if isinstance(target, click.Group) else None
        if target is not None and not any(p.name == "wide" for p in target.params):
            target.params.append(click.Option(
                ["--wide"], is_flag=True, expose_value=False, callback=_wide,
                help="Tables: every column, nothing shortened, whatever the terminal's width."))


def _load_command(name: str) -> click.Command:
    import importlib

    module, attr = _COMMANDS[name].split(":")
    command = getattr(importlib.import_module(f"{__package__}.{module}"), attr)
    if name == "env":  # `cr env exec|shell` live with resolve
        from .resolve import exec_, shell

        for sub in (exec_, shell):
            if sub.name not in command.commands:
                command.add_command(sub)
    _add_wide(command, name)
    return command


class LazyGroup(click.Group):
    """A click group whose commands (named in _COMMANDS) are imported on first use."""

    def get_command(self, ctx, cmd_name):
        if cmd_name not in self.commands and cmd_name in _COMMANDS:
            self.add_command(_load_command(cmd_name), cmd_name)
        return self.commands.get(cmd_name)

    def list_commands(self, ctx):
        return sorted(set(self.commands) | set(_COMMANDS))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="cr", message="%(prog)s (reefkit) %(version)s")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.option("-q", "--quiet", is_flag=True, help="Only print results and errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool, quiet: bool) -> None:
    """reefkit: portable, versioned ML components and reproducible benchmarks.

    Commands follow `cr ACTION [KIND] [NAME|REF]`. A reference is kind:name,
    kind:name@1.2.0 or kind:name@>=1,<2; `KIND NAME` as two words works too.
    Every listing takes --json. Set CR_HOME to choose where reefkit keeps its store.
    """
    ctx.obj = {"debug": debug}
    set_reporter(CLIReporter(quiet=quiet))


def main(argv: list[str] | None = None) -> None:
    """Run the CLI: CRError -> 'Error: ...' + hint and exit 1 (traceback only with --debug)."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        cli.main(args=args, prog_name="cr", standalone_mode=False)
    except CRError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        output.error(exc.message, exc.hint)
        sys.exit(1)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.UsageError as exc:  # exit 2 as every CLI: nothing ran (docs/solutions.md relies on it)
        where = exc.ctx.command_path if exc.ctx is not None else "cr"
        output.error(exc.format_message(), f"{where} --help shows its usage")
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # a full disk is one Error: line; anything else is a bug and shows its traceback
        said = output.environment_error(exc)
        if said is None or debug:
            raise
        output.error(*said)
        sys.exit(1)
    sys.exit(0)
