"""Entry point of `cr`: global options, error handling, and the command groups.

Heavy modules (the store, rich, gitpython) are imported inside commands, so that
`cr --help` and `cr --version` stay fast and import no numerical framework.
"""
from __future__ import annotations

import sys


def _version_fast_path() -> None:
    """`cr --version` (the console script or python -m cr) answers before click and the
    rest of the CLI are imported: it then costs hardly more than starting Python."""
    import os

    if sys.argv[1:] != ["--version"] or not sys.argv[0]:
        return
    program = os.path.basename(sys.argv[0])
    if program in ("cr", "cr.exe", "cr-script.py") or (
        program == "__main__.py" and os.path.basename(os.path.dirname(os.path.abspath(sys.argv[0]))) == "cr"
    ):
        from ..__about__ import __version__

        sys.stdout.write(f"cr (reefkit) {__version__}\n")
        sys.stdout.flush()
        raise SystemExit(0)


if __name__ == "cr.cli.main":
    _version_fast_path()

import click  # noqa: E402

from ..__about__ import __version__  # noqa: E402
from ..errors import CRError  # noqa: E402
from ..events import Reporter, set_reporter  # noqa: E402
from . import output  # noqa: E402


class CLIReporter(Reporter):
    """Warnings and infos on stderr; the same warning is shown once per run."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self._seen: set[str] = set()

    def warning(self, message: str) -> None:
        if message not in self._seen:
            self._seen.add(message)
            output.warn(message)

    def info(self, message: str) -> None:
        if not self.quiet:
            self._end_progress()
            click.echo(message, err=True)

    # Progress of work with a known size (downloads) is one line rewritten in place on a
    # terminal, at most ten times a second; in a pipe or a log it is left out.
    _progress_task: str | None = None
    _progress_at = 0.0

    def progress(self, task: str, done: int, total: int | None) -> None:
        if self.quiet or not total or not sys.stderr.isatty():
            return
        import time

        now = time.monotonic()
        finished = done >= total
        if not finished and task == self._progress_task and now - self._progress_at < 0.1:
            return
        self._progress_task, self._progress_at = task, now
        line = f"{task}: {done / 1e6:.1f} / {total / 1e6:.1f} MB ({100 * done / total:.0f}%)"
        click.echo("\r" + line + "\x1b[K", err=True, nl=False)
        if finished:
            click.echo("", err=True)
            self._progress_task = None

    def _end_progress(self) -> None:
        if self._progress_task is not None:
            click.echo("", err=True)
            self._progress_task = None


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
    "worker": "campaign:worker", "profile": "profile:profile",
}


def _load_command(name: str) -> click.Command:
    import importlib

    module, attr = _COMMANDS[name].split(":")
    command = getattr(importlib.import_module(f"{__package__}.{module}"), attr)
    if name == "env":  # `cr env exec|shell` live with resolve
        from .resolve import exec_, shell

        for sub in (exec_, shell):
            if sub.name not in command.commands:
                command.add_command(sub)
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
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(0)
