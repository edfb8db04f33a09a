"""cr tune: which stack to ship here (runtime x precision x threads x batch), by a budgeted search."""
from __future__ import annotations

import click

from . import output


def _csv(value: str | None, cast=str) -> list | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    try:
        return [cast(v) for v in items]
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected a comma-separated list of integers") from None


def _fmt(obj: dict, v: dict | None) -> str:
    if v is None:
        return "-"
    unit, x, lo, hi = obj["unit"], v["value"], v["lo"], v["hi"]
    if unit == "ns":
        return f"{x / 1e6:.4g} ms [{lo / 1e6:.4g}, {hi / 1e6:.4g}]"
    if unit == "bytes":
        return f"{x / 2**20:.1f} MiB"
    if unit == "samples/s":
        return f"{x:,.0f}/s [{lo:,.0f}, {hi:,.0f}]"
    if obj["name"] in ("top1", "top5", "map"):
        return f"{x:.4f} [{lo:.4f}, {hi:.4f}]"
    return f"{x:.4g} {unit} [{lo:.4g}, {hi:.4g}]"


def show(result: dict) -> None:
    objs = result["objectives"]
    order = {"front": 0, "tied": 1, "dominated": 2, "infeasible": 3, "failed": 4}
    rows = []
    for p in sorted(result["points"], key=lambda p: (order.get(p["status"], 5), p["trial"])):
        c = p["config"]
        note = (", ".join(p.get("tied_with") or []) and f"tied with {', '.join(p['tied_with'])}") \
            or (p.get("dominated_by") and f"by {p['dominated_by']}") or "; ".join(p.get("missed") or []) or p.get("error") or ""
        rows.append([p["trial"], c["backend"], c["variant"], c["precision"], c["threads"], c["batch_size"],
                     *[_fmt(o, p["values"].get(o["name"])) for o in objs], p["status"], note])
    study = result["study"]
    output.table(["TRIAL", "BACKEND", "VARIANT", "PRECISION", "THREADS", "BATCH", *[o["label"] for o in objs], "STATUS", ""],
                 rows, title=f"tune {study['name']}: {result['model']} ({result['trials']['measured']} of "
                             f"{result['configurations']} configurations measured, {result['device_s']:.1f} s of device time)")
    for u in result.get("unavailable") or []:
        output.warn(f"not searched: {u['backend']} at {u['precision']}: {u['reason']}")
    for c in result["constraints"]:
        bound = "" if c["bound"] is None else f" (bound {c['bound']:.4f})"
        output.echo(f"constraint: {c['text']}{bound}")
    if result.get("frontier_rule"):
        output.echo(f"frontier rule: {result['frontier_rule']} (95% intervals in brackets)")
    rec = result.get("recommendation")
    if rec is None:
        output.echo("recommendation: none (no configuration succeeded and met the constraints)")
    else:
        c = rec["config"]
        figures = ", ".join(f"{o['label']} {_fmt(o, rec['values'].get(o['name']))}" for o in objs)
        output.echo(f"recommendation: {c['backend']} {c['variant']} ({c['precision']}), threads {c['threads']}, "
                    f"batch {c['batch_size']}: {figures}")
        output.echo(f"  rule: {rec['rule']}")
    v = result.get("verify")
    if v:
        if v.get("error"):
            output.echo(f"verify: {v['error']}")
        else:
            hv, r, d = v["hypervolume"], v["recall"], v["device_s"]
            output.echo(f"verify against the full grid ({v['grid']['configurations']} configurations, study {v['grid']['study']}):")
            output.echo(f"  hypervolume ratio {hv['ratio']:.3f} (found {hv['found']:.4g} / exhaustive {hv['exhaustive']:.4g})")
            output.echo(f"  frontier recall {r['recall']:.2f} ({r['matched']} of {r['of']} grid front points found or tied"
                        + (f"; missed: {', '.join(r['missed'])}" if r["missed"] else "") + ")")
            output.echo(f"  device time: tune {d['tune']:.1f} s, exhaustive {d['exhaustive']:.1f} s (ratio {d['ratio']:.2f})")
            output.echo(f"  rule: {v['rule']}")
    if result.get("solution"):
        s = result["solution"]
        output.echo(f"saved the pick as {s['ref']} (lock {s['lock']}); run it with: cr benchmark {s['ref']}")


