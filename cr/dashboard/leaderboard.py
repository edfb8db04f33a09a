"""From record summaries to the leaderboard (data/index.js) and the run list (data/runs.js).

A leaderboard row is one configuration: (solution or model, backend, variant, precision,
platform) and, for benchmarks, the scenario (single-stream and offline latencies are not
comparable, so they get separate rows). It joins the latest benchmark of that
configuration with the latest validate of the same configuration without the scenario,
so one accuracy figure serves every scenario row.

Strings that repeat (names, backends, platforms) are stored once in "strings" and
referred to by position; 50,000 rows stay a few megabytes and parse in milliseconds.
"""
from __future__ import annotations

from operator import itemgetter

from .records import F

INDEX_FORMAT = 1

ROW_COLUMNS = (
    "key", "subject", "kind", "name", "version", "task", "backend", "backend_version", "variant", "precision",
    "platform", "platform_label", "arch", "scenario",
    "top1", "top5", "outcome", "p50_ns", "p99_ns", "throughput", "peak_rss", "energy_j", "validity",
    "bench_uid", "bench_status", "bench_loc", "validate_uid", "validate_status", "validate_loc",
    "runs", "latest", "tags", "reproduction", "error",
)
# Columns whose values are positions in "strings" (tags: a list of positions).
INTERNED = (
    "subject", "kind", "name", "version", "task", "backend", "backend_version", "variant", "precision",
    "platform", "platform_label", "arch", "scenario", "outcome", "validity", "bench_status", "bench_loc",
    "validate_status", "validate_loc", "reproduction",
)
RUN_COLUMNS = ("uid", "loc", "key", "action", "status", "time", "scenario", "p50_ns", "throughput", "top1", "error")
RUN_INTERNED = ("loc", "action", "status", "scenario")

_KEY = (F["subject"], F["backend"], F["variant"], F["precision"], F["platform"])
_key_of = itemgetter(*_KEY)
_newest = itemgetter(F["time"], F["uid"])
# what a missing benchmark or validate contributes to a row: blank strings, no numbers, no tags
_EMPTY = ["" if name not in ("p50_ns", "p99_ns", "throughput", "peak_rss", "energy_j", "top1", "top5", "tags") else None
          for name in F]
_EMPTY[F["tags"]] = []


_T, _U, _ACTION, _STATUS_AT, _SCENARIO_AT, _TOP1_AT, _TASK, _FP = (
    F[k] for k in ("time", "uid", "action", "status", "scenario", "top1", "task", "platform"))


class Leaderboard:
    """Summaries in, (index, runs) out. add() does the per-record work, so a builder can
    feed records while others are still being read; result() the per-row work.

    The output is the same for the same summaries in any order.
    """

    def __init__(self) -> None:
        self.summaries: list[list] = []
        # key -> [benchmark (rank, summary) by scenario, validate (rank, summary), runs, latest, task (time, uid, task)]
        self.groups: dict[tuple, list] = {}
        self.newest_on: dict[str, list] = {}  # platform fingerprint -> its newest summary (for the label)

    def add(self, s: list) -> None:
        self.summaries.append(s)
        T, U = _T, _U
        key = _key_of(s)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = [{}, None, 0, "", None]
        g[2] += 1
        if s[T] > g[3]:
            g[3] = s[T]
        if s[_TASK] and (g[4] is None or (s[T], s[U]) > g[4][:2]):
            g[4] = (s[T], s[U], s[_TASK])
        held = self.newest_on.get(s[_FP])
        if held is None or (s[T], s[U]) > (held[T], held[U]):
            self.newest_on[s[_FP]] = s
        action = s[_ACTION]
        if action == "benchmark":
            # the newest run that worked; a failed one only while nothing worked
            rank = (s[_STATUS_AT] == "ok", s[T], s[U])
            held = g[0].get(s[_SCENARIO_AT])
            if held is None or rank > held[0]:
                g[0][s[_SCENARIO_AT]] = (rank, s)
        elif action == "validate":
            rank = (s[_TOP1_AT] is not None, s[T], s[U])
            if g[1] is None or rank > g[1][0]:
                g[1] = (rank, s)

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
        rows, key_of = [], {}
        for position, (key, g) in enumerate(ordered):
            key_of[key] = position
            validate = g[1][1] if g[1] else None
            scenarios = g[0]
            for scenario in (scenarios if len(scenarios) < 2 else sorted(scenarios)) or [None]:
                rows.append(_row(position, key, g, scenarios[scenario][1] if scenario is not None else None, validate,
                                 labels, strings))

        # runs, newest first, column by column (map and itemgetter keep 100,000 runs in C loops)
        newest_first = sorted(summaries, key=_newest, reverse=True)
        runs = {}
        for column in RUN_COLUMNS:
            values = map(_key_of, newest_first) if column == "key" else map(itemgetter(F[column]), newest_first)
            if column == "key":
                values = map(key_of.__getitem__, values)
            elif column in RUN_INTERNED:
                values = map(strings.__getitem__, values)
            runs[column] = list(values)
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


class _Strings(dict):
    """value -> position; a missing value gets the next position (dict order = positions)."""

    def __missing__(self, value: str) -> int:
        position = self[value] = len(self)
        return position


(_KIND, _NAME, _VERSION, _BACKEND_VERSION, _ARCH, _SCENARIO, _TOP1, _TOP5, _OUTCOME, _P50, _P99, _TP, _RSS, _ENERGY,
 _VALIDITY, _UID, _STATUS, _LOC, _TAGS, _REPRO, _ERROR) = (F[k] for k in (
    "kind", "name", "version", "backend_version", "arch", "scenario", "top1", "top5", "outcome", "p50_ns", "p99_ns",
    "throughput", "peak_rss", "energy_j", "validity", "uid", "status", "loc", "tags", "reproduction", "error"))


def _row(position: int, key: tuple, g: list, bench, validate, labels: dict, S: _Strings) -> list:
    subject, backend, variant, precision, platform = key
    some = bench or validate
    b = bench or _EMPTY
    v = validate or _EMPTY
    tags = sorted(set(b[_TAGS] + v[_TAGS])) if b[_TAGS] or v[_TAGS] else []
    error = ""
    if bench and bench[_STATUS] != "ok":
        error = bench[_ERROR] or "the benchmark failed"
    elif validate and validate[_STATUS] != "ok":
        error = validate[_ERROR] or "the validation failed"
    return [
        position, S[subject], S[some[_KIND]], S[some[_NAME]], S[some[_VERSION]], S[g[4][2] if g[4] else ""],
        S[backend], S[b[_BACKEND_VERSION] or v[_BACKEND_VERSION]], S[variant], S[precision],
        S[platform], S[labels[platform]], S[some[_ARCH]], S[b[_SCENARIO]],
        v[_TOP1], v[_TOP5], S[v[_OUTCOME]], b[_P50], b[_P99], b[_TP], b[_RSS], b[_ENERGY], S[b[_VALIDITY]],
        b[_UID], S[b[_STATUS]], S[b[_LOC]], v[_UID], S[v[_STATUS]], S[v[_LOC]],
        g[2], g[3], [S[t] for t in tags], S[b[_REPRO] or v[_REPRO]], error,
    ]
