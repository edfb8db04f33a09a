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


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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


def _register_commands() -> None:
    from . import actions, archive, components, dashboard, platform, publish, repos, resolve, results, software, solution
    from .compile import compile_

    for command in (
        components.find, components.show, components.new, components.check, components.hash_,
        repos.repo, platform.platform_, software.detect, software.install, software.env, resolve.resolve,
        actions.benchmark, actions.run_, actions.validate, compile_, archive.pack, archive.unpack,
        solution.init, solution.reproduce, results.results, dashboard.dashboard, publish.publish,
    ):
        cli.add_command(command)
    software.env.add_command(resolve.exec_)
    software.env.add_command(resolve.shell)
    from .campaign import campaign, scheduler, worker
    from .profile import profile
    for command in (campaign, scheduler, worker, profile):
        cli.add_command(command)


_register_commands()


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
