"""cr results: list, show, compare, pareto, export, rm, add (and reindex) over the local results store.

Imports only the store (sqlite3, json): no numerical framework, no jsonschema unless a
record is invalid, rich only when a table is drawn on a terminal.
"""
from __future__ import annotations

import itertools
import json

import click

from ..results.summary import metric_text
from . import output
from .tables import ms, rate
from .options import BackendOption


def _store():
    from ..results.store import default_store

    return default_store()


def _filters(with_limit: bool, by_action: bool = True):
    def decorate(f):
        options = [
            click.option("--solution", metavar="REF", help="Solution name, solution:NAME or NAME@VERSION."),
            click.option("--model", metavar="REF", help="Model name, model:NAME or NAME@VERSION."),
            click.option("--dataset", metavar="REF", help="Dataset name, dataset:NAME or NAME@VERSION."),
            click.option("--backend", cls=BackendOption, help="Backend name ({backends})."),
            click.option("--platform", help="Platform fingerprint (or its first digits) or words of its description."),
        ]
        if by_action:
            options += [
                click.option("--action", help="benchmark, validate, run, compile, ..."),
                click.option("--status", type=click.Choice(["ok", "failed"]), help="Only results with this status."),
            ]
        options += [
            click.option("--since", metavar="DATE", help="Started at or after this ISO date/time (local time unless it says Z or +HH:MM)."),
            click.option("--variant", help="Model variant (onnx, tflite-int8, ...)."),
            click.option("--precision", help="Precision (fp32, fp16, int8, ...)."),
            click.option("--split", help="Dataset split (test, train, ...)."),
            click.option("--threads", type=click.IntRange(min=1), help="Threads the backend ran with (as the record states)."),
            click.option("--batch-size", type=click.IntRange(min=1), help="Batch size as run."),
            click.option("--pipeline", metavar="SHA", help="Pipeline sha256 (or its first digits)."),
            click.option("--campaign", metavar="NAME", help="Only the results of this campaign's jobs (cr campaign run)."),
            click.option("--campaign-job", metavar="ID", help="Only the results of this campaign job."),
            click.option("--study", metavar="NAME", help="Only the results of this study's trials (cr tune)."),
        ]
        if with_limit:
            options.append(click.option("--limit", type=click.IntRange(min=1), help="At most this many (the newest)."))
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def _number(value, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _when(started: str | None) -> str:
    """A stored UTC time as local 'YYYY-MM-DD HH:MM'."""
    if not started:
        return ""
    import datetime as dt

    try:
        moment = dt.datetime.fromisoformat(started.replace("Z", "+00:00"))
    except ValueError:
        return started
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def _status(row: dict) -> str:
    words = [row["status"] or "?"]
    if row.get("outcome"):
        words.append(row["outcome"])
    if row.get("validity") not in (None, "VALID"):
        words.append(row["validity"])
    return " ".join(words)


def _target(row: dict) -> str:
    return row.get("solution") or row.get("model") or row.get("dataset") or ""


@click.group("results")
def results() -> None:
    """Stored results: every benchmark and validate run is kept under CR_HOME/results/.

    UID arguments take the full uid or its first digits when they are unique.
    """


def _stack(row: dict) -> str:
    """'tflite/tflite-int8 (int8)': backend, variant and precision."""
    text = "/".join(x for x in (row.get("backend"), row.get("variant")) if x)
    return text + (f" ({row['precision']})" if row.get("precision") else "")


def _setting(row: dict) -> str:
    """'threads=2 batch=8 pipeline=7a8e7919 test': the configuration columns that are known."""
    words = [f"threads={row['threads']}" if row.get("threads") else "",
             f"batch={row['batch_size']}" if row.get("batch_size") else "",
             f"pipeline={row['pipeline'][:8]}" if row.get("pipeline") else "", row.get("split") or ""]
    return " ".join(w for w in words if w)


def _origin(row: dict) -> str:
    """'campaign NAME job 1a2b3c4d' or 'study NAME trial 3' ('' for a result run by hand)."""
    if row.get("study"):
        return f"study {row['study']}" + (f" trial {row['trial']}" if row.get("trial") is not None else "")
    if row.get("campaign"):
        return f"campaign {row['campaign']}" + (f" job {row['campaign_job'][:8]}" if row.get("campaign_job") else "")
    return ""


@results.command("list")
@_filters(with_limit=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the summary of each result).")
def list_(as_json, **filters):
    """List stored results, newest first, with the configuration each ran (threads as the
    backend ran them, batch, pipeline sha256, split) and the campaign job or study trial
    that made it."""
    rows = _store().rows(**filters)  # one page of the index at a time: memory does not grow with the store
    if as_json:
        _stream_json(rows)
        return
    cells = ([
        r["uid"], _when(r["started"]), r["action"], _target(r), _stack(r), _setting(r), _origin(r),
        r["platform_description"], ms(r["p50_ns"]), ms(r["p99_ns"]), rate(r["throughput_sps"]), _accuracy(r), _status(r),
    ] for r in rows)
    columns = LIST_COLUMNS
    first = list(itertools.islice(cells, FIRST_PAGE))
    if len(first) < FIRST_PAGE:  # all of it: the table as any listing draws it
        output.table(columns, first, empty="no stored results match")
        return
    _stream_table(columns, first, cells)


FIRST_PAGE = 500  # rows whose widths set the columns of a long listing


_KINDLESS = (("solution:", ""), ("model:", ""), ("dataset:", ""))


def _list_columns():
    from .tables import Col

    # p50, p99, throughput, accuracy and status are what a listing is read for: never dropped;
    # the uid (a prefix selects it) and what ran are kept, shortened; the rest gives way
    return [Col("UID", shorten="prefix", min=8), Col("WHEN", keep=False, drop=3),
            Col("ACTION", keep=False, drop=4), Col("TARGET", shorten="middle", min=13, abbrev=_KINDLESS),
            Col("BACKEND/VARIANT", shorten="middle", min=8), Col("CONFIG", keep=False, drop=0, shorten="abbrev"),
            Col("FROM", keep=False, drop=1, shorten="end"), Col("PLATFORM", keep=False, drop=2, shorten="middle", min=12),
            Col("P50 (ms)"), Col("P99 (ms)"), Col("THROUGHPUT (samples/s)"), Col("ACCURACY", shorten="wrap", min=6),
            Col("STATUS", shorten="wrap", min=6)]


LIST_COLUMNS = _list_columns()


def _stream_json(rows) -> None:
    """The JSON array output.emit_json prints for the list of rows (the same text, byte for
    byte), written a page (FIRST_PAGE elements) at a time as the rows come."""
    chunks, count = [], 0
    for row in rows:
        text = output.json_text(row)
        chunks.append(("[\n  " if not count else ",\n  ") + text.replace("\n", "\n  "))
        count += 1
        if len(chunks) == FIRST_PAGE:
            output.echo("".join(chunks), nl=False)
            chunks = []
    output.echo("".join(chunks) + ("[]" if not count else "\n]"))


def _stream_table(columns: list, first: list[list], rest) -> None:
    """A listing longer than FIRST_PAGE rows, printed a page at a time (rich would hold every
    row to draw one table): the layout (on a terminal, cli/tables.py's fit to its width; in a
    pipe, the plain format) is set by the first FIRST_PAGE rows; in a pipe a longer cell further
    down is printed whole and shifts its line."""
    import sys

    from . import tables

    tty = sys.stdout.isatty()

    def cleaned(page):
        cells = [["" if v is None else output.clean(v) for v in row] for row in page]
        return [[tables.terminal_cell(v) for v in row] for row in cells] if tty else cells

    page = cleaned(first)
    if tty:
        import shutil

        plan = tables.plan(columns, page, shutil.get_terminal_size().columns)

        def lines(rows, head=False):
            out = plan.header_lines() if head else []
            for row in rows:
                out += plan.row_lines(row) + ([""] if plan.records else [])
            return out
    else:
        names = [c.name for c in tables.columns_of(columns)]
        widths = [max([len(n)] + [len(tables.plain_cell(r[i])) for r in page]) for i, n in enumerate(names)]
        last = len(names) - 1

        def line(values) -> str:
            return "  ".join(v if i == last else v.ljust(widths[i]) for i, v in enumerate(values)).rstrip()

        def lines(rows, head=False):
            return ([line(names)] if head else []) + [line([tables.plain_cell(v) for v in r]) for r in rows]

    output.echo("\n".join(lines(page, head=True)))
    while True:
        more = list(itertools.islice(rest, FIRST_PAGE))
        if not more:
            return
        output.echo("\n".join(lines(cleaned(more))))


def _accuracy(row: dict) -> str:
    """top-1 as a bare number (classification), else the task's headline metric named
    (miou 0.9270, nme 0.0700, rmse 53.4761)."""
    if row.get("top1") is not None or row.get("task_metric") is None or row.get("task_value") is None:
        return _number(row.get("top1"))
    return f"{row['task_metric']} {row['task_value']:.4f}"


@results.command()
@click.argument("uid")
@click.option("--raw", is_flag=True, help="With --json: the raw latencies inline (verified against their sha256).")
@click.option("--json", "as_json", is_flag=True, help="Print the record as JSON.")
def show(uid, raw, as_json):
    """Show one stored result."""
    from ..results.queries import results_show
    from ..results.store import record_file
    from ..results.summary import config_label, summarize

    store = _store()
    record = results_show(uid, raw=raw and as_json)
    if as_json:
        output.emit_json(record)
        return
    s = summarize(record)
    rows = [
        ["uid", s["uid"]],
        ["action", s["action"]],
        ["status", _status(s)],
        ["configuration", config_label(record)],
        ["started", f"{_when(s['started'])}  ({record['started']})"],
        ["ended", f"{_when(s['ended'])}  ({record['ended']})"],
    ]
    for i, c in enumerate(record.get("components") or []):
        rows.append(["components" if i == 0 else "", f"{c.get('ref')}" + (f"  (uid {c['uid']})" if c.get("uid") else "")])
    backend = record.get("backend") or {}
    info = backend.get("info") or {}
    if backend:
        details = [f"{info['framework']} {info['version']}"] if info.get("framework") and info.get("version") else []
        rows.append(["backend", backend.get("name", "") + (f" ({', '.join(details)})" if details else "")])
    if s["variant"] or s["precision"]:
        rows.append(["variant", " ".join(x for x in (s["variant"], s["precision"] and f"({s['precision']})") if x)])
    rows.append(["platform", f"{s['platform_description']} (fingerprint {s['platform']})"])
    if record.get("lock"):
        rows.append(["lock", str((record["lock"] or {}).get("root", "yes"))])
    rows += _metric_rows(record)
    from ..results.placement import rows as placement_rows

    rows += placement_rows(record)  # where the framework put the model (docs/placement.md)
    from ..results.machine import rows as machine_rows

    rows += machine_rows(record)  # memory, energy, the machine's state
    error = record.get("error") if isinstance(record.get("error"), dict) else None
    if error:
        rows.append(["error", f"{error.get('kind') or 'error'}: {error.get('message')}"])
        if error.get("type"):
            rows.append(["", f"type {error['type']}"])
        for key in ("exit_status", "signal_name", "timeout_s"):
            if error.get(key) is not None:
                rows.append(["", f"{key.replace('_', ' ')} {error[key]}"])
        if error.get("hint"):
            rows.append(["hint", error["hint"]])
    raw_info = record.get("raw") or {}
    if raw_info.get("count") is not None:
        rows.append(["raw", f"{raw_info['count']} latencies in {raw_info.get('latencies_ns_file')}"])
    rows.append(["config", json.dumps(record.get("config"), sort_keys=True)])
    rows.append(["file", str(store.root / record_file(s["uid"]))])
    output.table(["FIELD", "VALUE"], rows, title=output.clean(f"result {s['uid']}"))
    # A failed run's own words: the traceback the runtime caught, the tail of its stderr
    # (escaped: an imported record must not drive the terminal).
    for key, heading in (("traceback", "traceback (from the runtime):"), ("stderr_tail", "stderr (last lines):")):
        text = (error or {}).get(key)
        if isinstance(text, str) and text.strip():
            click.echo(heading)
            for line in text.rstrip("\n").splitlines():
                click.echo(output.clean(f"  {line}"))


def _metric_rows(record: dict) -> list[list]:
    rows = []
    metrics = record.get("metrics") or {}
    lat = metrics.get("latency_ns") or {}
    if metrics.get("scenario"):
        rows.append(["scenario", metrics["scenario"] + (f" ({metrics.get('validity')})" if metrics.get("validity") else "")])
    if metrics.get("queries") is not None:
        rows.append(["queries", f"{metrics['queries']} in {metrics.get('duration_s') or 0:.3f} s"])
    for key in ("min", "p50", "p90", "p95", "p99", "p99.9", "max", "mean", "iqr"):
        if isinstance(lat.get(key), (int, float)):
            rows.append([key, f"{ms(lat[key])} ms"])  # ms, as every table (docs/output.md)
    tp = metrics.get("throughput") or {}
    if tp.get("queries_per_s") is not None:
        rows.append(["throughput", f"{tp['queries_per_s']:.1f} queries/s, {tp.get('samples_per_s') or 0:.1f} samples/s"])
    if metrics.get("noise") is not None:
        rows.append(["noise (IQR/p50)", f"{metrics['noise']:.3f}" + ("  NOISY" if metrics.get("noisy") else "")])
    if metrics.get("peak_rss_bytes"):
        rows.append(["peak RSS", f"{metrics['peak_rss_bytes'] / 2**20:.1f} MiB"])
    from .trust import phase_rows

    rows += phase_rows(metrics)
    from ..results.sustained import rows as sustained_rows

    rows += sustained_rows(metrics)  # a --sustained run: its verdict, rules and curve
    validation = record.get("validation") or {}
    for key in ("top1", "top5", "recall", "precision", "mean_iou", "miou", "pixel_accuracy", "nme", "mean_error", "mae", "rmse"):
        if isinstance(validation.get(key), (int, float)):
            rows.append([key, f"{validation[key]:.4f}"])
    if validation.get("outcome"):
        rows.append(["outcome", validation["outcome"]])
    parity = record.get("parity") or {}
    if parity.get("outcome"):
        rows.append(["parity", parity["outcome"]])
    return rows


def _noise(verdict) -> str:
    """A WITHIN NOISE cell from a verdict: yes (inconclusive), NO (faster or slower), - (not judged)."""
    return "-" if verdict is None else ("yes" if verdict == "inconclusive" else "NO")


@results.command()
@click.argument("uids", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def compare(uids, as_json):
    """Compare results metric by metric, relative to the first (the baseline).

    Latency (p50, p90, p99, mean) and single-stream throughput are judged by one rule, the
    one `cr reproduce` and the dashboard use: a 95% moving-block bootstrap interval of B/A
    from the raw samples (seeded: the same records give the same interval), re-centred on
    the records' figures; faster/slower only when the whole interval is beyond +-3%, else
    within noise. When a difference is beyond noise, its likely causes are ranked
    (docs/results.md). Validate records on the same samples: each accuracy delta with its
    95% paired-bootstrap interval and an exact McNemar test, 'significant' when p < 0.05
    and the interval excludes 0.
    """
    from ..results.queries import compare as compare_results

    report = compare_results(*uids)
    if as_json:
        output.emit_json(report)
        return
    ids = report["uids"]
    header = ["METRIC"] + ids + [f"DIFF {u[:8]}" for u in ids[1:]] + ["WITHIN NOISE"]
    rows = []
    for m in report["metrics"]:
        diffs = ["" if d is None else f"{100 * d:+.1f}%" for d in m["rel_diff"][1:]]
        rows.append([_labelled(m)] + [_in_unit(m["unit"], v) for v in m["values"]] + diffs
                    + [" ".join(_noise(v) for v in m["verdict"][1:])])
    labels = {c["uid"]: c["label"] for c in report.get("config") or []}
    for r in report["results"]:
        click.echo(output.clean(f"{r['uid']}  {r['action']}  {_target(r)}  {'/'.join(x for x in (r['backend'], r['variant']) if x)}"
                                f"  {labels.get(r['uid'], '')}  {r['platform_description']}  {_when(r['started'])}"), err=True)
    for note in report["notes"]:
        output.warn(output.clean(note))
    from .tables import Col

    # every figure and the verdict are kept; a narrow terminal folds the table into records
    columns = [Col(header[0], shorten="wrap", min=10)] + [Col(h) for h in header[1:-1]] + [Col(header[-1], shorten="wrap", min=5)]
    output.table(columns, rows, empty="no metric to compare")
    for line in _significance_lines(report) + _accuracy_lines(report):
        click.echo(line)


def _labelled(metric: dict) -> str:
    """'p50 (ms)', 'throughput (samples/s)': the unit said once, by the row's name."""
    unit = {"ns": "ms", "bytes": "MiB"}.get(metric["unit"], metric["unit"])
    return f"{metric['label']} ({unit})" if unit and unit not in metric["label"] else metric["label"]


def _in_unit(unit: str, value) -> str:
    """A compared figure as a bare number in its row's unit (latencies in ms, as every table)."""
    if value is None:
        return ""
    if unit == "ns":
        return ms(value)
    return metric_text(unit, value).split(" ")[0]


def _significance_lines(report: dict) -> list[str]:
    """The rule (once: WITHIN NOISE above and these verdicts are the same judgement), then each
    run against the baseline: verdict, ratio and interval per metric, likely causes."""
    from .trust import pair_lines

    sig = report.get("significance") if isinstance(report.get("significance"), dict) else None
    if not sig:
        return []
    lines = [output.clean(f"verdicts (and WITHIN NOISE above): {sig.get('rule')}; {sig.get('method')}, "
                          f"{sig.get('resamples')} resamples, seed {sig.get('seed')}")]
    for pair in sig.get("pairs") or []:
        lines.append(output.clean(f"{pair.get('uid')} vs baseline {pair.get('baseline')}:"))
        lines += pair_lines(pair, sig.get("confidence", 0.95))
        lines += [output.clean(f"  note: the {m['label']} interval was widened to contain its ratio (the bootstrap "
                               f"distribution is skewed: read the interval as rough)")
                  for m in pair.get("metrics") or [] if m.get("widened")]
    return lines


def _accuracy_lines(report: dict) -> list[str]:
    """compare's accuracy section: per pair and metric, both values, the delta with its 95%
    interval, McNemar's p and the verdict; or why no paired test was run."""
    tests = report.get("accuracy") or []
    if not tests:
        return []
    rules = {t["rule"] for t in tests if t.get("comparable")}
    lines = ["accuracy, paired sample by sample" + (f": {rules.pop()}" if len(rules) == 1 else "") + ":"]
    said = set()
    for t in tests:
        a, b = (str(u or "?")[:16] for u in t["uids"])
        if t.get("pipeline") and b not in said:
            said.add(b)
            lines.append(output.clean(f"  {b} vs baseline {a}  pipeline differs: " + "; ".join(t["pipeline"])))
        name = {"top1": "top-1", "top5": "top-5"}.get(t["metric"], t["metric"])
        if not t.get("comparable"):
            lines.append(output.clean(f"  {b} vs baseline {a}  {name}: no paired test: {t['reason']}"))
            continue
        lo, hi = t["interval"]
        d = t["discordant"]
        lines.append(output.clean(
            f"  {b} vs baseline {a}  {name} {t['values'][0]:.4f} -> {t['values'][1]:.4f}  delta {t['delta']:+.4f}"
            f" (95% {lo:+.4f} .. {hi:+.4f})  McNemar p {t['mcnemar_p']:.3g} ({d['a_only']} right only in {a[:8]},"
            f" {d['b_only']} only in {b[:8]}, of {t['samples']})  {t['verdict']}"))
    return lines


@results.command()
@click.option("--objective", "objectives", multiple=True, required=True, metavar="NAME",
              help="What to rank by, repeatable: p50, p90, p99, throughput, memory, energy (lower/higher is better as "
                   "each says), top1, top5, map.")
@click.option("--min-effect", type=click.FloatRange(min=0.0), default=0.01, show_default=True,
              help="A difference smaller than this share of a value never beats it.")
@_filters(with_limit=False, by_action=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (every point with its values, intervals and status).")
def pareto(objectives, min_effect, as_json, **filters):
    """The Pareto front of stored results over the chosen objectives.

    One point per configuration: a benchmark joined with the validate of the same stack
    (platform, model, backend, variant, precision, pipeline, split; accuracy does not
    depend on threads or batch), the newest run of each. Every value has its 95% interval;
    a point beats another on an objective only beyond both intervals and 1%, so points
    within noise are tied, not dominated (docs/results.md).
    """
    from ..results.queries import results_pareto

    report = results_pareto(list(objectives), min_effect=min_effect, **filters)
    if as_json:
        output.emit_json(report)
        return
    objs = report["objectives"]
    header = ["STATUS", "CONFIGURATION"] + [f"{o['label'].upper()} ({o['better']})" for o in objs] + ["VS", "RESULTS"]
    rows = []
    for p in report["points"]:
        cells = []
        for o in objs:
            v = p["values"].get(o["name"])
            cells.append(_figure(o["unit"], v) if v else f"- ({p['missing'].get(o['name'], 'not measured')})")
        vs = ("tied with " + ", ".join(p["tied_with"]) if p["tied_with"] else
              f"dominated by {p['dominated_by']}" if p["dominated_by"] else "")
        uids = " ".join(u[:8] for u in (p["records"]["benchmark"], p["records"]["validate"]) if u)
        rows.append([p["status"], p["label"]] + cells + [vs, uids + (f" ({p['runs']} runs)" if p["runs"] > 1 else "")])
    output.table(header, rows)
    click.echo(output.clean(f"front: {len(report['front'])} of {len(report['points'])} configuration(s) "
                            f"({report['records']} result(s) read); rule: {report['rule']}"))
    if report.get("join"):
        click.echo(output.clean(f"join: {report['join']}"))


def _figure(unit: str, value: dict) -> str:
    """'0.0123 ms [0.0119 ms, 0.0128 ms]': a value and its 95% interval (latencies in ms, as
    every table: docs/output.md)."""
    def one(v) -> str:
        return f"{ms(v)} ms" if unit == "ns" else metric_text(unit, v)

    text = one(value["value"]) + (" J" if unit == "J" else "")
    if value["lo"] == value["hi"]:
        return text
    return f"{text} [{one(value['lo'])}, {one(value['hi'])}]"


@results.command()
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), required=True, help="csv: one row per result; json: full records.")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), help="Write here (default: stdout).")
@click.option("--no-raw", is_flag=True, help="json: leave the raw latencies out (raw: null).")
@_filters(with_limit=True)
def export(fmt, out, no_raw, **filters):
    """Export stored results as CSV or JSON (re-importable with cr results add)."""
    from ..results.queries import results_export

    count = results_export(fmt, out, raw=not no_raw, **filters)
    if out:
        click.echo(f"exported {count} result(s) to {out}", err=True)


@results.command("rm")
@click.argument("uids", nargs=-1, required=True)
def rm(uids):
    """Remove stored results (each UID must name exactly one)."""
    from ..results.queries import results_rm

    for uid in results_rm(*uids):
        click.echo(f"removed {uid}")


@results.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def add(files):
    """Import result files (a record, or a list as cr results export --format json writes)."""
    from ..results.queries import results_add

    results_add(*files, on_added=lambda uid, path: click.echo(f"added {uid} ({path})"))


@results.command()
@click.option("--full", is_flag=True, help="Also re-stat every known file (finds files edited in place).")
def reindex(full):
    """Bring the index up to date with the result files (after copying or editing them by hand)."""
    from ..results.queries import results_reindex

    stats = results_reindex(full=full)
    click.echo(f"read {stats['parsed']} file(s), {stats['invalid']} invalid; dropped {stats['removed']} gone; "
               f"cleaned {stats['cleaned']} leftover(s)")
