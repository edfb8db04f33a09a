"""Rendering for the CLI: JSON, rich tables, warnings. rich is imported only when a table is drawn."""
from __future__ import annotations

import json
import sys

import click


def emit_json(data) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _console(stderr: bool = False):
    from rich.console import Console

    import shutil

    width = None if sys.stdout.isatty() else max(shutil.get_terminal_size((160, 24)).columns, 160)
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)


def table(columns: list[str], rows: list[list], title: str | None = None, empty: str = "nothing found") -> None:
    """A rich table on stdout; a plain line when there are no rows."""
    if not rows:
        click.echo(empty, err=True)
        return
    from rich.table import Table

    t = Table(title=title, show_edge=False, header_style="bold", pad_edge=False, box=None)
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    for i, col in enumerate(columns):
        last = i == len(columns) - 1
        # Identifiers never wrap or shrink (they are copied into the next command); the
        # last, free-text column gives way and is cut with an ellipsis.
        width = max([len(col)] + [len(r[i]) for r in cells])
        t.add_column(col, no_wrap=True, overflow="ellipsis", min_width=10 if last else width)
    for row in cells:
        t.add_row(*row)
    _console().print(t)


def warn(message: str) -> None:
    click.echo(f"Warning: {message}", err=True)


def error(message: str, hint: str | None) -> None:
    click.echo(f"Error: {message}", err=True)
    if hint:
        click.echo(f"Hint: {hint}", err=True)


def is_tty() -> bool:
    return sys.stdout.isatty()
