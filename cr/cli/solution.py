"""cr init solution, cr reproduce: a solution made ready here, and reproduced against its reference."""
from __future__ import annotations

import click

from . import output
from .options import BackendOption, trust_option, with_consent


def solution_rows(records: list[dict]) -> list[list]:
    """One summary row per result of a solution run."""
    from ..results.summary import config_label

    rows = []
    for r in records:
        m, v = r.get("metrics") or {}, r.get("validation") or {}
        lat, thr = m.get("latency_ns") or {}, m.get("throughput") or {}
        accuracy = next((f"{k} {v[k]:.4f}" for k in ("top1", "ap", "recall") if isinstance(v.get(k), (int, float))), "")
        pipe = r.get("pipeline") or {}
        # the variant with its precision (an fp32 and an int8 ONNX are both "onnx" otherwise)
        variant = pipe.get("variant") or ""
        if variant and pipe.get("precision") and pipe["precision"] not in variant:
            variant += f" ({pipe['precision']})"
        scenario = config_label(r) if m.get("scenario") else ""  # 'single-stream threads=2 batch=1'
        rows.append([
            r["action"], scenario, variant,
            f"{lat['p50'] / 1e6:.4f} ms" if lat.get("p50") else "", f"{lat['p99'] / 1e6:.4f} ms" if lat.get("p99") else "",
            f"{thr['samples_per_s']:.1f} samples/s" if thr.get("samples_per_s") else "", accuracy,
            v.get("outcome") or m.get("validity") or "", r["status"] if r["status"] != "ok" else r["uid"],
        ])
    return rows


SOLUTION_HEADERS = ["ACTION", "SCENARIO", "VARIANT", "P50", "P99", "THROUGHPUT", "ACCURACY", "CHECK", "RESULT"]


@click.command("init")
@click.argument("kind", type=click.Choice(["solution"]))
@click.argument("source")
@click.option("--model", "model", metavar="REF", help="Create a new solution NAME for this model (with --backend).")
@click.option("--dataset", metavar="REF", help="New solution: its dataset (default: the model's).")
@click.option("--backend", cls=BackendOption, help="New solution: the backend ({backends}).")
@click.option("--variant", help="New solution: the model variant to run.")
@click.option("-O", "--option", "options", multiple=True, metavar="KEY=VALUE", help="New solution: a backend option.")
@click.option("--scenario", "scenarios", type=click.Choice(["single-stream", "multi-stream", "offline", "server"]),
              multiple=True, default=("single-stream",), show_default=True,
              help="New solution: a benchmark scenario it declares (repeatable: one benchmark action each).")
@click.option("--version", "version", default="1.0.0", show_default=True, help="New solution: its version.")
@click.option("--repo", help="New solution: the repository to create it in (default: local).")
@click.option("--offline", is_flag=True, help="Install nothing that needs the network.")
@trust_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def init(kind, source, model, dataset, backend, variant, options, scenarios, version, repo, offline, trust, as_json):
    """Create a solution, or make one ready here: cr init solution NAME|ARCHIVE|GIT-URL.

    With --model and --backend, creates solution NAME in your local repo: a benchmark
    action per --scenario, a validate action when its dataset has labels, -O KEY=VALUE
    backend options (checked against the backend's). Otherwise it
    verifies the solution and its components, checks its platform constraints, resolves
    its software for this machine, installs what is missing, compiles what it declares
    and writes the lock. A second run is a fast no-op.
    """
    from ..run import solution
    from .options import backend_options

    if model or backend:
        if not (model and backend):
            raise click.UsageError("a new solution needs both --model and --backend")
        created = solution.create(source, model, backend, dataset=dataset, variant=variant,
                                  backend_options=backend_options(options), version=version, repo=repo, scenario=scenarios)
        if as_json:
            output.emit_json({"created": created["ref"], "path": created["meta_path"], "meta": created["meta"]})
        else:
            click.echo(f"created {created['ref']} at {created['meta_path']}")
            declared = ", ".join(a["action"] + (f" {a['params']['scenario']}" if a["params"].get("scenario") else "")
                                 for a in created["meta"]["actions"])
            click.echo(f"declared: {declared}")
            click.echo(f"next: cr init solution {created['name']} && cr benchmark solution {created['name']}")
        return
    report = with_consent(lambda trusted: solution.init(source, offline=offline, trust=trusted), trust, as_json)
    if as_json:
        output.emit_json(report)
        return
    rows = [[s["name"], s["version"], "installed now" if s["installed_now"] else s["origin"]] for s in report["software"]]
    output.table(["SOFTWARE", "VERSION", "ORIGIN"], rows, title=f"{report['solution']} is ready ({report['seconds']:.2f} s)")
    if report["archive"]:
        click.echo(f"unpacked {report['archive'].get('archive')} into {report['archive'].get('target')}")
    if report["compiled"]:
        c = report["compiled"]
        click.echo(f"compiled: {c['ref']}" + (" (now)" if c["created"] else " (already present)"))
    click.echo(f"lock: {report['lock']}")


