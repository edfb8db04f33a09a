"""`cr results ...` as calls on the default results store (CR_HOME/results/), each returning
what the command's --json prints.

    cr.results_list(model="lenet-digits", action="benchmark", limit=5)   # summaries, newest first
    cr.results_show("1a2b3c4d")                                          # one full record
    cr.compare("1a2b3c4d", "5e6f7a8b")                                   # metrics, intervals, verdicts

Filters (results_list, results_pareto, results_export) are ResultStore.list()'s: solution,
model, dataset, backend, platform, action, status, since, variant, precision, split, threads,
batch_size, pipeline, campaign, campaign_job, study (and limit). Only sqlite3 and json are
imported: no numerical framework.
"""
from __future__ import annotations

from ..errors import CRError


def _store():
    from .store import default_store

    return default_store()


def results_list(**filters) -> list[dict]:
    """The stored results that match every filter, newest first (`cr results list --json`):
    one summary each (uid, action, refs, backend, configuration, platform, p50/p99,
    throughput, accuracy, status, file). For a very large store iterate
    ``cr.result_store().rows(**filters)`` instead: the same rows, a page at a time."""
    return _store().list(**filters)


def results_show(uid: str, raw: bool = False) -> dict:
    """One stored result's full record (`cr results show UID --json`); uid: the full uid or its
    first digits when unique. raw: the raw latencies inline (verified against their sha256)
    instead of the name of their side file. NotFound (a CRError) for an unknown uid."""
    from .latencies import inline_raw

    record = _store().get(uid, raw=raw)
    if raw and isinstance(record.get("raw"), dict) and record["raw"].get("latencies_ns") is not None:
        record["raw"] = inline_raw(record["raw"]["latencies_ns"])
    return record


def compare(*uids: str) -> dict:
    """Compare stored results metric by metric against the first, the baseline
    (`cr results compare A B [C ...] --json`).

    Latency percentiles and single-stream throughput are judged by the rule `cr reproduce`
    and the dashboard use (cr.results.significance): "significance" holds the rule, the
    method, the seed and, per run against the baseline, each metric's ratio, 95% bootstrap
    interval and verdict (faster / slower / inconclusive) with likely causes; "metrics" the
    values, relative differences and verdicts side by side; "accuracy" the paired tests of
    validate records (delta, interval, McNemar p). CRError for fewer than two uids."""
    if len(uids) == 1 and isinstance(uids[0], (list, tuple)):
        uids = tuple(uids[0])
    return _store().compare(list(uids))


def results_pareto(objectives, min_effect: float = 0.01, **filters) -> dict:
    """The Pareto front of the stored results over objectives (`cr results pareto --objective
    p50 --objective top1 --json`): every configuration's point with its values, 95% intervals,
    status (front, tied, dominated) and the rule. objectives: names (p50, p90, p99,
    throughput, memory, energy, top1, top5, map) or one comma-separated string."""
    from .frontier import report

    names = [o.strip() for o in objectives.split(",")] if isinstance(objectives, str) else list(objectives)
    return report(_store(), names, min_effect=min_effect, **filters)


def results_export(fmt: str, out=None, raw: bool = True, **filters) -> int:
    """Write the matching results as "csv" (one row each) or "json" (full records, re-importable
    with results_add) to out (a path, a text stream, or None: stdout) (`cr results export`).
    Returns how many were written."""
    if fmt not in ("csv", "json"):
        raise CRError(f"export format {fmt!r} is not csv or json", hint="give fmt='csv' or fmt='json'")
    return _store().export(fmt, out, raw=raw, **filters)


def results_rm(*uids: str) -> list[str]:
    """Remove stored results (`cr results rm UID ...`): each uid (or unique prefix) must name
    one; all are resolved before any is removed. Returns the full uids removed."""
    if len(uids) == 1 and isinstance(uids[0], (list, tuple)):
        uids = tuple(uids[0])
    return _store().remove(list(uids))


def results_add(*files, on_added=None) -> list[str]:
    """Import result files (`cr results add FILE ...`): a record, or a list as results_export
    writes. Returns the uids added. A file that cannot be imported is a warning (cr.events)
    and the others are still added; then CRError says how many failed.
    on_added(uid, path): called as each result is added (the CLI prints it)."""
    from ..events import reporter

    if len(files) == 1 and isinstance(files[0], (list, tuple)):
        files = tuple(files[0])
    store = _store()
    added, failed = [], []
    for path in files:
        try:
            for uid in store.add_file(path):
                added.append(uid)
                if on_added is not None:
                    on_added(uid, str(path))
        except CRError as exc:
            failed.append(exc)
            reporter().warning(exc.message)
    if failed:
        raise CRError(f"{len(failed)} of {len(files)} file(s) could not be imported",
                      hint=failed[0].hint or "fix them (see the warnings) and add them again")
    return added


def results_reindex(full: bool = False) -> dict:
    """Bring the results index up to date with the files (`cr results reindex`); full: also
    re-stat every known file. {"parsed", "invalid", "removed", "cleaned"}: files read, files
    found invalid, rows of files gone, leftovers deleted."""
    from .store import ORPHAN_GRACE_S

    stats = _store().reindex(full=full, orphan_grace_s=ORPHAN_GRACE_S)
    return {"parsed": stats.parsed, "invalid": stats.invalid, "removed": stats.removed, "cleaned": stats.cleaned}
