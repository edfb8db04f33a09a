"""detect, install, env list/show/rm: the software commands."""
from __future__ import annotations

import click

from . import output
from .options import trust_option, with_consent


def _software_names(words: tuple[str, ...]) -> list[str]:
    """'software NAME...', 'NAME...' or 'software:NAME...' -> names."""
    names = list(words)
    if names and names[0] == "software":
        names = names[1:]
    out = []
    for word in names:
        kind, sep, name = word.partition(":")
        if sep and kind != "software":
            raise click.UsageError(f"cr detect finds software only, not {kind!r}")
        out.append(name if sep else word)
    return out


@click.command()
@click.argument("names", nargs=-1)
@click.option("--python", "python", metavar="PATH", help="Probe the packages of this Python (default: the one running cr).")
@click.option("--timeout", type=float, default=10.0, show_default=True, help="Seconds before a probe that hangs is abandoned.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def detect(names, python, timeout, as_json):
    """Detect software on this host and register it: cr detect [software] [NAME...]."""
    from ..software.detect import detect as run_detect

    found = run_detect(_software_names(names) or None, interpreter=python, timeout=timeout)
    if as_json:
        output.emit_json([e.to_dict() for e in found])
        return
    rows = [[e.name, e.version, e.origin, e.location] for e in found]
    output.table(["NAME", "VERSION", "ORIGIN", "LOCATION"], rows, empty="no software found")


@click.command()
@click.argument("target", nargs=-1)
@click.option("--lock", "lock_file", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="Install what this lock lists as missing, exactly as it recorded it (method, packages, version).")
@click.option("--offline", is_flag=True, help="Never use the network; fail saying what is missing.")
@trust_option
@click.option("--python", "python", metavar="PATH", help="Install Python packages for this interpreter (default: the one running cr).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def install(target, lock_file, offline, python, trust, as_json):
    """Install software into CR_HOME: cr install software NAME[@SPEC], everything a component
    such as a solution needs: cr install solution:NAME, or what a lock lists: cr install --lock FILE."""
    from ..store.refs import parse_ref_words

    words = list(target)
    if bool(words) == bool(lock_file):
        raise click.UsageError("give a software NAME or a component REF, or --lock FILE")
    if len(words) == 1 and ":" not in words[0]:
        words = ["software", words[0]]
    ref = parse_ref_words(words) if words else None
    if ref is None or ref.kind != "software":
        # Any other component (or a lock): install what its lock lists as missing.
        from ..resolve.plan import install_missing

        result = with_consent(lambda trusted: install_missing(lock_file or str(ref), python=python, offline=offline,
                                                              trust=trusted), trust, as_json)
        if as_json:
            output.emit_json(result)
            return
        for env in result["installed"]:
            click.echo(f"{env['name']} {env['version']} ({env['origin']}, {env['source']}): {env['prefix'] or env['location']}")
        if not result["installed"]:
            click.echo(f"everything {result['lock']['root']} needs is already here", err=True)
        return
    from ..api import install_software

    done = with_consent(lambda trusted: install_software(ref.name, ref.spec, offline=offline, python=python,
                                                         trust=trusted), trust, as_json)
    if as_json:
        output.emit_json(done)
        return
    click.echo(f"{done['name']} {done['version']} ({done['origin']}, {done['source']}): {done['prefix'] or done['location']}")
    for dep in done["dependencies_installed"]:
        click.echo(f"{dep['name']} {dep['version']} ({dep['origin']}, {dep['source']}): {dep['prefix'] or dep['location']}"
                   f" (needed by {done['name']})")


@click.group("env")
def env() -> None:
    """Software envs: what is detected or installed here (list, show, rm, exec, shell)."""


# `cr env exec` and `cr env shell` live in cr/cli/resolve.py (they compose a lock) and are
# attached to this group in cr/cli/main.py.


@env.command("list")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def env_list(name, as_json):
    """List registered software envs (of one software NAME)."""
    from ..software.envcalls import env_list as list_envs

    found = list_envs(name)
    if as_json:
        output.emit_json([e.to_dict() for e in found])
        return
    rows = [[e.name, e.version, e.origin, e.source, e.id, e.prefix or e.location] for e in found]
    output.table(["NAME", "VERSION", "ORIGIN", "SOURCE", "ID", "LOCATION"], rows, empty="no software envs: run cr detect, or cr install software NAME")


def _one_env(name: str, which: str | None):
    from ..software.envcalls import env_show

    return env_show(name, which)


@env.command("show")
@click.argument("name")
@click.argument("which", metavar="[VERSION|ID]", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def env_show(name, which, as_json):
    """Show one software env (default: the newest of NAME)."""
    e = _one_env(name, which)
    if as_json:
        output.emit_json(e.to_dict())
        return
    for label, value in (("name", e.name), ("version", e.version), ("id", e.id), ("origin", e.origin), ("source", e.source),
                         ("location", e.location), ("prefix", e.prefix), ("interpreter", e.interpreter), ("platform", e.platform)):
        if value:
            click.echo(f"{label + ':':13}{value}")
    for var, value in sorted(e.exports.items()):
        click.echo(f"{'export:':13}{var}={':'.join(value) if isinstance(value, list) else value}")
    for p in e.packages:
        click.echo(f"{'package:':13}{p.get('name')}=={p.get('version')}" + (f"  sha256:{p['sha256']}" if p.get("sha256") else ""))


@env.command("rm")
@click.argument("name")
@click.argument("which", metavar="VERSION|ID")
def env_rm(name, which):
    """Unregister a software env; an installed env's prefix is deleted with it."""
    from ..software.envcalls import env_rm

    e = env_rm(name, which)
    click.echo(f"removed {e.name} {e.version} ({e.origin}, {e.id})" + (f" and {e.prefix}" if e.prefix else ""))
