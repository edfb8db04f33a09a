"""Tables that fit the terminal (docs/output.md): which columns a table keeps, how its cells
are shortened, when it folds into one record per block, and the plain format of a pipe.

A table declares its columns as Col: whether a column may be dropped (and in which order),
and how its cells may be shortened. On a terminal of W columns the layout is the first of:

1. every column at its natural width;
2. shortenable cells shortened (refs and names by a middle ellipsis after the known
   abbreviations, free text cut at its end, uids to a prefix that still selects them) and
   headers folded onto two lines at their spaces ('P50' over '(ms)');
3. the droppable columns dropped, lowest value first, re-trying 2 after each;
4. the record layout: one block per row, one 'COLUMN  value' line per column, values wrapped.

Columns marked keep (metrics, verdicts, statuses and the identifier a user copies into the
next command) are never dropped. With --wide (WIDE) step 1 is taken whatever the width.

Only the standard library here: rich, which the CLI uses for the terminal's width and
styles, is imported by the caller (output.table) when a terminal is drawn on; widths are
measured with rich.cells.cell_len when it is importable (wide characters count two).
"""
from __future__ import annotations

import functools
import re
import textwrap
from dataclasses import dataclass

WIDE = False  # --wide: every column, nothing shortened (set by the option's callback)
GAP = 2  # spaces between columns, on a terminal and in a pipe
ELLIPSIS = "…"


@dataclass(frozen=True)
class Col:
    """One column of a table and what the width logic may do to it.

    keep: never dropped (metric, verdict, status, the identifier of the row).
    drop: among droppable columns, the lower is dropped first.
    shorten: how its cells give way: "middle" (refs, names: abbreviations, then an ellipsis
    in the middle, which keeps a ref's kind and version), "abbrev" (abbreviations, then cut
    at the end with an ellipsis: configurations), "end" (free text, cut with an ellipsis), "prefix" (uids: their first digits, which cr accepts wherever a uid goes),
    "wrap" (folded onto several lines, nothing lost), None (never shortened).
    min: the narrowest a shortened cell becomes.
    abbrev: this column's own abbreviations, applied before the common ones (a listing's
    target without its 'solution:' kind, which the action and --json still say).
    """

    name: str
    keep: bool = True
    drop: int = 0
    shorten: str | None = None
    min: int = 8
    abbrev: tuple = ()


def columns_of(columns: list) -> list[Col]:
    """Col for each column; a bare name is a kept column, the last one of several cut at its
    end (the free-text column of a listing) and the value of a two-column table wrapped (a
    FIELD/VALUE summary whose values hold figures: nothing of them may be lost)."""
    cols = [c if isinstance(c, Col) else Col(str(c)) for c in columns]
    if cols and all(not isinstance(c, Col) for c in columns):
        last = cols[-1]
        cols[-1] = Col(last.name, shorten="wrap" if len(cols) <= 2 else "end", min=10)
    return cols


_cell_len = None


def width_of(text: str) -> int:
    """The cells text takes on a terminal (wide characters, CJK and emoji, count two): its
    length for ASCII, else rich's measure, imported on first use (a pipe never needs it)."""
    if text.isascii():
        return len(text)
    global _cell_len
    if _cell_len is None:
        from rich.cells import cell_len

        _cell_len = cell_len
    return _cell_len(text)


# Known abbreviations, applied to "middle" cells before any ellipsis (docs/output.md).
ABBREVIATIONS = (
    ("onnxruntime", "ort"), ("tensorflow", "tf"), ("Raspberry Pi", "RPi"), ("x86_64", "x64"),
    ("aarch64", "arm64"), (" Model B", "B"), (" cores", "c"), (" core", "c"), ("single-stream", "single"),
    ("multi-stream", "multi"), ("intra_op_threads=", "intra="), ("threads=", "t="), ("batch=", "b="),
    ("pipeline=", "p="),
)


