"""cr init solution, cr reproduce: a solution made ready here, and reproduced against its reference."""
from __future__ import annotations

import click

from . import output
from .options import BackendOption, trust_option, with_consent


def solution_rows(records: list[dict]) -> list[list]:
    """One summary row per result of a solution run (the columns of SOLUTION_HEADERS)."""
    from ..results.summary import config_label
    from .tables import ms, rate

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
        # 'single-stream threads=2 batch=1': the scenario tells the rows apart, the rest is detail
        scenario, _, config = (config_label(r) if m.get("scenario") else "").partition(" ")
        rows.append([
            r["action"], scenario, config, variant, ms(lat.get("p50") or None), ms(lat.get("p99") or None),
            rate(thr.get("samples_per_s") or None), accuracy,
            v.get("outcome") or m.get("validity") or "", r["status"] if r["status"] != "ok" else r["uid"],
        ])
    return rows


def _solution_columns():
    from .tables import Col

    # figures and verdicts are never dropped; the configuration and the variant give way first
    return [Col("ACTION"), Col("SCENARIO", shorten="abbrev", min=6), Col("CONFIG", keep=False, drop=0, shorten="abbrev"),
            Col("VARIANT", keep=False, drop=1, shorten="middle"), Col("P50 (ms)"), Col("P99 (ms)"),
            Col("THROUGHPUT (samples/s)"), Col("ACCURACY", shorten="wrap", min=6), Col("CHECK"),
            Col("RESULT", shorten="prefix", min=8)]


SOLUTION_HEADERS = _solution_columns()


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
        created = solution.new_solution(source, model, backend, dataset=dataset, variant=variant,
                                        backend_options=backend_options(options), version=version, repo=repo,
                                        scenario=scenarios)
        if as_json:
            output.emit_json(created)
        else:
            click.echo(f"created {created['created']} at {created['path']}")
            declared = ", ".join(a["action"] + (f" {a['params']['scenario']}" if a["params"].get("scenario") else "")
                                 for a in created["meta"]["actions"])
            click.echo(f"declared: {declared}")
            name = created["meta"]["name"]
            click.echo(f"next: cr init solution {name} && cr benchmark solution {name}")
        return
    report = with_consent(lambda trusted: solution.init(source, offline=offline, trust=trusted), trust, as_json)
    from .fastinit import show

    show(report, as_json)


