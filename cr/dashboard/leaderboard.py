"""From record summaries to the leaderboard (data/index.js) and the run list (data/runs.js).

A configuration is (solution or model, backend, variant, precision, platform): the runs of
one configuration share one accuracy figure and one "Runs of this configuration" list. A
leaderboard row is finer: one per benchmark scenario (single-stream and offline latencies
are not comparable) and run configuration (cr.results.summary.config_label: threads, batch size,
engine, inputs, backend options, ...), so that two runs that differ only in their threads
are two rows. A row joins the latest benchmark of its (scenario, config) with the latest
validate of the same configuration on the same dataset (else the latest on any dataset);
a validate of a dataset or config that no benchmark row took gets a row of its own.

Profiles (action "profile", and a benchmark run under a profiler: "benchmark (profiled)") are
never rows: their times are profiled times. They stay in the run list, where their own
result page and "Runs of this configuration" find them.

A row's task is the newest task any run of its configuration recorded, else that of any
run of the same model or solution (a model has one task whichever backend runs it), so a
configuration that was only benchmarked still shows its model's task.

Strings that repeat (names, backends, platforms) are stored once in "strings" and
referred to by position; 50,000 rows stay a few megabytes and parse in milliseconds.
"""
from __future__ import annotations

from operator import itemgetter

from .records import EMPTY, F, FIELDS, TABLE

INDEX_FORMAT = 1

# Where a leaderboard row takes a summary field from (records.Field.row): one of its runs
# (the benchmark, the validate, another action's run, or "some": the first of those three it
# has), the first of two that is not blank, or its configuration key.
SOURCES = ("bench", "validate", "other", "some")
_KEY_PARTS = ("subject", "backend", "variant", "precision", "platform")  # a configuration, in key order
_RULES = ("task", "label", "tags", "error")  # columns worked out here from the row's runs
# Actions whose runs are never a row of their own (profiled times are not comparable figures)
NOT_ROWS = frozenset(("profile", "benchmark (profiled)"))


def _row_plan() -> list[tuple[str, int, int, object, bool]]:
    """(column, how, field position, where from, interned) of each row column taken from
    TABLE, in table order; how: 0 one source, 1 the first of two not blank, 2 key part, 3 rule."""
    plan = []
    for field in TABLE:
        for column, source in (field.row.items() if isinstance(field.row, dict) else [(field.name, field.row)] if field.row else []):
            words = source.split()
            if source == "key":
                how, where = 2, _KEY_PARTS.index(field.name)
            elif source in _RULES:
                how, where = 3, source
            elif len(words) == 2 and all(w in SOURCES for w in words):
                how, where = 1, tuple(SOURCES.index(w) for w in words)
            elif source in SOURCES:
                how, where = 0, SOURCES.index(source)
            else:
                raise ValueError(f"records.TABLE: field {field.name!r} takes row column {column!r} from {source!r}, not a source")
            plan.append((column, how, F[field.name], where, field.kind == "text" and how != 3))
    return plan


_PLAN = _row_plan()
# The data's columns, named in the data itself (the site reads them by name, never by position).
ROW_COLUMNS = ("key", *(p[0] for p in _PLAN), "runs", "latest")
# Columns whose values are positions in "strings" (tags: a list of positions).
INTERNED = tuple(p[0] for p in _PLAN if p[4]) + ("task", "platform_label")
RUN_COLUMNS = ("key", *(f.name for f in TABLE if f.runs))
RUN_INTERNED = tuple(f.name for f in TABLE if f.runs and f.kind == "text")

_KEY = tuple(F[k] for k in _KEY_PARTS)
_key_of = itemgetter(*_KEY)
_time, _uid, _position = itemgetter(F["time"]), itemgetter(F["uid"]), itemgetter(6)
_RUN_VALUE_COLUMNS = RUN_COLUMNS[1:]  # after "key"
_RUN_PICK = itemgetter(*(F[c] for c in _RUN_VALUE_COLUMNS))
_N = len(FIELDS)
_EMPTY = list(EMPTY)  # what a missing benchmark or validate contributes to a row: blanks, no numbers, no tags


_T, _U, _ACTION, _STATUS_AT, _SCENARIO_AT, _TOP1_AT, _TASK, _FP, _SUBJECT, _DATASET, _CONFIG = (
    F[k] for k in ("time", "uid", "action", "status", "scenario", "top1", "task", "platform", "subject", "dataset",
                   "config"))


