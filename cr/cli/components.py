"""find, show, new, check: the component commands."""
from __future__ import annotations

import json

import click

from . import fastfind, output
from .fastfind import split_tags as _split_tags

KIND_HELP = "model, dataset, solution, platform, action or software"


@click.command()
@click.argument("kind", required=False)
@click.option("--tags", help="Comma-separated tags that must all be present; prefix with - to exclude (a,b,-c).")
@click.option("--version", "version", help="PEP 440 version or specifier, e.g. 1.0.0 or '>=1,<2'.")
@click.option("--repo", help="Only this repository.")
@click.option("--name", help="Exact name or glob pattern (lenet*).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def find(kind, tags, version, repo, name, as_json):
    """Find components (KIND: model, dataset, solution, platform, action, software)."""
    fastfind.run(kind, tags, version, repo, name, as_json)


@click.command()
@click.argument("ref", nargs=-1, required=True)
@click.option("--no-verify", is_flag=True, help="Skip checksum verification of the component's files.")
@click.option("--repo", metavar="NAME", help="Show the copy in this repository (e.g. an unpacked archive's, to review it).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show(ref, no_verify, repo, as_json):
    """Show a component: REF as kind:name[@spec] or KIND NAME[@spec]."""
    from ..run.describe import describe as describe_component, refuse_mismatched_payload
    from ..store.refs import parse_ref_words

    info = describe_component(parse_ref_words(ref), verify=not no_verify, prefer_repo=repo)
    if as_json:
        output.emit_json(info)
        refuse_mismatched_payload(info)
        return
    click.echo(f"{info['ref']}  (uid {info['uid']})")
    click.echo(f"repo:  {info['repo']}")
    click.echo(f"path:  {info['path']}")
    if info.get("tags"):
        click.echo(f"tags:  {', '.join(info['tags'])}")
    if "files" in info:
        if not info["files"]:
            click.echo("files: none listed")
        for f in info["files"]:
            mark = {"ok": "ok", "missing": "MISSING", "mismatch": "MISMATCH"}[f["status"]]
            click.echo(f"file:  {f['path']}  sha256 {mark}")
    if info.get("payload"):
        from ..runtime.pins import describe

        click.echo(f"payload: {info['payload']['path']} from package {info['payload']['package']}: {describe(info['payload'])}")
    click.echo("meta:")
    click.echo(json.dumps(info["meta"], indent=2, ensure_ascii=False))
    if "files" in info and not info["verified"]:
        from ..errors import CRError

        bad = [f["path"] for f in info["files"] if f["status"] != "ok"]
        raise CRError(f"{info['ref']}: {len(bad)} file(s) fail verification: {', '.join(bad)}", hint=f"cr check {info['ref']} gives details")
    refuse_mismatched_payload(info)


@click.command()
@click.argument("kind")
@click.argument("name")
@click.option("--version", "version", default="0.1.0", show_default=True, help="PEP 440 version.")
@click.option("--tags", help="Comma-separated tags.")
@click.option("--repo", help="Repository to create it in (default: your local repo).")
@click.option("--description", default="", help="One-line description.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def new(kind, name, version, tags, repo, description, as_json):
    """Create a valid skeleton component KIND NAME in your local repo (or --repo)."""
    from ..api import new as api_new

    comp = api_new(kind, name, version=version, tags=_split_tags(tags), repo=repo, description=description)
    if as_json:
        output.emit_json(comp.to_dict())
    else:
        click.echo(f"created {comp.ref} in repo {comp.repo}: {comp.meta_path}")


@click.command()
@click.argument("target", nargs=-1)
@click.option("--deep", is_flag=True, help="Also run onnx.checker on each ONNX file (imports onnx: about a second).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def check(target, deep, as_json):
    """Validate metas, checksums and model files: all repos, a PATH (meta, component, repo) or a REF.

    Each model file is opened and its structure read (ONNX, TFLite, TorchScript/torch zip,
    frozen graph, SavedModel), never run or unpickled. A model format that no registered
    backend loads is a warning, not a problem."""
    from ..api import check as api_check
    from ..store.refs import parse_ref_words

    if len(target) == 2:
        what = str(parse_ref_words(target))
    elif len(target) == 1:
        what = target[0]
    elif not target:
        what = None
    else:
        raise click.UsageError("give at most one PATH or REF (or KIND NAME)")
    report = api_check(what, deep=deep)
    if as_json:
        output.emit_json(report.to_dict())
    else:
        for p in report.problems:
            click.echo(str(p))
        for p in report.warnings:
            output.warn(str(p))
        if report.payloads:
            from ..runtime.pins import describe

            for state in report.payloads:
                click.echo(f"payload of {state['ref']}: {state['path']} from package {state['package']}: {describe(state)}", err=True)
        warned = f", {len(report.warnings)} warning(s)" if report.warnings else ""
        opened = f" and {len(report.models)} model file(s)" if report.models else ""
        click.echo(f"checked {report.checked} component(s){opened}: " + ("all valid" if report.ok else f"{len(report.problems)} problem(s)") + warned, err=True)
    if not report.ok:
        raise SystemExit(1)


@click.command("hash")
@click.argument("target", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def hash_(target, as_json):
    """Record the sha256 of every file of a component in its meta (REF, KIND NAME or a directory).

    A model whose file comes from a registry package (source.package) gets that file's
    sha256 and the installed package version pinned in source; loading checks them."""
    from ..api import rehash
    from ..store.refs import parse_ref_words

    what = str(parse_ref_words(target)) if len(target) == 2 else target[0]
    result = rehash(what)
    if as_json:
        output.emit_json(result)
        return
    for key in ("added", "changed", "removed"):
        for rel in result[key]:
            click.echo(f"{key:8} {rel}")
    pin = result.get("pinned")
    if pin:
        click.echo(f"{'pinned' if result['pin_changed'] else 'pin ok':8} {pin['path']} from package {pin['package']} "
                   f"{pin.get('package_version') or '(no version)'}: sha256 {pin['sha256']}")
    if not any(result[k] for k in ("added", "changed", "removed", "pin_changed")):
        click.echo(f"{result['meta_path']}: files already up to date", err=True)
    else:
        click.echo(f"updated {result['meta_path']}", err=True)
