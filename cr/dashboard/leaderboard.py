"""From record summaries to the leaderboard (data/index.js) and the run list (data/runs.js).

A configuration is (solution or model, backend, variant, precision, platform): the runs of
one configuration share one accuracy figure and one "Runs of this configuration" list. A
leaderboard row is finer: one per benchmark scenario (single-stream and offline latencies
are not comparable) and run configuration (records.config_label: threads, batch size,
engine, inputs, backend options, ...), so that two runs that differ only in their threads
are two rows. A row joins the latest benchmark of its (scenario, config) with the latest
validate of the same configuration on the same dataset (else the latest on any dataset);
a validate of a dataset or config that no benchmark row took gets a row of its own.

A row's task is the newest task any run of its configuration recorded, else that of any
run of the same model or solution (a model has one task whichever backend runs it), so a
configuration that was only benchmarked still shows its model's task.

Strings that repeat (names, backends, platforms) are stored once in "strings" and
referred to by position; 50,000 rows stay a few megabytes and parse in milliseconds.
"""
from __future__ import annotations

from operator import itemgetter

from .records import F, FIELDS

INDEX_FORMAT = 1

ROW_COLUMNS = (
    "key", "subject", "kind", "name", "version", "task", "dataset", "backend", "backend_version", "variant",
    "precision", "platform", "platform_label", "arch", "scenario", "config",
    "top1", "top5", "outcome", "p50_ns", "p99_ns", "throughput", "peak_rss", "energy_j", "validity",
    "bench_uid", "bench_status", "bench_loc", "validate_uid", "validate_status", "validate_loc",
    "other_uid", "other_action", "runs", "latest", "tags", "reproduction", "error", "campaign",
    "ap", "ap50",  # detection: COCO AP@[.5:.95] and AP50 of the row's validate
)
# Columns whose values are positions in "strings" (tags: a list of positions).
INTERNED = (
    "subject", "kind", "name", "version", "task", "dataset", "backend", "backend_version", "variant", "precision",
    "platform", "platform_label", "arch", "scenario", "config", "outcome", "validity", "bench_status", "bench_loc",
    "validate_status", "validate_loc", "other_action", "reproduction", "campaign",
)
RUN_COLUMNS = ("uid", "loc", "key", "action", "status", "time", "scenario", "config", "p50_ns", "throughput", "top1",
               "error", "campaign", "worker")
RUN_INTERNED = ("loc", "action", "status", "scenario", "config", "campaign", "worker")

_KEY = (F["subject"], F["backend"], F["variant"], F["precision"], F["platform"])
_key_of = itemgetter(*_KEY)
_newest = itemgetter(F["time"], F["uid"])
_N = len(FIELDS)
# what a missing benchmark or validate contributes to a row: blank strings, no numbers, no tags
_EMPTY = ["" if name not in ("p50_ns", "p99_ns", "throughput", "peak_rss", "energy_j", "top1", "top5", "tags", "ap", "ap50")
          else None
          for name in F]
_EMPTY[F["tags"]] = []


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
        #         the newest run of another action (run, compile, ...)]
        self.groups: dict[tuple, list] = {}
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
            g = self.groups[key] = [{}, {}, 0, "", None, None]
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
        rows, key_of = [], {}
        for position, (key, g) in enumerate(ordered):
            key_of[key] = position
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
            if not benches and not validates:  # only other actions (run, compile): a row for the newest
                rows.append(_row(position, key, task, None, None, g[2], g[3], labels, strings, g[5]))

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


(_KIND, _NAME, _VERSION, _BACKEND_VERSION, _ARCH, _SCENARIO, _TOP1, _TOP5, _OUTCOME, _P50, _P99, _TP, _RSS, _ENERGY,
 _VALIDITY, _UID, _STATUS, _LOC, _TAGS, _REPRO, _ERROR) = (F[k] for k in (
    "kind", "name", "version", "backend_version", "arch", "scenario", "top1", "top5", "outcome", "p50_ns", "p99_ns",
    "throughput", "peak_rss", "energy_j", "validity", "uid", "status", "loc", "tags", "reproduction", "error"))
_CAMPAIGN = F["campaign"]


_AP, _AP50 = F["ap"], F["ap50"]


def _row(position: int, key: tuple, task: str, bench, validate, runs: int, latest: str, labels: dict,
         S: _Strings, other=None) -> list:
    subject, backend, variant, precision, platform = key
    some = bench or validate or other or _EMPTY
    o = other or _EMPTY
    b = bench or _EMPTY
    v = validate or _EMPTY
    tags = sorted(set(b[_TAGS] + v[_TAGS])) if b[_TAGS] or v[_TAGS] else []
    error = ""
    if bench and bench[_STATUS] != "ok":
        error = bench[_ERROR] or "the benchmark failed"
    elif validate and validate[_STATUS] != "ok":
        error = validate[_ERROR] or "the validation failed"
    elif other and other[_STATUS] != "ok":
        error = other[_ERROR] or f"the {other[_ACTION]} failed"
    return [
        position, S[subject], S[some[_KIND]], S[some[_NAME] or subject], S[some[_VERSION]], S[task],
        S[v[_DATASET] or b[_DATASET]], S[backend], S[b[_BACKEND_VERSION] or v[_BACKEND_VERSION]], S[variant],
        S[precision], S[platform], S[labels[platform]], S[some[_ARCH]], S[b[_SCENARIO]], S[(bench or some)[_CONFIG]],
        v[_TOP1], v[_TOP5], S[v[_OUTCOME]], b[_P50], b[_P99], b[_TP], b[_RSS], b[_ENERGY], S[b[_VALIDITY]],
        b[_UID], S[b[_STATUS]], S[b[_LOC]], v[_UID], S[v[_STATUS]], S[v[_LOC]], o[_UID], S[o[_ACTION]],
        runs, latest, [S[t] for t in tags], S[b[_REPRO] or v[_REPRO]], error, S[b[_CAMPAIGN] or v[_CAMPAIGN]],
        v[_AP], v[_AP50],
    ]