class Leaderboard:
    """Summaries in, (index, runs) out. add() does the per-record work, so a builder can
    feed records while others are still being read; result() the per-row work.

    The output is the same for the same summaries in any order.
    """

    def __init__(self) -> None:
        self.summaries: list[list] = []
        # key -> [benchmarks {(scenario, config): [rank, summary, runs, latest]},
        #         validates {(dataset, config): [rank, summary, runs, latest]}, runs, latest, task (time, uid, task),
        #         the newest run of another action (run, compile, ...), its position among the rows' keys (result())]
        self.groups: dict[tuple, list] = {}
        self.group_of: list[list] = []  # the group of each summary, in summaries' order
        self.newest_on: dict[str, list] = {}  # platform fingerprint -> its newest summary (for the label)
        self.subject_task: dict[str, tuple] = {}  # subject -> (time, uid, task) of its newest run that named one

    def add(self, s: list) -> None:
        if len(s) != _N:  # kept by a build of an older reefkit: the fields added since are blank
            s = (s + _EMPTY[len(s):])[:_N]
        self.summaries.append(s)
        T, U = _T, _U
        key = _key_of(s)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = [{}, {}, 0, "", None, None, None]
        self.group_of.append(g)
        g[2] += 1
        if s[T] > g[3]:
            g[3] = s[T]
        if s[_TASK]:
            if g[4] is None or (s[T], s[U]) > g[4][:2]:
                g[4] = (s[T], s[U], s[_TASK])
            held = self.subject_task.get(s[_SUBJECT])
            if held is None or (s[T], s[U]) > held[:2]:
                self.subject_task[s[_SUBJECT]] = (s[T], s[U], s[_TASK])
        held = self.newest_on.get(s[_FP])
        if held is None or (s[T], s[U]) > (held[T], held[U]):
            self.newest_on[s[_FP]] = s
        action = s[_ACTION]
        if action == "benchmark":
            # the newest run that worked; a failed one only while nothing worked
            rank, runs = (s[_STATUS_AT] == "ok", s[T], s[U]), g[0]
            which = (s[_SCENARIO_AT], s[_CONFIG])
        elif action == "validate":
            rank, runs = (s[_TOP1_AT] is not None, s[T], s[U]), g[1]
            which = (s[_DATASET], s[_CONFIG])
        elif action in NOT_ROWS:
            return
        else:
            if g[5] is None or (s[T], s[U]) > (g[5][T], g[5][U]):
                g[5] = s
            return
        held = runs.get(which)
        if held is None:
            runs[which] = [rank, s, 1, s[T]]
            return
        held[2] += 1
        if s[T] > held[3]:
            held[3] = s[T]
        if rank > held[0]:
            held[0], held[1] = rank, s

    def _labels(self) -> dict[str, str]:
        """fingerprint -> label (from its newest record); labels shared by two machines get the fingerprint added."""
        labels = {fp: s[F["platform_label"]] for fp, s in self.newest_on.items()}
        uses: dict[str, int] = {}
        for label in labels.values():
            uses[label] = uses.get(label, 0) + 1
        return {fp: label if uses[label] == 1 else f"{label} [{fp[:8]}]" for fp, label in labels.items()}

    def result(self, meta: dict) -> tuple[dict, dict]:
        """(index, runs) data for the site. Strings are interned by a dict whose insertion
        order gives their positions; runs are laid out column by column."""
        labels, groups, summaries = self._labels(), self.groups, self.summaries
        strings = _Strings()
        ordered = sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], kv[0][3], labels[kv[0][4]], kv[0][4]))
        rows = []
        for position, (key, g) in enumerate(ordered):
            g[6] = position
            task = g[4][2] if g[4] else self.subject_task.get(key[0], ("", "", ""))[2]
            benches, validates = g[0], g[1]
            if len(benches) == 1 and len(validates) == 1:  # the common case: one benchmark row, one validate
                (bench,), (validate,) = benches.values(), validates.values()
                rows.append(_row(position, key, task, bench[1], validate[1], bench[2] + validate[2],
                                 max(bench[3], validate[3]), labels, strings))
                continue
            joined = set()
            for which in sorted(benches):
                bench = benches[which]
                v = _join(bench[1], validates)
                if v is not None:
                    joined.add(v)
                    validate = validates[v]
                    rows.append(_row(position, key, task, bench[1], validate[1], bench[2] + validate[2],
                                     max(bench[3], validate[3]), labels, strings))
                else:
                    rows.append(_row(position, key, task, bench[1], None, bench[2], bench[3], labels, strings))
            for which in sorted(validates):
                if which not in joined:
                    validate = validates[which]
                    rows.append(_row(position, key, task, None, validate[1], validate[2], validate[3], labels, strings))
            if not benches and not validates and g[5] is not None:  # only other actions (run, compile): a row for the newest
                rows.append(_row(position, key, task, None, None, g[2], g[3], labels, strings, g[5]))

        # runs, newest first (time, then uid: two stable passes on one string each take a third
        # of the time of one on (time, uid) tuples), column by column (map and itemgetter keep
        # 100,000 runs in C loops); a run's "key" is its group's position, set above
        order = sorted(range(len(summaries)), key=list(map(_uid, summaries)).__getitem__, reverse=True)
        order.sort(key=list(map(_time, summaries)).__getitem__, reverse=True)
        newest_first = list(map(summaries.__getitem__, order))
        runs = {"key": list(map(list(map(_position, self.group_of)).__getitem__, order))}
        # Each summary's run columns are picked in one pass (a summary is touched once: column by
        # column, 100,000 scattered lists cost a cache miss per value), then turned into columns.
        picked = zip(*map(_RUN_PICK, newest_first)) if newest_first else ((),) * len(_RUN_VALUE_COLUMNS)
        for column, values in zip(_RUN_VALUE_COLUMNS, picked):
            runs[column] = list(map(strings.__getitem__, values) if column in RUN_INTERNED else values)
        actions = list(map(itemgetter(_ACTION), summaries))
        index = {
            "format": INDEX_FORMAT, **meta,
            "counts": {"results": len(summaries), "configurations": len(groups), "rows": len(rows),
                       "benchmark": actions.count("benchmark"), "validate": actions.count("validate")},
            "columns": list(ROW_COLUMNS), "interned": list(INTERNED), "strings": list(strings), "rows": rows,
        }
        # runs.js refers to index.js's strings
        return index, {"format": INDEX_FORMAT, "columns": list(RUN_COLUMNS), "interned": list(RUN_INTERNED),
                       "count": len(newest_first), "values": runs}