@click.command()
@click.argument("ref", nargs=-1, required=True)
@click.option("--objective", "objectives", metavar="A,B", help="Objectives (default p50,throughput): p50, p90, p99, "
              "throughput, memory, energy, top1, top5, map.")
@click.option("--constraint", "constraints", multiple=True, metavar="EXPR",
              help="A bound every pick must meet, e.g. 'top1>=ref-0.01' (the model's fp32 variant's top-1 minus "
                   "1 point) or 'top1>=0.95' (repeatable).")
@click.option("--backends", metavar="A,B", help="Backends to search (default: every registered one that loads a variant).")
@click.option("--precision", "precisions", metavar="P,Q", help="Precisions to search (default: every variant's).")
@click.option("--threads", metavar="N,M", help="Thread counts to search (default 1).")
@click.option("--batch", "batches", metavar="N,M", help="Batch sizes to search (default 1).")
@click.option("--exclude", "excludes", multiple=True, metavar="KEY=V[,KEY=V]",
              help="Leave out configurations matching all of these (backend, variant, precision, threads, batch); repeatable.")
@click.option("--budget", type=int, help="Configurations to measure in all (default: a quarter of the space, at least 3).")
@click.option("--name", help="The study's name (default: the model's name); `cr tune` again with it continues.")
@click.option("--seed", type=int, default=0, show_default=True, help="The sampler's seed.")
@click.option("--sampler", type=click.Choice(["tpe", "nsga2", "random"]), default="tpe", show_default=True)
@click.option("--screen/--no-screen", "screen_stacks", default=True, show_default=True,
              help="Start with one trial per stack (fewest threads, middle batch) before the sampler's own.")
@click.option("--refine/--no-refine", "refine", default=True, show_default=True,
              help="Measure the current front's unmeasured neighbours (one thread or batch step) before asking the sampler.")
@click.option("--min-duration", "min_duration_s", type=float, default=1.0, show_default=True,
              help="Seconds each trial's benchmark runs (after warm-up).")
@click.option("--trial-timeout", "trial_timeout_s", type=float, default=300.0, show_default=True,
              help="A trial's run is stopped (and failed) after this long; set-up and compiles are not counted.")
@click.option("--verify", is_flag=True, help="Also run the full grid and report the gap (hypervolume ratio, frontier recall, device time).")
@click.option("--save-solution", metavar="NAME", help="Save the recommendation as a locked solution component.")
@click.option("--install", is_flag=True, help="Install what each stack needs and is missing here first.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def tune(ref, objectives, constraints, backends, precisions, threads, batches, excludes, budget, name, seed, sampler,
         screen_stacks, refine, min_duration_s, trial_timeout_s, verify, save_solution, install, as_json):
    """Find the stack to ship here: cr tune model:lenet-digits --threads 1,2 --batch 1,8,32 --constraint 'top1>=ref-0.01'.

    A budgeted multi-objective search (Optuna's TPE sampler) over backend x precision (the
    model's variants each backend loads) x threads x batch size, on this machine only. Each
    trial is an ordinary benchmark run (stored, tagged with the study) in its backend's own
    environment; each stack is validated once for accuracy. The study lives in
    CR_HOME/tune/NAME.db: after Ctrl-C or a kill, the same command continues it. Prints the
    Pareto set with 95% intervals (points within noise are tied, not dominated) and the
    recommendation with its rule (docs/tune.md).
    """
    from ..store.refs import parse_ref_words
    from ..tune import tune as run_tune

    ref = str(parse_ref_words(ref))
    try:
        result = run_tune(ref, objectives=_csv(objectives), constraints=list(constraints), backends=_csv(backends),
                          precisions=_csv(precisions), threads=_csv(threads, int), batch_sizes=_csv(batches, int),
                          exclude=list(excludes), budget=budget, name=name, seed=seed, sampler=sampler,
                          min_duration_s=min_duration_s, trial_timeout_s=trial_timeout_s, install=install,
                          verify=verify, save_solution=save_solution, screen_stacks=screen_stacks,
                          refine=refine)
    except KeyboardInterrupt:
        output.echo("interrupted: the trials measured so far are kept; the same command continues the study", err=True)
        raise SystemExit(130) from None
    if as_json:
        output.emit_json(result)
    else:
        show(result)
