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


def _run_in(ref_or_lock: str, command: list[str], python: str | None) -> int:
    import subprocess  # only here: keeps the CLI's start-up (every command) lighter

    from ..api import env_for

    _, env = env_for(ref_or_lock, python=python)
    try:
        return subprocess.call(command, env=env)
    except FileNotFoundError:
        from ..errors import CRError

        raise CRError(f"command not found: {command[0]}", hint="check the command name and the PATH the lock composes (cr resolve --json)") from None


@click.command("exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("target")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@click.option("--python", "python", help="Interpreter to resolve for.")
def exec_(target, command, python):
    """Run COMMAND inside what TARGET (a ref or a lock file) needs: cr env exec REF -- CMD ARGS."""
    command = list(command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise click.UsageError("give a command to run after --")
    sys.exit(_run_in(target, command, python))


@click.command()
@click.argument("target")
@click.option("--python", "python", help="Interpreter to resolve for.")
def shell(target, python):
    """Start your $SHELL inside what TARGET (a ref or a lock file) needs."""
    sys.exit(_run_in(target, [os.environ.get("SHELL", "/bin/sh")], python))
