"""cr campaign new|show|run|status, cr scheduler, cr worker: campaigns over this machine or a cr cluster."""
from __future__ import annotations

import sys
import time

import click

from . import output


def _tls_options(f):
    for opt in reversed([
        click.option("--tls-ca-file", type=click.Path(dir_okay=False), help="TLS: the CA certificate (PEM) both sides trust."),
        click.option("--tls-cert", type=click.Path(dir_okay=False), help="TLS: this side's certificate (PEM)."),
        click.option("--tls-key", type=click.Path(dir_okay=False), help="TLS: this side's private key (PEM)."),
    ]):
        f = opt(f)
    return f


def _insecure_option(f):
    return click.option("--insecure-no-tls", "insecure", is_flag=True,
                        help="Allow a cluster off loopback without TLS: anyone who can reach the port can join as a "
                             "worker (getting every job's archive, returning false results) or submit jobs, and "
                             "read or change what crosses.")(f)


def _security(ca, cert, key):
    from ..campaign.link import security

    return security(ca, cert, key)


@click.group()
def campaign() -> None:
    """Campaigns: solutions x a matrix of settings x platforms (docs/campaigns.md)."""


@campaign.command("new")
@click.argument("name")
@click.option("--solution", "solutions", multiple=True, metavar="REF", help="A solution to sweep (repeatable).")
@click.option("--version", default="0.1.0", show_default=True, help="PEP 440 version.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def new(name, solutions, version, as_json):
    """Create campaign NAME in your local repo (the same as cr new campaign NAME, with --solution)."""
    from ..store.authoring import new as create

    fields = {"solutions": list(solutions)} if solutions else None
    comp = create("campaign", name, version=version, fields=fields)
    if as_json:
        output.emit_json(comp.to_dict())
    else:
        click.echo(f"created {comp.ref}: {comp.meta_path}")
        click.echo("edit its solutions, matrix and platforms, then: cr campaign show " + name + " --jobs", err=True)


def _job_rows(jobs) -> list[list]:
    return [[j.id, j.solution, j.platform, j.setting, j.repetition] for j in jobs]


@campaign.command()
@click.argument("name")
@click.option("--jobs", "with_jobs", is_flag=True, help="List the expanded jobs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show(name, with_jobs, as_json):
    """Show campaign NAME: its meta and (with --jobs) the job table it expands to."""
    from ..campaign import spec
    from ..campaign.calls import campaign_show

    if as_json:
        output.emit_json(campaign_show(name, jobs=with_jobs))
        return
    c = spec.load(name)
    jobs = spec.expand(c)
    click.echo(f"{c.ref}  uid {c.uid}  {c.meta_path}")
    sols = sorted({j.solution for j in jobs})
    click.echo(f"{len(jobs)} job(s): {len(sols)} solution(s) x {len({j.setting for j in jobs})} setting(s) x "
               f"{len({j.platform for j in jobs})} platform target(s) x {c.meta.get('repeat') or 1} repetition(s)")
    if with_jobs:
        output.table(["JOB", "SOLUTION", "PLATFORM", "SETTING", "REP"], _job_rows(jobs))


def _ms(ns) -> str:
    return "" if ns is None else f"{ns / 1e6:.4f}"


def _cell(value) -> str:
    import json

    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, separators=(",", ":")) if isinstance(value, (dict, list)) else str(value)


def _summary(rows: list[dict], title: str, status_view: bool = False) -> None:
    """One row per job (cr.campaign.jobs.joined): the varied keys as columns, its state, p50,
    throughput, top-1 and the validation's PASS/FAIL against the expectations (a FAIL fails
    the job); SIGNIFICANCE appears once a study report fills it (a paired test of each job's
    accuracy against the baseline job's)."""
    from ..campaign.jobs import varied_keys
    from ..results.summary import field_name

    keys = varied_keys(rows)
    significance = any(r.get("significance") is not None for r in rows)
    table = []
    for r in rows:
        line = [r["solution"].split(":", 1)[-1], r["platform"], *[_cell((r.get("varied") or {}).get(k)) for k in keys]]
        if status_view:
            line.insert(0, r["job"])
        line += [str(r.get("repetition") or ""), r["state"] + (" (earlier)" if r.get("earlier") else ""),
                 r.get("validation") or "", r.get("worker") or "", _ms(r.get("p50_ns")),
                 "" if r.get("samples_per_s") is None else f"{r['samples_per_s']:.1f}",
                 "" if r.get("top1") is None else f"{r['top1']:.4f}"]
        if significance:
            line.append(_significance_cell(r.get("significance")))
        if status_view:
            line.append(str(r.get("attempts") or 0))
        line += [", ".join(r.get("results") or [])[:35], (r.get("error") or r.get("reason") or "")[:200]]
        table.append(line)
    from .tables import Col

    # the configuration that tells jobs apart, their state, figures and verdicts are kept; the
    # platform, worker, attempts and result uids give way (docs/output.md)
    headers = [Col("SOLUTION", shorten="middle", min=12), Col("PLATFORM", keep=False, drop=2, shorten="middle", min=12),
               *[Col(field_name(k).upper(), shorten="abbrev") for k in keys], Col("REP"), Col("STATUS", shorten="wrap"),
               Col("VALIDATION"), Col("WORKER", keep=False, drop=1, shorten="middle"), Col("P50 (ms)"),
               Col("THROUGHPUT (samples/s)"), Col("TOP1"), *([Col("SIGNIFICANCE", shorten="wrap", min=12)] if significance else []),
               *([Col("ATTEMPTS", keep=False, drop=3)] if status_view else []),
               Col("RESULTS", keep=False, drop=0, shorten="end"), Col("WHY", shorten="wrap", min=12)]
    if status_view:
        headers.insert(0, Col("JOB", shorten="prefix", min=8))
    output.table(headers, table, title=title, empty="no job")
    rule = next((r["significance"]["rule"] for r in rows if (r.get("significance") or {}).get("rule")), None)
    if rule:
        base = next(r["significance"]["baseline"] for r in rows if (r.get("significance") or {}).get("rule"))
        output.echo(f"SIGNIFICANCE: each job's top-1 against job {base} (baseline), on the same samples; {rule}")
    from ..campaign.jobs import sustained_lines

    for line in sustained_lines(rows):  # a campaign with a sustained phase: cold vs sustained rankings
        output.echo(output.clean(line))


def _significance_cell(s: dict | None) -> str:
    """'+0.0125 significant (p 0.031)', 'baseline', 'not paired' or ''."""
    if not s:
        return ""
    if "delta" not in s:
        return s.get("verdict") or ""
    return f"{s['delta']:+.4f} {s['verdict']} (p {s['mcnemar_p']:.3g})"


class _Progress:
    """The live progress line on a terminal (rewritten in place), else one line per job."""

    def __init__(self, run_ref, quiet: bool):
        self.tty = sys.stderr.isatty()
        self.quiet = quiet
        self.run = run_ref
        self._at = 0.0
        self.said = ""  # the latest event of a worker

    def __call__(self, kind, job, info) -> None:
        if self.quiet or self.run.get("run") is None:
            return
        line = self.run["run"].progress.line()
        if kind == "event":  # what a worker says it is doing (cr.campaign.worker.Forward)
            said = output.clean(f"{info.get('worker') or '?'}: {info.get('text')}")
            if not self.tty:
                click.echo(f"{said}  [job {job.id}]", err=True)
                return
            self.said = said
        if self.said and self.tty:
            import shutil

            width = shutil.get_terminal_size((100, 24)).columns - 1
            line = f"{line} | {self.said}"[:width]
        if kind in ("done", "failed", "unplaceable", "skipped", "retry") and not self.tty:
            what = info.get("reason") or (info.get("error") or {}).get("message") if isinstance(info.get("error"), dict) else info.get("reason") or info.get("error")
            click.echo(f"{kind}: {job.solution.split(':', 1)[-1]} on {job.platform} [{job.setting}]"
                       + (f" ({info.get('worker')})" if info.get("worker") else "") + (f": {what}" if what else "") + f"  | {line}", err=True)
        elif self.tty and (time.monotonic() - self._at > 0.1 or kind != "started"):
            self._at = time.monotonic()
            from ..events import reporter

            rep = reporter()
            if callable(getattr(rep, "status", None)):
                # the CLI's live line: the campaign's counts first, then the phase of the job running
                # here (the local executor), so the two share one line instead of overwriting each other
                self._via, self._last = rep, line
                rep.status(line)
                return
            click.echo("\r" + line + "\x1b[K", err=True, nl=False)
            self._drawn = True

    _via = None
    _last = ""
    _drawn = False

    def end(self) -> None:
        if self._via is not None:
            self._via.status(None)
            click.echo(self._last, err=True)  # the campaign's last counts stay on the terminal
        elif self.tty and not self.quiet and self._drawn:
            click.echo("", err=True)


class ExecutorName(click.ParamType):
    """A registered executor's name (the cr.executors entry points, read when one is given)."""

    name = "executor"

    def get_metavar(self, param, ctx=None) -> str:
        return "NAME"

    def convert(self, value, param, ctx):
        from ..campaign import executors

        names = executors.available()
        if value not in names:
            self.fail(f"{value!r} is not a registered executor (registered: {', '.join(names) or 'none'}; "
                      f"a distribution adds one under the entry-point group {executors.GROUP})", param, ctx)
        return value

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem

        from ..campaign import executors

        return [CompletionItem(n) for n in executors.available() if n.startswith(incomplete)]


class ExecutorHelp(click.Option):
    """An option whose help lists the registered executors ({executors}) or their options
    ({executor_options}), read only when the help is shown."""

    def get_help_record(self, ctx):
        if self.help and "{executor" in self.help:
            from ..campaign import executors

            try:
                listed = executors.describe()
                names = "; ".join(f"{n}: {summary}" for n, summary, _ in listed) or "none registered"
                opts = "; ".join(f"{n}: {', '.join(o) if o else 'none' if o is not None else '?'}" for n, _, o in listed)
            except Exception:  # a broken entry point must not break --help
                names = opts = f"see the {executors.GROUP} entry points"
            self.help = self.help.replace("{executors}", names).replace("{executor_options}", opts)
        return super().get_help_record(ctx)


def _pairs(pairs: tuple[str, ...]) -> dict:
    """NAME=VALUE pairs of -E, VALUE as text (the executor's Option converts it)."""
    from .options import key_values

    try:
        return key_values(pairs, parse_json=False)
    except ValueError as exc:
        raise click.BadParameter(f"{exc.args[0]!r} is not NAME=VALUE", param_hint="--executor-option") from None


# today's flags, each the dask executor's option of the same name (-E NAME=VALUE reaches any executor's)
_FLAGS = ("scheduler", "retries", "wait_for_workers", "timeout", "connect_timeout", "tls_ca_file", "tls_cert", "tls_key",
          "insecure_no_tls", "partition", "time")


@campaign.command()
@click.argument("name")
@click.option("--executor", type=ExecutorName(), cls=ExecutorHelp,
              help="Where the jobs run (default: local, or dask with --scheduler): {executors}.")
@click.option("-E", "--executor-option", "executor_options", multiple=True, metavar="NAME=VALUE", cls=ExecutorHelp,
              help="An option of the executor (repeatable): {executor_options}.")
@click.option("--scheduler", "scheduler", metavar="ADDR", help="The cluster's scheduler (tcp://HOST:PORT or tls://...); implies --executor dask.")
@click.option("--dry-run", is_flag=True, help="List what would run (and what is already done), run nothing.")
@click.option("--rerun", is_flag=True, help="Run every job again, even those whose result is stored.")
@click.option("--retries", type=click.IntRange(0, 100), help="dask, slurm: runs of a job again after its worker left mid-job  [default: 2]")
@click.option("--wait-for-workers", type=click.IntRange(0), help="dask: wait until this many cr workers joined  [default: 0]")
@click.option("--timeout", type=float, help="dask: seconds to wait for --wait-for-workers  [default: 60.0]; slurm: for the worker jobs to join  [default: 300.0]")
@click.option("--connect-timeout", type=float, help="dask: seconds to wait for the scheduler to answer  [default: 10.0]")
@click.option("--partition", metavar="P", help="slurm: the Slurm partition of the worker jobs  [default: the cluster's default]")
@click.option("--time", "time_limit", metavar="T", help="slurm: each worker job's time limit (10:00, 1-00:00:00)")
@_tls_options
@_insecure_option
@click.option("--install", is_flag=True, help="Install the software a job's own stack (backend, variant, precision) "
              "lacks; without it such a job fails naming what is missing.")
@click.option("--json", "as_json", is_flag=True, help="Print the per-job summary as JSON.")
@click.pass_context
def run(ctx, name, executor, executor_options, scheduler, dry_run, rerun, retries, wait_for_workers, timeout,
        connect_timeout, partition, time_limit, tls_ca_file, tls_cert, tls_key, insecure, install, as_json):
    """Run campaign NAME's jobs; a rerun skips the jobs whose result is stored. Exit 1 if any
    job failed (a validation that FAILs its expectations fails its job).

    The executor's options come from -E NAME=VALUE, and for the dask executor from its
    flags (--scheduler, --retries, ...): docs/campaigns.md."""
    from ..campaign.calls import campaign_run, failure
    from ..campaign.runner import executor_name

    options = _pairs(executor_options)
    flags = dict(zip(_FLAGS, (scheduler, retries, wait_for_workers, timeout, connect_timeout, tls_ca_file, tls_cert, tls_key,
                              insecure or None, partition, time_limit)))
    options.update({k: v for k, v in flags.items() if v is not None})
    if install:
        options["install"] = True
    holder: dict = {"run": None}
    quiet = (ctx.find_root().params or {}).get("quiet") or as_json
    progress = _Progress(holder, quiet)

    def started(the_run, chosen) -> None:
        holder["run"] = the_run
        if not quiet:
            where = chosen.where() if callable(getattr(chosen, "where", None)) else f"the {executor_name(executor, options)} executor"
            click.echo(f"{the_run.campaign.ref}: {len(the_run.todo)} job(s) to run, {the_run.progress.already} already done"
                       f" (on {where})", err=True)

    try:
        rows = campaign_run(name, executor=executor, options=options, rerun=rerun, dry_run=dry_run, listener=progress,
                            on_start=started)
    except KeyboardInterrupt:
        progress.end()
        the_run = holder["run"]
        click.echo(f"Interrupted: {the_run.progress.line() if the_run else 'nothing ran'}; cr campaign run {name} resumes.",
                   err=True)
        raise SystemExit(130)
    if dry_run:
        if as_json:
            output.emit_json(rows)
        else:
            output.table(["JOB", "SOLUTION", "PLATFORM", "SETTING", "REP", "STATE"],
                         [[r["id"], r["solution"], r["platform"], r["setting"], r["repetition"], r["state"]] for r in rows])
            click.echo(f"{sum(r['state'] == 'to run' for r in rows)} of {len(rows)} job(s) would run", err=True)
        return
    progress.end()
    the_run = holder["run"]
    ref = the_run.campaign.ref
    if as_json:
        output.emit_json(rows)
    else:
        _summary(rows, f"{ref}: {the_run.progress.line()}")
    failed = failure(rows, ref, name)
    if failed is not None:
        raise failed


@campaign.command()
@click.argument("name")
@click.option("--watch", is_flag=True, help="Show it again every 2 s until every job is final (Ctrl-C stops).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(name, watch, as_json):
    """Per job: the varied keys, state, validation PASS/FAIL, p50, throughput, top-1, attempts,
    worker, result uids or the error."""
    from ..campaign.calls import campaign_report

    while True:
        rows = campaign_report(name)
        if as_json:
            output.emit_json(rows)
        else:
            _summary(rows, f"campaign {name}", status_view=True)
        if not watch or all(r["state"] in ("done", "failed", "unplaceable", "skipped") for r in rows):
            return
        time.sleep(2)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on (0.0.0.0: every one).")
@click.option("--port", type=click.IntRange(0, 65535), default=8786, show_default=True, help="Port (0: any free one).")
@_tls_options
@_insecure_option
def scheduler(host, port, tls_ca_file, tls_cert, tls_key, insecure):
    """Start the scheduler of a campaign cluster (prints its address; Ctrl-C stops it).

    It listens on --host only (127.0.0.1 by default); off loopback it needs TLS
    (or --insecure-no-tls). docs/security.md says what each party can do."""
    from ..campaign.cluster import serve_scheduler

    sec = _security(tls_ca_file, tls_cert, tls_key)

    def ready(addr):
        click.echo(f"scheduler at {addr}", err=False)
        sys.stdout.flush()

    try:
        serve_scheduler(host, port, sec, on_ready=ready, insecure=insecure)
    except KeyboardInterrupt:
        click.echo("scheduler stopped", err=True)


@click.command()
@click.option("--scheduler", "scheduler_addr", required=True, metavar="ADDR", help="The scheduler's address (cr scheduler prints it).")
@click.option("--name", help="This worker's name (default: the host name; HOST-2, HOST-3... when taken).")
@click.option("--cr-home", type=click.Path(file_okay=False), help="The CR_HOME jobs run in (default: CR_HOME).")
@click.option("--platform-root", type=click.Path(file_okay=False), help="Advertise the machine captured in this directory (cr platform --capture).")
@click.option("--trust", is_flag=True, help="Let archives' install scripts and probes run without asking (only for a coordinator you trust).")
@_tls_options
@_insecure_option
def worker(scheduler_addr, name, cr_home, platform_root, trust, tls_ca_file, tls_cert, tls_key, insecure):
    """Start a worker that runs campaign jobs and advertises its platform as resources.

    It listens on no port: it connects to the scheduler and runs cr's job function only.
    A scheduler off loopback needs TLS (or --insecure-no-tls)."""
    import os
    import socket

    if cr_home:
        os.environ["CR_HOME"] = os.path.abspath(cr_home)
    from ..campaign.cluster import address, serve_worker
    from ..platform import current, detect

    sec = _security(tls_ca_file, tls_cert, tls_key)
    addr = address(scheduler_addr, sec)
    plat = detect(root=platform_root) if platform_root else current()
    unique = not name
    name = name or socket.gethostname()

    joined = {"name": name}

    def log(line: str) -> None:  # one line per job (start; end with status and duration): the worker's log
        click.echo(f"{time.strftime('%H:%M:%S')} worker {joined['name']}: {output.clean(line)}")
        sys.stdout.flush()

    def ready(where, res, name):
        joined["name"] = name
        labels = ", ".join(f"{k}={int(v)}" for k, v in res.items() if k in ("benchmark", "gpu"))
        caps = ", ".join(k for k in res if k not in ("benchmark", "gpu"))
        click.echo(f"worker {name} joined {where} (listening nowhere): {labels}; capabilities {caps}")
        sys.stdout.flush()

    try:
        serve_worker(addr, name, plat, sec, on_ready=ready, trust=trust, insecure=insecure, unique=unique, log=log)
    except KeyboardInterrupt:
        click.echo("worker stopped", err=True)
