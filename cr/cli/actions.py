"""cr benchmark (and, later, compile/run/validate): the unified actions."""
from __future__ import annotations

import json

import click

from . import output


def _backend_options(pairs: tuple[str, ...]) -> dict:
    """KEY=VALUE pairs; VALUE is JSON when it parses (8, true, ["cuda","cpu"]), else a string."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--option")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.4f} ms"


def _summary_rows(record: dict) -> list[list]:
    m = record["metrics"]
    lat = m["latency_ns"]
    rows = [
        ["scenario", m["scenario"]],
        ["validity", m["validity"] + ("" if not m["invalid_reasons"] else f" ({'; '.join(m['invalid_reasons'])})")],
        ["queries", m["queries"]],
        ["samples", f"{m['samples']} ({m['samples_per_query']} per query, batch {m['batch_size']})"],
        ["duration", f"{m['duration_s']:.3f} s"],
    ]
    rows += [[k, _ms(lat[k])] for k in ("min", "p50", "p90", "p95", "p99", "p99.9", "max", "mean", "stdev", "iqr")]
    rows += [
        ["throughput", f"{m['throughput']['queries_per_s']:.1f} queries/s, {m['throughput']['samples_per_s']:.1f} samples/s"],
        ["noise (IQR/p50)", f"{m['noise']:.3f}" + ("  NOISY" if m["noisy"] else "")],
    ]
    if m.get("server"):
        s = m["server"]
        rows.append(["server", f"target {s['target_qps']:g} q/s, achieved {s['achieved_qps']:.1f} q/s, p99 {s['p99_ms']:.3f} ms (bound {s['latency_bound_ms']:g} ms)"])
    if m.get("peak_rss_bytes"):
        rows.append(["peak RSS", f"{m['peak_rss_bytes'] / 2**20:.1f} MiB"])
    info = record["backend"].get("info") or {}
    details = [f"{info['framework']} {info['version']}"] if info.get("version") else []
    details += info.get("providers") or []
    rows.append(["backend", record["backend"]["name"] + (f" ({', '.join(details)})" if details else "")])
    return rows


@click.command()
@click.argument("ref", nargs=-1, required=True)
@click.option("--backend", help="Backend name (cr.backends entry point), e.g. onnxruntime or null.")
@click.option("--scenario", type=click.Choice(["single-stream", "multi-stream", "offline", "server"]))
@click.option("--min-duration", "min_duration_s", type=float, help="Minimum timed duration in seconds.")
@click.option("--min-queries", type=int, help="Minimum number of timed queries.")
@click.option("--warmup", "warmup_queries", type=int, help="Warm-up queries (not timed).")
@click.option("--batch-size", type=int, help="Samples per model call (default: the model's batch, else 1).")
@click.option("--samples-per-query", type=int, help="multi-stream: samples per query.")
@click.option("--threads", type=int, help="The backend's compute threads.")
@click.option("--target-qps", type=float, help="server: Poisson arrival rate (queries/s).")
@click.option("--latency-bound-ms", type=float, help="server: p99 bound in ms (default 100).")
@click.option("--seed", type=int, help="Seed of the synthetic inputs and the arrival process.")
@click.option("--timeout", "timeout_s", type=float, help="Stop the runtime and fail after this many seconds.")
@click.option("-O", "--option", "options", multiple=True, metavar="KEY=VALUE", help="Backend option (repeatable), e.g. -O graph_optimization_level=basic.")
@click.option("--lock", "lock_file", type=click.Path(exists=True, dir_okay=False), help="Run inside this lock's interpreter and environment.")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), help="Write the result record (JSON) here.")
@click.option("--json", "as_json", is_flag=True, help="Print the result record as JSON.")
def benchmark(ref, backend, options, lock_file, out, as_json, **params):
    """Benchmark a model or solution: cr benchmark model NAME[@SPEC] --backend onnxruntime.

    Runs in a separate process; the run lasts until both --min-duration and --min-queries
    are met. Defaults come from action:benchmark (cr show action:benchmark).
    """
    from ..errors import CRError
    from ..runtime.host import benchmark as run_benchmark
    from ..runtime.host.record import to_json
    from ..store.refs import parse_ref_words

    record = run_benchmark(
        str(parse_ref_words(ref)), backend=backend, params=params,
        backend_options=_backend_options(options), lock=lock_file, output=out,
    )
    if as_json:
        output.emit_json(to_json(record))
    elif record["status"] == "ok":
        output.table(["METRIC", "VALUE"], _summary_rows(record), title=f"{record['components'][0]['ref']} on {record['backend']['name']}")
    if out:
        click.echo(f"result: {out}", err=True)
    if record["status"] == "ok" and record["metrics"]["validity"] != "VALID":
        output.warn("INVALID run: " + "; ".join(record["metrics"]["invalid_reasons"]))
    if record["status"] != "ok":
        error = record.get("error") or {}
        raise CRError(error.get("message", "the benchmark failed"), hint=error.get("hint"))