@functools.lru_cache(maxsize=4096)  # a listing repeats its refs, stacks and platforms
def abbreviate(text: str, own: tuple = ()) -> str:
    for long, short in (*own, *ABBREVIATIONS):
        text = text.replace(long, short)
    return text


@functools.lru_cache(maxsize=4096)
def cut_middle(text: str, width: int, own: tuple = ()) -> str:
    """text in at most width cells: known abbreviations first, then an ellipsis in the middle
    (the head gets the extra cell: a ref's kind and name start there)."""
    if width_of(text) <= width:
        return text
    text = abbreviate(text, own)
    if width_of(text) <= width or width < 3:
        return _cut_end(text, width) if width_of(text) > width else text
    tail = (width - 1) // 2
    head = width - 1 - tail
    return _head(text, head) + ELLIPSIS + _tail(text, tail)


def _head(text: str, width: int) -> str:
    if text.isascii():
        return text[:max(0, width)]
    out, used = [], 0
    for ch in text:
        w = width_of(ch)
        if used + w > width:
            break
        out.append(ch)
        used += w
    return "".join(out)


def _tail(text: str, width: int) -> str:
    return _head(text[::-1], width)[::-1]


def _cut_end(text: str, width: int) -> str:
    if width_of(text) <= width:
        return text
    return _head(text, max(0, width - 1)) + ELLIPSIS


def shorten(col: Col, text: str, width: int) -> list[str]:
    """The lines a cell takes in a column of this width."""
    if col.shorten == "wrap":
        return _wrap(text, width)
    if width_of(text) <= width:
        return [text]
    if col.shorten == "middle":
        return [cut_middle(text, width, col.abbrev)]
    if col.shorten == "abbrev":
        return [_cut_end(abbreviate(text, col.abbrev), width)]
    if col.shorten == "prefix":
        return [_head(text, width)]
    if col.shorten == "end":
        return [_cut_end(text, width)]
    return [text]


def _wrap(text: str, width: int) -> list[str]:
    if width_of(text) <= width:
        return [text]
    return textwrap.wrap(text, max(1, width), break_long_words=True, break_on_hyphens=False) or [""]


_BREAKS = re.compile(r"(?<=[A-Z]/)|\s+")  # a header folds at its spaces and between NAME/NAME


def _header_lines(name: str, width: int) -> list[str]:
    """A header in a column of this width: whole, or folded at its spaces and slashes."""
    if width_of(name) <= width:
        return [name]
    lines: list[str] = []
    for word in (w for w in _BREAKS.split(name) if w):
        sep = "" if not lines or lines[-1].endswith("/") else " "
        if lines and width_of(lines[-1] + sep + word) <= width:
            lines[-1] += sep + word
        else:
            lines.append(word)
    return lines


def _longest_word(name: str) -> int:
    return max((width_of(w) for w in _BREAKS.split(name) if w), default=0)


@dataclass
class Plan:
    """How a table is drawn at one width: its columns and their widths, or records."""

    cols: list[Col]
    shown: list[int]  # indexes of the columns drawn, in order
    widths: dict[int, int]  # column index -> width
    records: bool = False
    width: int = 0

    def header_lines(self) -> list[str]:
        if self.records:
            return []
        return _block([_header_lines(self.cols[i].name, self.widths[i]) for i in self.shown],
                      [self.widths[i] for i in self.shown])

    def row_lines(self, cells: list[str]) -> list[str]:
        if self.records:
            label = max(width_of(c.name) for c in self.cols)
            room = max(10, self.width - label - GAP)
            out = []
            for col, cell in zip(self.cols, cells):
                for j, part in enumerate(_wrap(cell, room) if cell else [""]):
                    out.append(((col.name if j == 0 else "").ljust(label) + " " * GAP + part).rstrip())
            return out
        return _block([shorten(self.cols[i], cells[i], self.widths[i]) for i in self.shown],
                      [self.widths[i] for i in self.shown])

    def dropped(self) -> list[str]:
        return [] if self.records else [c.name for i, c in enumerate(self.cols) if i not in self.shown]


