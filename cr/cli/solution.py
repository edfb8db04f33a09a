"""cr init solution, cr reproduce: a solution made ready here, and reproduced against its reference."""
from __future__ import annotations

import click

from . import output
from .options import BackendOption, trust_option, with_consent


def solution_rows(records: list[dict]) -> list[list]:
    """One summary row per result of a solution run."""
    rows = []
    for r in records:
        m, v = r.get("metrics") or {}, r.get("validation") or {}
        lat, thr = m.get("latency_ns") or {}, m.get("throughput") or {}
        accuracy = next((f"{k} {v[k]:.4f}" for k in ("top1", "recall") if isinstance(v.get(k), (int, float))), "")
        rows.append([
            r["action"], m.get("scenario") or "", (r.get("pipeline") or {}).get("variant") or "",
            f"{lat['p50'] / 1e6:.4f} ms" if lat.get("p50") else "", f"{lat['p99'] / 1e6:.4f} ms" if lat.get("p99") else "",
            f"{thr['samples_per_s']:.1f}/s" if thr.get("samples_per_s") else "", accuracy,
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
@click.option("--scenario", type=click.Choice(["single-stream", "multi-stream", "offline", "server"]), default="single-stream",
              show_default=True, help="New solution: the benchmark scenario it declares.")
@click.option("--version", "version", default="1.0.0", show_default=True, help="New solution: its version.")
@click.option("--repo", help="New solution: the repository to create it in (default: local).")
@click.option("--offline", is_flag=True, help="Install nothing that needs the network.")
@trust_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def init(kind, source, model, dataset, backend, variant, options, scenario, version, repo, offline, trust, as_json):
    """Create a solution, or make one ready here: cr init solution NAME|ARCHIVE|GIT-URL.

    With --model and --backend, creates solution NAME in your local repo. Otherwise it
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
                                  backend_options=backend_options(options), version=version, repo=repo, scenario=scenario)
        if as_json:
            output.emit_json({"created": created["ref"], "path": created["meta_path"], "meta": created["meta"]})
        else:
            click.echo(f"created {created['ref']} at {created['meta_path']}")
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

    Runs init, then every declared action, then compares with the reference results the
    archive carries (or the solution's expectations): accuracy must match within its
    tolerance; performance is shown beside the reference machine's. Exit 0 only when
    everything that must match does.
    """
    from ..run.reproduce import reproduce as run_reproduce
    from ..errors import CRError

    report = with_consent(lambda trusted: run_reproduce(source, offline=offline, trust=trusted), trust, as_json)
    if as_json:
        output.emit_json(report)
    else:
        rows = [[c["metric"], "" if c.get("reference") is None else f"{c['reference']:.4f}",
                 "" if c.get("here") is None else f"{c['here']:.4f}", f"+- {c.get('allowed', 0):.4f}",
                 "ok" if c["ok"] else "FAIL"] for c in report["checks"]]
        output.table(["MUST MATCH", "REFERENCE", "HERE", "TOLERANCE", ""], rows, title=f"reproduction of {report['solution']}")
        perf = []
        for p in report["performance"]:
            for key, label in (("p50_ns", "p50"), ("p99_ns", "p99"), ("queries_per_s", "queries/s")):
                cell = p.get(key)
                if not cell:
                    continue
                fmt = (lambda x: f"{x / 1e6:.4f} ms") if key.endswith("_ns") else (lambda x: f"{x:.1f}")
                perf.append([f"{p['scenario']} {label}", "" if cell["reference"] is None else fmt(cell["reference"]),
                             "" if cell["here"] is None else fmt(cell["here"]),
                             "" if cell["ratio"] is None else f"{cell['ratio']:.2f}x"])
        if perf:
            output.table(["PERFORMANCE (expected to differ)", "REFERENCE", "HERE", "RATIO"], perf)
        plats = report["platforms"]
        click.echo(f"reference machine: {plats['reference'] or 'none (checked against the declared expectations)'}")
        click.echo(f"this machine:      {plats['here']}")
        click.echo(f"outcome: {report['outcome']}")
    if report.get("not_stored") and report["outcome"] == "PASS":
        raise CRError(report["not_stored"]["message"], hint=report["not_stored"]["hint"])
    if report["outcome"] != "PASS":
        causes = report["likely_causes"] + [f"{f['action']} failed: {f['error']}" for f in report["failed_runs"]]
        raise CRError(f"reproduction of {report['solution']}: {report['outcome']}"
                      + (f"; likely cause: {causes[0]}" if causes else ""),
                      hint="; ".join(causes[1:4]) or "compare the software versions and the pipeline (cr results compare) with the reference")
