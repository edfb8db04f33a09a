"""cr resolve, cr env exec, cr env shell: locks and running inside them."""
from __future__ import annotations

import os
import sys

import click

from . import output


@click.command()
@click.argument("ref", nargs=-1, required=True)
@click.option("--python", "python", help="Interpreter the software must work with (default: the one running cr).")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), help="Also write the lock to this file.")
@click.option("--platform-root", type=click.Path(file_okay=False), help="Plan for another machine captured with `cr platform --capture DIR`.")
@click.option("--json", "as_json", is_flag=True, help="Print the lock as JSON.")
def resolve(ref, python, out, platform_root, as_json):
    """Resolve what REF needs on this machine and write its lock (kind:name[@spec] or KIND NAME)."""
    from ..api import lock
    from ..store.refs import parse_ref_words

    result = lock(str(parse_ref_words(ref)), python=python, output=out, platform_root=platform_root)
    if as_json:
        output.emit_json(result)
        return
    rows = []
    for sw in result["software"]:
        origin = "to install" if sw["origin"] == "installable" else sw["origin"]
        rows.append([sw["name"], sw["version"], origin, sw.get("source", ""), ", ".join(sw["requested_by"])])
    output.table(["SOFTWARE", "VERSION", "ORIGIN", "SOURCE", "REQUESTED BY"], rows, empty="no software required")
    comps = ", ".join(c["ref"] for c in result["components"])
    click.echo(f"components: {comps}", err=True)
    click.echo(f"platform {result['platform']['fingerprint']}, python {result['interpreter']}", err=True)
    if platform_root:
        click.echo(f"planned for the machine captured in {platform_root}" + (f"; lock: {out}" if out else " (use -o FILE to keep the lock)"), err=True)
    else:
        click.echo(f"lock: {result['path']}" + (f" (and {out})" if out and result["path"] != out else "") + (" (unchanged)" if result.get("cached") else ""), err=True)
    if result["missing"]:
        click.echo("needs install: " + ", ".join(result["missing"]) + "  (cr install software NAME)", err=True)


def _run_in(ref_or_lock: str | list[str], command: list[str], python: str | None) -> int:
    from ..resolve.execute import env_exec  # only here: subprocess keeps the CLI's start-up (every command) lighter

    return env_exec(ref_or_lock, command, python=python).returncode


def _names_a_target(word: str) -> bool:
    """A ref (kind:name...) or a lock file: what may stand before `--` in cr env exec."""
    return ":" in word or os.path.isfile(word)


@click.command("exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("words", metavar="TARGET [TARGET ...] -- COMMAND", nargs=-1, type=click.UNPROCESSED, required=True)
@click.option("--python", "python", help="Interpreter to resolve for.")
def exec_(words, python):
    """Run COMMAND inside what each TARGET (a ref or a lock file) needs, composed in order:
    cr env exec REF [REF ...] -- CMD ARGS.

    Every target's software is on PATH, PYTHONPATH, ... (the first target's first); two
    targets that need the same software at different versions are an error. Without --,
    the first word is the one target and the rest the command."""
    words = list(words)
    cut = words.index("--") if "--" in words else None
    if cut is not None and (cut == 0 or all(_names_a_target(w) for w in words[:cut])):
        targets, command = words[:cut], words[cut + 1:]
    else:  # REF CMD ARGS (a "--" further on belongs to the command)
        targets, command = words[:1], words[1:]
    if not targets:
        raise click.UsageError("give at least one TARGET before --")
    if not command:
        raise click.UsageError("give a command to run after --")
    sys.exit(_run_in(targets if len(targets) > 1 else targets[0], command, python))


@click.command()
@click.argument("targets", metavar="TARGET [TARGET ...]", nargs=-1, required=True)
@click.option("--python", "python", help="Interpreter to resolve for.")
def shell(targets, python):
    """Start your $SHELL inside what each TARGET (a ref or a lock file) needs, composed in order."""
    targets = list(targets)
    sys.exit(_run_in(targets if len(targets) > 1 else targets[0], [os.environ.get("SHELL", "/bin/sh")], python))
