"""cr profile: per-layer timings from the framework's own profiler, one trace, layers across backends."""
from __future__ import annotations

import click

from . import output
from .actionopts import conclude
from .options import BackendOption, backend_options


def _ms(ns) -> str:
    return "-" if ns is None else f"{ns / 1e6:.4f}"


def _us(ns) -> str:
    return "-" if ns is None else f"{ns / 1e3:.1f}"


def _share(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _overhead(o: dict) -> str:
    if o.get("ratio") is None:
        return "not measured: " + (o.get("why") or "unknown")
    return (f"{o['ratio']:.2f}x: profiled p50 {_ms(o.get('profiled_p50_ns'))} ms vs plain p50 {_ms(o['plain_p50_ns'])} ms "
            f"over {o.get('plain_queries')} plain queries ({o.get('plain_run') or 'same model and threads'})")


def _spread(l: dict) -> str:
    return "-" if l.get("p10_ns") is None else f"{_us(l['p10_ns'])}..{_us(l['p90_ns'])}"


LAYER_COLUMNS = ["LAYER", "OP", "PROVIDER", "CALLS/Q", "MEDIAN us", "P10..P90 us", "SHARE"]


def layer_rows(profile: dict, top: int) -> list[list]:
    """The table's rows: the top layers by median time per query, one "other" row for the
    rest, and the "unattributed" remainder (model median less the sum of layer medians):
    the SHARE column adds up to 100% of the model median."""
    layers = profile.get("layers") or []
    s = profile.get("summary") or {}
    if not layers:
        return [[u["name"], u["op"], "", "", "-", "-", "-"] for u in (profile.get("untimed") or [])[:top]]
    rows = [[l["name"], l["op"], l.get("provider") or "", _calls(l), _us(l.get("median_ns")), _spread(l), _share(l.get("share"))]
            for l in layers[:top]]
    kept_rest = layers[top:]
    dropped = max(0, int(s.get("layers") or len(layers)) - len(layers))  # beyond the record's "top" (not kept)
    if kept_rest or dropped:
        med = sum(l.get("median_ns") or 0 for l in kept_rest)
        share = sum(l.get("share") or 0 for l in kept_rest)
        label = f"other ({len(kept_rest)} layers)" + (f"; {dropped} more not kept" if dropped else "")
        rows.append([label, "", "", "", _us(med), "", _share(share)])
    u = s.get("unattributed")
    if u:
        rows.append(["(unattributed)", "", "", "", _us(u["ns"]), "", _share(u["share"])
                     + (" (overlap)" if u["ns"] < 0 else "")])
    m = s.get("model_ns") or {}
    rows.append(["(model, profiled)", "", "", "", _us(m.get("p50")),
                 f"{_us(m.get('p10'))}..{_us(m.get('p90'))}" if m.get("p10") is not None else "-", _share(1.0)])
    return rows


def _calls(l: dict) -> str:
    c = l.get("calls_per_query")
    return str(l["calls"]) if c is None else (str(int(c)) if float(c).is_integer() else f"{c:.2f}")


def summary_rows(record: dict) -> list[list]:
    p = record["profile"]
    s = p["summary"]
    m = s["model_ns"]
    info = record["backend"].get("info") or {}
    rows = [["backend", record["backend"]["name"] + (f" ({info.get('framework')} {info.get('version')})" if info.get("version") else "")],
            ["profiler", p.get("source")],
            ["threads", "the framework's default (none set)" if info.get("threads") is None else str(info.get("threads"))],
            ["queries", f"{s['queries']} profiled (after {s.get('warmup', 0)} warm-up), batch {s.get('batch_size')}"],
            ["statistic", "median per query over the profiled queries, spread p10..p90; shares of the model median"],
            ["model time", f"p50 {_ms(m.get('p50'))} ms per query (p10..p90 {_ms(m.get('p10'))}..{_ms(m.get('p90'))} ms; "
                           "profiled: slower than a benchmark)"]]
    if s.get("layer_median_sum_ns") is not None:
        rows.append(["layer time", f"{_ms(s['layer_median_sum_ns'])} ms per query: the sum of {s['layers']} layer medians"])
        rows.append(["coverage", f"{s['coverage']:.3f} (sum of layer medians / model median)"])
        u = s.get("unattributed") or {}
        if u:
            added = (p.get("overhead") or {}).get("added_ns")
            split = (f"; of it {_ms(u['between_ops_ns'])} ms between ops in a typical query and {_ms(u['scatter_ns'])} ms "
                     "scatter (queries slowed in different layers)") if u.get("scatter_ns") is not None and u["ns"] >= 0 else ""
            rows.append(["unattributed", f"{_ms(u['ns'])} ms ({_share(u['share'])}): {u['meaning']}{split}"
                         + (f"; the profiler adds {_ms(added)} ms per query (profiled p50 - plain p50)" if added and added > 0 else "")])
    rows.append(["profiler overhead", _overhead(p.get("overhead") or s.get("overhead") or {})])
    if p.get("note"):
        rows.append(["note", p["note"]])
    system = p.get("system") or {}
    if system.get("missing"):
        rows.append(["system track", "not readable here: " + "; ".join(system["missing"])])
    trace = record.get("trace") or {}
    where = trace.get("exported") or trace.get("beside_output") or trace.get("file")
    if where:
        rows.append(["trace", f"{where} ({trace.get('events')} events; open in Perfetto or chrome://tracing)"])
    return rows


def compare_rows(comparison: dict, top: int) -> tuple[list[str], list[list]]:
    names = [n for n in comparison["summary"]["backends"] if n not in (comparison["summary"].get("untimed") or [])]
    columns = (["LAYER", "OP"] + [f"{n} median us" for n in names] + [f"{n}/{names[0]}" for n in names[1:]]
               + ["FUSED / NODES"])
    rows = []
    for r in comparison["rows"][:top]:
        cells = [r["backends"].get(n) for n in names]
        nodes = "; ".join(r.get("fused") or []) or " | ".join(f"{c['name']} ({c['op']})" for c in cells if c)
        rows.append([r["layer"], r["class"], *[_us(c["per_query_ns"]) if c else "-" for c in cells],
                     *[f"{c['ratio']:.2f}" if c and c.get("ratio") is not None else "-" for c in cells[1:]], nodes])
    return columns, rows


def ops_rows(comparison: dict, top: int) -> tuple[list[str], list[list]]:
    """Ops by op class on every backend: count and summed layer medians ('untimed' where the
    backend records no per-op timing)."""
    names = comparison["summary"]["backends"]
    columns = ["OP CLASS"] + [f"{n} ops" for n in names] + [f"{n} median us" for n in names] + ["OP TYPES"]
    rows = []
    for r in comparison["ops"]["rows"][:top]:
        cells = [r["backends"].get(n) for n in names]
        types = "; ".join(f"{n}: " + ", ".join(f"{t} x{k}" for t, k in c["types"].items()) for n, c in zip(names, cells) if c)
        rows.append([r["class"], *[c["ops"] if c else 0 for c in cells],
                     *["-" if not c else ("untimed" if c["median_ns"] is None else _us(c["median_ns"])) for c in cells], types])
    return columns, rows


@click.command()
@click.argument("ref", nargs=-1, required=True)
@click.option("--backend", cls=BackendOption, help="Backend to profile (cr.backends entry point): {backends}.")
@click.option("--compare", "compare", metavar="B1,B2[,B3]", help="Profile on two or three backends (one thread count on all) and match their layers.")
@click.option("--variant", "variants", multiple=True, metavar="[BACKEND=]VARIANT",
              help="Model variant (default: the first the backend loads); with --compare: BACKEND=VARIANT, repeatable.")
@click.option("--variants", "diff", metavar="A,B",
              help="With --backend: profile two versions of the model (precisions fp32,int8, variant names, or another "
                   "version's ref) and show their layers side by side.")
@click.option("-O", "--option", "options", multiple=True, metavar="[BACKEND:]KEY=VALUE",
              help="Backend option (repeatable); with --compare: BACKEND:KEY=VALUE.")
@click.option("--samples", type=int, help="Profiled queries (default 50).")
@click.option("--warmup", type=int, help="Queries run before the profiler starts (default 5).")
@click.option("--batch-size", type=int, help="Samples per model call (default: the model's batch, else 1).")
@click.option("--threads", type=int, help="The backend's compute threads.")
@click.option("--top", "top", type=int, default=20, show_default=True, help="Layers shown (the rest are one 'other' row).")
@click.option("--trace", "trace", type=click.Path(dir_okay=True), help="Also write the Chrome trace here (.json, or .json.gz); with --compare: a folder.")
@click.option("--lock", "lock_file", type=click.Path(exists=True, dir_okay=False), help="Run inside this lock's interpreter and environment.")
@click.option("-o", "--output", "out", type=click.Path(), help="Write the result record (JSON) here (trace beside it); with --compare: a folder.")
@click.option("--json", "as_json", is_flag=True, help="Print the record (or the comparison) as JSON.")
@click.option("--no-store", "store", is_flag=True, default=True, flag_value=False, help="Do not keep the result in the results store.")
@click.option("--install", is_flag=True, help="Install what running the model needs and is missing here first.")
@click.option("--timeout", "timeout_s", type=float, help="Stop the runtime and fail after this many seconds.")
def profile(ref, backend, compare, variants, diff, options, samples, warmup, batch_size, threads, top, trace, lock_file, out,
            as_json, store, install, timeout_s):
    """Profile a model layer by layer: cr profile model NAME --backend onnxruntime [--trace t.json].

    Runs the model --samples times under the framework's own profiler (onnxruntime's
    session profiling, torch.profiler, tf.profiler, TensorRT's IProfiler; TFLite and null:
    model level only) in a separate process, outside any benchmark: profiled times are
    slower than benchmarked ones and never enter the leaderboard. Prints each layer's
    median time per query (p10..p90) over the profiled queries and its share of the model
    median, the unattributed remainder, the coverage (sum of layer medians / model median)
    and the profiler's overhead (profiled vs plain queries of the same model and threads);
    the Chrome trace (model, layer and system tracks) is kept beside the result. With
    --compare onnxruntime,torch the layers are matched across backends run with one thread
    count; with --backend onnxruntime --variants fp32,int8, across two versions of the
    model (docs/profiling.md says how).
    """
    from ..errors import CRError
    from ..run import profiling
    from ..store.refs import parse_ref_words

    ref = str(parse_ref_words(ref))
    common = dict(samples=samples, warmup=warmup, batch_size=batch_size, threads=threads, timeout_s=timeout_s,
                  store=store, install=install)
    if diff is not None:
        data, error, _ = profiling.run(ref, backend, variants=diff, variant=variants[0] if len(variants) == 1 else (variants or None),
                                       compare=compare, options=backend_options(options), output=out, **common)
        _show_compare(data, top, as_json, what="VARIANT")
        if error is not None:
            raise error
        return
    if compare is not None:
        per_variant, per_options = {}, {}
        for v in variants:
            name, sep, value = v.partition("=")
            if not sep:
                raise CRError(f"--variant {v!r}: with --compare give BACKEND=VARIANT", hint="e.g. --variant torch=state-dict")
            per_variant[name] = value
        for o in options:
            name, sep, pair = o.partition(":")
            if not sep or "=" not in pair:
                raise CRError(f"-O {o!r}: with --compare give BACKEND:KEY=VALUE", hint="e.g. -O onnxruntime:graph_optimization_level=basic")
            per_options.setdefault(name, []).append(pair)
        data, error, _ = profiling.run(ref, backend, compare=compare, variant=per_variant,
                                       options={n: backend_options(tuple(p)) for n, p in per_options.items()},
                                       trace=trace, output=out, **common)
        _show_compare(data, top, as_json)
        if error is not None:
            raise error
        return
    if len(variants) > 1:
        raise CRError("--variant given more than once", hint="one variant per profile (BACKEND=VARIANT is for --compare)")
    record, error, not_stored = profiling.run(ref, backend, variant=variants[0] if variants else None, options=backend_options(options),
                                              trace=trace, lock=lock_file, output=out, **common)
    if as_json:
        output.emit_json(record)
    elif record["status"] == "ok":
        p = record["profile"]
        title = f"{record['components'][0]['ref']} on {record['backend']['name']}: layers by median time per query"
        if p.get("layers") or not p.get("untimed"):
            output.table(LAYER_COLUMNS, layer_rows(p, top), title=title, empty="no layer events")
        else:
            output.table(["OP (untimed)", "TYPE"], [r[:2] for r in layer_rows(p, top)],
                         title=f"{record['components'][0]['ref']} on {record['backend']['name']}: ops (no per-op timing)")
        output.table(["PROFILE", "VALUE"], summary_rows(record))
    if out:
        click.echo(f"result: {out}", err=True)

    def kept_files():
        error = record.get("error") or {}
        if record["status"] != "ok" and error.get("kept"):
            output.warn(f"the profile's work files are kept in {error['kept']}")

    def failed():
        if error is not None:
            raise error

    conclude(not_stored, kept_files, failed)


def _show_compare(result: dict, top: int, as_json: bool, what: str = "BACKEND") -> None:
    """The comparison's tables (or its JSON: result as cr.profile returns it)."""
    records, comparison = result["records"], result["comparison"]
    pinned = result.get("threads") or {}
    if as_json:
        output.emit_json(result)
    elif comparison is not None:
        s = comparison["summary"]
        untimed = s.get("untimed") or []
        model = records[0]["components"][0]["ref"]
        if "variants" in result:
            model = f"{model} on {s.get('backend')}" + "".join(
                f"; {v['label']} = {v['model_ref']} variant {v['variant'] or 'default'}" for v in result["variants"])
        if comparison["rows"]:
            columns, rows = compare_rows(comparison, top)
            output.table(columns, rows, title=f"{model}: layers matched across "
                                              f"{', '.join(n for n in s['backends'] if n not in untimed)} "
                                              "(median per query; largest difference first)")
        columns, rows = ops_rows(comparison, top)
        output.table(columns, rows, title=f"{model}: ops by op class on {', '.join(s['backends'])}"
                                          + (f" ({', '.join(untimed)}: no per-op timing, ops counted)" if untimed else ""))
        info = []
        for n in s["backends"]:
            ran = (pinned.get("ran") or {}).get(n)
            if n in untimed:
                text = f"{s['layers'][n]} ops listed, untimed ({(comparison.get('notes') or {}).get(n) or 'no per-op timing'})"
            else:
                cov = s["coverage"].get(n)
                text = (f"{s['layers'][n]} layers, {s['unmatched'].get(n, 0)} unmatched, coverage "
                        f"{'-' if cov is None else format(cov, '.3f')}")
            info.append([n, f"{text}; model p50 {_ms(s['model_ns'].get(n))} ms; threads {'-' if ran is None else ran}"])
        if pinned:
            info.append(["threads", f"{pinned['threads']} on every {what.lower()} (from {pinned['from']})"])
        if comparison["rows"]:
            info.append(["matched", f"{s['matched']} layers ({s['fused_rows']} with fused nodes)"])
        for n, rest in (comparison.get("unmatched") or {}).items():
            if rest:
                info.append([f"unmatched {n}", ", ".join(f"{u['name']} ({u['op']})" for u in rest[:8]) + (" ..." if len(rest) > 8 else "")])
        output.table([what, "PROFILE"], info)
