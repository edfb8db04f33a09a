"""cr repo ...: register, pull, update, list and remove component repositories."""
from __future__ import annotations

import click

from . import output


@click.group()
def repo():
    """Manage component repositories (git, directories, the local and shipped ones)."""


@repo.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_(as_json):
    """List repositories in precedence order (first wins on duplicates)."""
    from ..api import repo_list

    repos = repo_list()
    if as_json:
        output.emit_json(repos)
        return
    rows = [
        [r["rank"], r["name"], r["origin"] + (" (missing)" if not r["exists"] else "") + ("" if r["trusted"] else " (untrusted)"),
         r["components"], r["url"] or r["path"]]
        for r in repos
    ]
    output.table(["#", "NAME", "ORIGIN", "COMPONENTS", "LOCATION"], rows)


@repo.command()
@click.argument("path", type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def add(path, as_json):
    """Register a directory that holds cr-repo.json."""
    from ..api import repo_add

    r = repo_add(path)
    output.emit_json(r.to_dict()) if as_json else click.echo(f"registered {r.name}: {r.path}")


@repo.command()
@click.argument("path", type=click.Path(file_okay=False))
@click.option("--name", required=True, help="Repository name (lowercase letters, digits, . _ -).")
@click.option("--no-register", is_flag=True, help="Only write cr-repo.json.")
def init(path, name, no_register):
    """Create cr-repo.json in PATH and register it."""
    from ..api import repo_init

    r = repo_init(path, name, register=not no_register)
    click.echo(f"created repository {r.name}: {r.path}" + ("" if no_register else " (registered)"))


@repo.command()
@click.argument("url")
@click.option("--ref", help="Branch, tag or commit to check out.")
@click.option("--trust", is_flag=True, help="Trust it now: what it would run is listed, then allowed (default: untrusted).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def pull(url, ref, trust, as_json):
    """Clone a git repository of components and register it (untrusted unless --trust).

    Its data can be used at once; what it would run (install scripts and methods,
    executable probes, Python files, loaders, action entries) is listed, and takes effect
    only once you trust it (--trust here, or cr repo trust NAME after a review).
    """
    from ..api import repo_pull

    r = repo_pull(url, ref=ref, trust=trust)
    if as_json:
        output.emit_json(r.to_dict())
        return
    click.echo(f"registered {r.name}: {r.path}" + ("" if trust else " (untrusted)"))
    _show_items(r.name, list(r.would_run), trusted=trust)


def _show_items(name: str, items: list, trusted: bool) -> None:
    if not items:
        click.echo(f"{name} holds nothing that runs code (data only)", err=True)
        return
    click.echo(f"{name} holds {len(items)} thing(s) that run code:", err=True)
    for item in items[:20]:
        click.echo(f"  {item.line()}", err=True)
    if len(items) > 20:
        click.echo(f"  ... and {len(items) - 20} more (cr repo trust {name} --dry-run lists them all)", err=True)
    if not trusted:
        click.echo(f"they run only once you trust it: review them, then cr repo trust {name}", err=True)


@repo.command("trust")
@click.argument("name")
@click.option("--dry-run", is_flag=True, help="Only list what it would run.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def trust_(name, dry_run, as_json):
    """Trust a registered repository: what it holds may run code (see docs/security.md)."""
    from ..resolve.trusting import review, trust_report

    items, changed = review(name, dry_run)
    if as_json:
        output.emit_json(trust_report(name, items, changed, dry_run))
        return
    if not dry_run:
        click.echo(f"trusted {name}" if changed else f"{name} was already trusted")
    _show_items(name, items, trusted=not dry_run)


@repo.command("untrust")
@click.argument("name")
def untrust(name):
    """Take trust back: nothing in NAME runs code again until you trust it."""
    from ..resolve.trusting import repo_untrust

    repo_untrust(name)
    click.echo(f"{name} is not trusted")


@repo.command()
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def update(name, as_json):
    """Fetch and check out the recorded revision of NAME (default: every git repo)."""
    from ..api import repo_update

    results = repo_update(name)
    if as_json:
        output.emit_json(results)
        return
    if not results:
        click.echo("no git repositories registered", err=True)
    for r in results:
        state = f"{r['old'][:12]} -> {r['new'][:12]}" if r["changed"] else f"up to date at {r['new'][:12]}"
        click.echo(f"{r['name']}: {state}")


@repo.command()
@click.argument("name")
def rm(name):
    """Unregister a repository (a clone made by cr repo pull is deleted)."""
    from ..api import repo_rm

    r = repo_rm(name)
    click.echo(f"removed {r.name}")