def _block(cells: list[list[str]], widths: list[int]) -> list[str]:
    """Cells of several lines side by side: each line padded to its column, two spaces apart."""
    height = max(len(c) for c in cells)
    lines = []
    for k in range(height):
        parts = []
        for j, cell in enumerate(cells):
            text = cell[k] if k < len(cell) else ""
            parts.append(text + " " * (widths[j] - width_of(text)) if j < len(cells) - 1 else text)
        lines.append((" " * GAP).join(parts).rstrip())
    return lines


def terminal_cell(text: str) -> str:
    """A cell as a terminal's layout takes it: on one line (its tabs and line breaks as spaces;
    a wrapped column folds it again where it must)."""
    return text if "\n" not in text and "\t" not in text and "\r" not in text else " ".join(text.split())


def plan(columns: list, rows: list[list[str]], width: int, wide: bool | None = None) -> Plan:
    """The layout of a table at this terminal width (see the module's docstring)."""
    cols = columns_of(columns)
    n = len(cols)
    natural = {i: max([width_of(cols[i].name)] + [width_of(r[i]) for r in rows]) for i in range(n)}
    shown = list(range(n))
    if WIDE if wide is None else wide:
        return Plan(cols, shown, natural, width=width)
    while True:
        # what may be dropped is shortened, then dropped, before a kept column is shortened
        widths = _squeeze(cols, shown, natural, rows, width, keep_too=False)
        if widths is not None:
            return Plan(cols, shown, _reclaim(cols, shown, natural, rows, widths, width), width=width)
        droppable = [i for i in shown if not cols[i].keep]
        if not droppable:
            widths = _squeeze(cols, shown, natural, rows, width, keep_too=True)
            if widths is not None:
                return Plan(cols, shown, _reclaim(cols, shown, natural, rows, widths, width), width=width)
            return Plan(cols, list(range(n)), natural, records=True, width=width)
        shown.remove(min(droppable, key=lambda i: (cols[i].drop, -i)))


def _squeeze(cols: list[Col], shown: list[int], natural: dict, rows, width: int, keep_too: bool) -> dict | None:
    """Widths for the shown columns within width, or None when even squeezed they overflow:
    headers folded first (nothing of a cell is lost), then the shortenable cells of the
    droppable columns (and of the kept ones with keep_too), the widest first."""
    widths = {i: natural[i] for i in shown}
    total = lambda: sum(widths.values()) + GAP * (len(shown) - 1)  # noqa: E731
    if total() <= width:
        return widths
    for i in shown:
        cells = max([0] + [width_of(r[i]) for r in rows])
        widths[i] = max(cells, _longest_word(cols[i].name), 1)
    if total() <= width:
        _give_back(widths, natural, shown, width - total())
        return widths
    floor = {}
    for i in shown:
        col = cols[i]
        if not col.shorten or col.shorten == "wrap" and not (keep_too or not col.keep):
            floor[i] = widths[i]
        elif keep_too or not col.keep:
            floor[i] = max(min(col.min, widths[i]), _longest_word(col.name))
        else:  # a kept column, before anything is dropped: only as short as its abbreviations make it
            short = max([0] + [width_of(abbreviate(r[i], col.abbrev)) for r in rows]) if col.shorten in ("middle", "abbrev") else widths[i]
            floor[i] = max(min(short, widths[i]), _longest_word(col.name), col.min)
    need = total() - width
    while need > 0:
        wider = [i for i in shown if widths[i] > floor[i]]
        if not wider:
            return None
        i = max(wider, key=lambda k: (widths[k] - floor[k], k))
        widths[i] -= 1
        need -= 1
    return widths