@click.command()
@click.argument("source")
@click.option("--offline", is_flag=True, help="Install nothing that needs the network.")
@trust_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def reproduce(source, offline, trust, as_json):
    """Reproduce a solution: cr reproduce ARCHIVE|solution:NAME.

    Runs init, then every declared action, then compares each reference result the
    archive carries with the run here of the same configuration (or, without references,
    with the solution's expectations): accuracy must match within its tolerance;
    performance is shown beside the reference machine's (and judged only where the
    solution declares a tolerance). Exit 0 only when every run succeeded and everything
    that must match does: a benchmark-only solution passes when its runs succeed.
    """
    from ..run.reproduce import reproduce as run_reproduce
    from ..errors import CRError

    report = with_consent(lambda trusted: run_reproduce(source, offline=offline, trust=trusted), trust, as_json)
    clean = output.clean  # strings from an archive's records reach the terminal only escaped
    if as_json:
        output.emit_json(report)
    else:
        def number(x, digits=4):
            return "" if x is None else f"{x:.{digits}f}"

        def tolerance(c):
            if c.get("allowed") is None:
                return ""
            return "exact" if c["allowed"] == 0 else f"+- {c['allowed']:.4f}"

        click.echo(clean(f"reproduction of {report['solution']}"))
        rows = [[c["metric"], c.get("config") or "", number(c.get("reference")), number(c.get("here")), tolerance(c),
                 "ok" if c["ok"] else "FAIL", c.get("detail") or (c.get("tolerance") or {}).get("basis") or ""]
                for c in report["checks"]]
        if rows:
            output.table(["MUST MATCH", "CONFIG", "REFERENCE", "HERE", "TOLERANCE", "", "WHY"], rows)
        perf = []
        units = (("p50_ns", "p50"), ("p99_ns", "p99"), ("queries_per_s", "queries/s"), ("samples_per_s", "samples/s"))
        for p in report["performance"]:
            for key, label in units:
                cell = p.get(key)
                if not cell or (cell.get("reference") is None and cell.get("here") is None):
                    continue
                fmt = (lambda x: f"{x / 1e6:.4f} ms") if key.endswith("_ns") else (lambda x: f"{x:.1f} {label}")
                check = ""
                if cell.get("tolerance"):
                    t = cell["tolerance"]
                    bound = ", ".join(x for x in (t.get("rel") is not None and f"rel {t['rel']}", t.get("abs") is not None
                                                  and f"abs {t['abs']}") if x)
                    check = {True: "ok", False: "FAIL", None: "not judged"}[cell.get("ok")] + f" (declared {bound})"
                perf.append([p.get("config") or p.get("scenario") or "", label,
                             "" if cell["reference"] is None else fmt(cell["reference"]),
                             "" if cell["here"] is None else fmt(cell["here"]),
                             "" if cell["ratio"] is None else f"{cell['ratio']:.2f}x", check])
        if perf:
            output.table(["PERFORMANCE (expected to differ)", "METRIC", "REFERENCE", "HERE", "RATIO", "CHECK"], perf)
        from .trust import reproduce_lines

        for line in reproduce_lines(report):
            click.echo(line)
        for note in report.get("notes") or []:
            click.echo(clean(f"note: {note}"))
        for f in report["failed_runs"]:
            click.echo(clean(f"failed: {f['action']} {f.get('config') or ''} ({f.get('uid')}): {f['error']}"))
        plats = report["platforms"]
        click.echo(clean(f"reference machine: {plats['reference'] or 'none (no reference results)'}"))
        click.echo(clean(f"this machine:      {plats['here']}"))
        click.echo(f"outcome: {report['outcome']}")
    if report.get("not_stored") and report["outcome"] == "PASS":
        raise CRError(report["not_stored"]["message"], hint=report["not_stored"]["hint"])
    if report["outcome"] != "PASS":
        causes = [clean(c) for c in report["likely_causes"]
                  + [f"{f['action']} {f.get('config') or ''} failed: {f['error']}" for f in report["failed_runs"]]]
        raise CRError(f"reproduction of {clean(report['solution'])}: {report['outcome']}"
                      + (f"; likely cause: {causes[0]}" if causes else ""),
                      hint="; ".join(causes[1:4]) or "compare the software versions and the pipeline (cr results compare) with the reference")