def _join(bench: list, validates: dict):
    """The validate (dataset, config) a benchmark row shows: the newest one on the benchmark's
    dataset (its config the benchmark's when there is one), else the newest on any; None when none."""
    if len(validates) < 2:
        return next(iter(validates), None)
    dataset, config = bench[_DATASET], bench[_CONFIG]
    return max(validates, key=lambda w: (w[0] == dataset, w[1] == config, validates[w][0], w))


class _Strings(dict):
    """value -> position; a missing value gets the next position (dict order = positions)."""

    def __missing__(self, value: str) -> int:
        position = self[value] = len(self)
        return position


_STATUS, _ERROR, _TAGS = F["status"], F["error"], F["tags"]


def _tags(b: list, v: list, S: _Strings) -> list:
    return [S[t] for t in sorted(set(b + v))] if b or v else []


def _error(bench, validate, other) -> str:
    """Why the row's run failed ("" when nothing did)."""
    if bench and bench[_STATUS] != "ok":
        return bench[_ERROR] or "the benchmark failed"
    if validate and validate[_STATUS] != "ok":
        return validate[_ERROR] or "the validation failed"
    if other and other[_STATUS] != "ok":
        return other[_ERROR] or f"the {other[_ACTION]} failed"
    return ""


def _row_source() -> str:
    """The source of _row: one list display with an expression per column, as _PLAN says.

    Written out from _PLAN once at import, because 50,000 rows of ~60 columns walked
    through the plan one column at a time took most of the builder's index phase; the
    list display evaluates its items in column order, so strings are interned in the same
    order (and get the same positions) as a column-by-column loop would give them."""
    names = ("b", "v", "o", "s")  # the row's benchmark, validate, other run, and the first of those it has
    items = []
    for _column, how, at, where, interned in _PLAN:
        if how == 0:
            value = f"{names[where]}[{at}]"
        elif how == 1:
            value = f"({names[where[0]]}[{at}] or {names[where[1]]}[{at}])"
        elif how == 2:
            value = f"key[{where}]"
        elif where == "task":
            value = "S[task]"
        elif where == "label":
            value = "S[labels[key[4]]]"
        elif where == "tags":
            value = f"_tags(b[{at}], v[{at}], S)"
        else:  # "error": why the row's run failed
            value = "_error(bench, validate, other)"
        items.append(f"S[{value}]" if interned else value)
    return ("def _row(position, key, task, bench, validate, runs, latest, labels, S, other=None):\n"
            "    b, v, o = bench or _EMPTY, validate or _EMPTY, other or _EMPTY\n"
            "    s = bench or validate or other or _EMPTY\n"
            f"    return [position, {', '.join(items)}, runs, latest]\n")


def _compile_row():
    """_row: one leaderboard row (ROW_COLUMNS order) from the summaries of its runs, as _PLAN says;
    arguments (position, key, task, bench, validate, runs, latest, labels, S, other=None)."""
    namespace = {"_EMPTY": _EMPTY, "_tags": _tags, "_error": _error}
    exec(compile(_row_source(), f"<{__name__}._row>", "exec"), namespace)
    return namespace["_row"]


_row = _compile_row()