def _reclaim(cols: list[Col], shown: list[int], natural: dict, rows, widths: dict, width: int) -> dict:
    """A shortened column as wide as its shortened cells (abbreviations often free more than
    was asked), the cells freed given to the other shortened columns, left to right."""
    for _ in range(2):
        for i in shown:
            if widths[i] < natural[i] and cols[i].shorten in ("middle", "abbrev"):
                used = max([width_of(cols[i].name) if width_of(cols[i].name) <= widths[i] else _longest_word(cols[i].name)]
                           + [width_of(shorten(cols[i], r[i], widths[i])[0]) for r in rows])
                widths[i] = min(widths[i], used)
        spare = width - sum(widths.values()) - GAP * (len(shown) - 1)
        # an abbreviated cell gains nothing from a few more cells: it gets them only to be whole
        whole = {i for i in shown if cols[i].shorten in ("middle", "abbrev")}
        _give_back(widths, natural, [i for i in shown if i not in whole or natural[i] - widths[i] <= spare], spare)
    return widths


def _give_back(widths: dict, natural: dict, shown: list[int], spare: int) -> None:
    """Spare cells back to folded headers, left to right, so they unfold where they can."""
    for i in shown:
        extra = min(spare, natural[i] - widths[i])
        if extra > 0:
            widths[i] += extra
            spare -= extra


def fit(columns: list, rows: list[list[str]], width: int, title: str | None = None,
        wide: bool | None = None) -> tuple[list[str], list[int]]:
    """The lines of a table drawn at this width, and the indexes of the header lines (bold on a
    terminal). The title is wrapped, never cut."""
    rows = [[terminal_cell(v) for v in r] for r in rows]
    p = plan(columns, rows, width, wide)
    if not title:
        lines = []
    else:
        lines = [title] if (WIDE if wide is None else wide) else _wrap(title, width)
    header = p.header_lines()
    bold = list(range(len(lines), len(lines) + len(header)))
    lines += header
    for k, row in enumerate(rows):
        if p.records and k:
            lines.append("")
        lines += p.row_lines(row)
    return lines, bold


# ----------------------------------------------------------------------------- the pipe

_SPACES = re.compile(r"\s+")
EMPTY = "-"


def plain_cell(text: str) -> str:
    """A cell as a pipe gets it: whitespace runs (tabs, newlines, double spaces) as one space,
    an empty cell as '-', so a line splits into its cells at every run of two or more spaces."""
    if (text and text.isascii() and text[0] != " " and text[-1] != " " and "  " not in text and "\t" not in text
            and "\n" not in text and "\r" not in text):
        return text  # the usual cell: nothing to do (a 500-row listing has 6,500 of them)
    text = _SPACES.sub(" ", text).strip()
    return text or EMPTY


def plain_lines(columns: list, cells: list[list[str]], title: str | None = None) -> list[str]:
    """The pipe's format (docs/output.md): the title line (when the table has one), the header,
    one line per row; every column, nothing cut, columns aligned and two spaces apart, the last
    one not padded; independent of any terminal."""
    names = [c.name if isinstance(c, Col) else str(c) for c in columns]
    rows = [[plain_cell(v) for v in r] for r in cells]
    widths = [max([len(n)] + [len(r[i]) for r in rows]) for i, n in enumerate(names)]
    last = len(names) - 1

    def line(values) -> str:
        return "  ".join(v if i == last else v.ljust(widths[i]) for i, v in enumerate(values)).rstrip()

    out = [plain_cell(title)] if title else []
    out.append(line(names))
    out.extend(line(r) for r in rows)
    return out


# ----------------------------------------------------------------------------- figures

def ms(ns) -> str:
    """A latency in ms, the one unit every table uses for latencies (headers say '(ms)'):
    4 decimals, so that a 10 us query still shows 0.0100."""
    return "" if ns is None else f"{ns / 1e6:.4f}"


def rate(value) -> str:
    """A throughput (samples/s or queries/s as the header says), to 0.1."""
    return "" if value is None else f"{value:.1f}"
