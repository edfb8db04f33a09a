"""Rendering for the CLI: JSON, tables, warnings, the reporter. rich is imported only when a
table is drawn on a terminal; click not at all (`cr find` runs without it: cli/fastfind.py)."""
from __future__ import annotations

import json
import sys

from ..events import Reporter


def echo(text: str = "", err: bool = False, nl: bool = True) -> None:
    """text (and a newline) on stdout or stderr, flushed: what click.echo does with a str."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    stream.write(text + "\n" if nl else text)
    stream.flush()


# C0 and C1 control characters (ESC starts terminal escape sequences), DEL, and the bidi and
# zero-width format characters that make text look other than it is.
_UNSAFE = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), 0x0b, 0x0c, *range(0x0e, 0x20), 0x7f, *range(0x80, 0xa0))}
_UNSAFE.update({c: f"\\u{c:04x}" for c in (0x200b, 0x200c, 0x200d, 0x200e, 0x200f, *range(0x202a, 0x202f),
                                            *range(0x2066, 0x206a), 0xfeff)})


def clean(text) -> str:
    """text with control characters and bidi/zero-width marks shown as escapes, for printing
    strings that came from elsewhere (a record, a meta) to a terminal: they cannot move the
    cursor, recolour the screen or reorder what the user reads. Tabs and newlines stay."""
    return str(text).translate(_UNSAFE)


# In JSON, what JSON does not escape itself (C1 controls, DEL, bidi and zero-width marks) as \\uXXXX.
_JSON_UNSAFE = {c: f"\\u{c:04x}" for c in _UNSAFE if c >= 0x7f}


def json_text(data) -> str:
    """data as the CLI prints JSON: indented, non-ASCII kept, invisible or control characters escaped."""
    return json.dumps(data, indent=2, ensure_ascii=False, default=str).translate(_JSON_UNSAFE)


def emit_json(data) -> None:
    echo(json_text(data))


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def table(columns: list, rows: list[list], title: str | None = None, empty: str = "nothing found") -> None:
    """A table on stdout; a line on stderr when there are no rows.

    columns: names, or tables.Col declaring which may be dropped and how cells shorten. On a
    terminal the table fits its width (cli/tables.py: shortened cells, low-value columns
    dropped, one record per block below that; --wide: everything); in a pipe or a file it is
    the fixed plain format of docs/output.md, whatever the terminal.
    """
    if not rows:
        echo(empty, err=True)
        return
    cells = [["" if v is None else clean(v) for v in row] for row in rows]
    title = clean(title) if title else title
    if not sys.stdout.isatty():
        echo(plain_table(columns, cells, title))
        return
    from rich.text import Text

    from . import tables

    console = _console()
    lines, bold = tables.fit(columns, cells, console.width, title=title)
    text = Text()
    for k, line in enumerate(lines):
        # plain text: a "[red]" in a name is not markup
        text.append(line + ("\n" if k < len(lines) - 1 else ""), style="bold" if k in bold else None)
    console.print(text, soft_wrap=True)  # lines are laid out already: rich neither wraps nor crops them


def plain_table(columns: list, cells: list[list[str]], title: str | None = None) -> str:
    """The table as a pipe or a file gets it (docs/output.md, cli/tables.plain_lines): every
    column, nothing cut, aligned two spaces apart; a cell never holds two spaces in a row and
    an empty one is '-', so a line splits into its cells at runs of two or more spaces.
    Drawing thousands of rows with rich costs seconds, and a script wants no styles."""
    from .tables import plain_lines

    return "\n".join(plain_lines(columns, cells, title))


def warn(message: str) -> None:
    echo(f"Warning: {message}", err=True)


def environment_error(exc: BaseException) -> tuple[str, str] | None:
    """(message, hint) for an exception that says the machine is out of room (ENOSPC or a quota
    from the OS, "database or disk is full" from sqlite): a state of the disk, not a bug in cr,
    so one Error: line rather than a traceback. None for anything else."""
    import errno

    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        where = f" ({exc.filename})" if exc.filename else ""
        return (f"no space left on the disk{where}: {exc.strerror or exc}",
                "free space on that disk (or set CR_HOME to a folder on another one), then run the command again")
    if type(exc).__module__ == "sqlite3" and "disk is full" in str(exc):
        return ("no space left on the disk holding reefkit's index or results (CR_HOME): sqlite says "
                f"{str(exc)!r}", "free space on that disk (or set CR_HOME to a folder on another one), then run the "
                "command again; nothing stored before was changed")
    return None


def error(message: str, hint: str | None) -> None:
    """The Error: line and its Hint:, each one line: what they quote from outside (a script, a
    probe's output, a framework's message) is shown escaped (cr.textsafe.shown)."""
    from ..textsafe import shown

    echo(f"Error: {shown(message)}", err=True)
    if hint:
        echo(f"Hint: {shown(hint)}", err=True)


class CLIReporter(Reporter):
    """Warnings and infos on stderr; the same warning is shown once per run."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self._seen: set[str] = set()

    def warning(self, message: str) -> None:
        if message not in self._seen:
            self._seen.add(message)
            from ..textsafe import shown

            self._clear_phases()
            warn(shown(message))  # a warning quotes probe outputs, file names, framework messages

    def info(self, message: str) -> None:
        if not self.quiet:
            self._end_progress()
            self._clear_phases()
            from ..textsafe import shown

            echo("\n".join(shown(line) for line in message.split("\n")), err=True)

    # Progress of work with a known size (downloads) is one line rewritten in place on a
    # terminal, at most ten times a second; in a pipe or a log it is left out.
    _progress_task: str | None = None
    _progress_at = 0.0

    def progress(self, task: str, done: int, total: int | None, unit: str = "B") -> None:
        if self.quiet or not total or not sys.stderr.isatty():
            return
        import time

        now = time.monotonic()
        finished = done >= total
        if not finished and task == self._progress_task and now - self._progress_at < 0.1:
            return
        self._progress_task, self._progress_at = task, now
        if unit == "B":
            line = f"{task}: {done / 1e6:.1f} / {total / 1e6:.1f} MB ({100 * done / total:.0f}%)"
        else:
            line = f"{task}: {done:,} / {total:,} {unit} ({100 * done / total:.0f}%)"
        echo("\r" + line + "\x1b[K", err=True, nl=False)
        if finished:
            echo("", err=True)
            self._progress_task = None

    def _end_progress(self) -> None:
        if self._progress_task is not None:
            echo("", err=True)
            self._progress_task = None

    # Phases of long work (a benchmark's load, warm-up, steady; a solution's actions): cr.cli.progress.
    _phases = None

    def phase(self, task, name, detail="", expect_s=None, max_s=None) -> None:
        if self.quiet:
            return
        if self._phases is None:
            from .progress import PhaseView

            self._phases = PhaseView()
        self._end_progress()
        self._phases.phase(task, name, detail, expect_s, max_s)

    def status(self, text: str | None) -> None:
        """A run's summary line at the head of the live phase line (a terminal only; None ends it)."""
        if self.quiet or not sys.stderr.isatty():
            return
        if self._phases is None:
            from .progress import PhaseView

            self._phases = PhaseView()
        self._end_progress()
        self._phases.set_status(text)

    def _clear_phases(self) -> None:
        if self._phases is not None:
            self._phases.clear()