@click.command()
@click.argument("source")
@click.option("--offline", is_flag=True, help="Install nothing that needs the network.")
@trust_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (report[\"lines\"]: the verdict per configuration).")
def reproduce(source, offline, trust, as_json):
    """Reproduce a solution: cr reproduce ARCHIVE|solution:NAME.

    Runs init, then every declared action, then gives each configuration a line: PASS,
    FAIL or INCONCLUSIVE, comparing the run here with the reference result of the same
    configuration the archive carries (or, without one, the solution's expectations).
    A line FAILS when its run failed, accuracy misses its tolerance, or the whole 95%
    interval of a performance ratio (here / reference) lies beyond a declared tolerance;
    it is INCONCLUSIVE when that interval straddles the tolerance's limit. Performance
    without a declared tolerance is shown, not judged.

    Exit status: 0 PASS (every line passes), 1 FAIL (a line fails, or bad input),
    2 INCONCLUSIVE (no line fails, one cannot be told from noise): as cr gate.
    """
    from ..run.reproduce import reproduce as run_reproduce
    from ..errors import CRError

    report = with_consent(lambda trusted: run_reproduce(source, offline=offline, trust=trusted), trust, as_json)
    clean = output.clean  # strings from an archive's records reach the terminal only escaped
    if as_json:
        output.emit_json(report)
    else:
        click.echo(clean(f"reproduction of {report['solution']}"))
        for line in reproduce_text(report):
            click.echo(clean(line))
        plats = report["platforms"]
        click.echo(clean(f"reference machine: {plats['reference'] or 'none (no reference results)'}"))
        click.echo(clean(f"this machine:      {plats['here']}"))
        click.echo(f"outcome: {report['outcome']}")
    if report.get("not_stored") and report["outcome"] != "FAIL":
        raise CRError(report["not_stored"]["message"], hint=report["not_stored"]["hint"])
    lines = report.get("lines") or []
    if report["outcome"] == "PASS":
        return
    bad = [f for f in report.get("failures") or [] if f["verdict"] == report["outcome"]]
    first = clean(f"{bad[0]['config']}: {bad[0]['rule']}") if bad else ""
    causes = [clean(c) for c in report["likely_causes"]]
    head = f"reproduction of {clean(report['solution'])}: {report['outcome']} ({len(bad)} of {len(lines)} configurations)"
    if report["outcome"] == "FAIL":
        raise CRError(head + (f": {first}" if first else "") + (f"; likely cause: {causes[0]}" if causes else ""),
                      hint="; ".join(causes[1:4]) or "compare the software versions and the pipeline (cr results compare) "
                                                    "with the reference")
    output.warn(head + (f": {first}" if first else ""))
    if causes:
        output.warn("likely causes: " + "; ".join(causes[:4]))
    raise SystemExit(2)


def _ratio_text(row: dict) -> str:
    if row.get("ratio") is None:
        return ""
    text = f"ratio {row['ratio']:.3f}"
    if row.get("ci"):
        text += f", 95% interval {row['ci'][0]:.3f} .. {row['ci'][1]:.3f}"
    return text


def _judgement_text(row: dict, has_reference: bool) -> str:
    """How the row was judged: each declared tolerance's verdict and limit, else the
    comparison the interval gives, marked not judged."""
    if row["judged"]:
        parts = []
        for j in row["judged"]:
            t = j["tolerance"]
            declared = ", ".join(x for x in (f"rel {t['rel']:g}" if t.get("rel") is not None else "",
                                            f"abs {t['abs']}" if t.get("abs") is not None else "",
                                            f"value {t['value']}" if t.get("value") is not None else "") if x)
            verdict = j["verdict"] or "not judged"
            limit = f", limit {j['bound']:.3f}" if j.get("bound") is not None else ""
            parts.append(f"{verdict} ({j['key']} declared {declared}{limit})")
        return "; ".join(parts)
    if not has_reference:
        return ""
    return (f"{row['comparison']}, " if row.get("comparison") else "") + "not judged: no tolerance declared"


def reproduce_text(report: dict) -> list[str]:
    """The lines of `cr reproduce`: per configuration its verdict, then each performance
    figure (reference and here in the tables' units, the ratio and its 95% interval, how it
    was judged), the accuracy checks, the rule that decided, likely causes and notes."""
    lines = report.get("lines") or []
    out = []
    if any(l.get("interval") for l in lines):
        i = next(l["interval"] for l in lines if l.get("interval"))
        out.append(f"intervals: {100 * i['confidence']:g}% of the ratio here / reference from both runs' raw samples "
                   f"({i['method']}, {i['resamples']} resamples, seed {i['seed']}; as cr results compare)")
    if lines:
        out.append(f"rule: {report.get('rule')}")
    for l in lines:
        ref = f" vs reference {l['reference_uid']}" if l.get("reference_uid") else ""
        here = f"here {l['here_uid']}" if l.get("here_uid") else "no run here"
        out.append(f"{l['verdict']:<12} {l['action']} {l['config']}  ({here}{ref})")
        for r in l["performance"]:
            figures = (f"here {r['here_text']}, reference {r['reference_text']}" if r.get("reference_text")
                       else f"here {r['here_text']}")
            cells = [f"    {r['label']:<12} {figures}", _ratio_text(r), _judgement_text(r, bool(l.get("reference_uid")))]
            out.append("  ".join(c for c in cells if c))
        for c in l["accuracy"]:
            if c.get("detail"):
                out.append(f"    {c['metric']:<12} FAIL  {c['detail']}")
                continue
            got = "?" if c.get("here") is None else f"{c['here']:.4f}"
            want = "" if c.get("reference") is None else f", {'reference' if c.get('reference_uid') else 'expected'} {c['reference']:.4f}"
            allowed = "" if c.get("allowed") is None else ("exact" if c["allowed"] == 0 else f"+- {c['allowed']:.4f}")
            basis = (c.get("tolerance") or {}).get("basis") or ""
            out.append(f"    {c['metric']:<12} here {got}{want}  {'ok' if c['ok'] else 'FAIL'} ({allowed}: {basis})")
        out.append(f"    rule: {l['rule']}")
        if l["verdict"] != "PASS" and l["likely_causes"]:
            out.append("    likely causes (most likely first; A is the reference, B the run here):")
            out += [f"      {n}. {c}" for n, c in enumerate(l["likely_causes"], 1)]
        elif l["verdict"] != "PASS" and l.get("reference_uid") and not l.get("error"):
            unchecked = any(n.startswith("no machine state") for n in l.get("notes") or [])
            out.append("    likely causes: none found in the two records (same platform, configuration and software"
                       + ("; machine state not checked: see the note)" if unchecked else ", no machine state that explains it)"))
        out += [f"    note: {n}" for n in l.get("notes") or []]
    out += [f"note: {n}" for n in report.get("notes") or []]
    return out
