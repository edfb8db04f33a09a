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
        [r["rank"], r["name"], r["origin"] + (" (missing)" if not r["exists"] else ""), r["components"], r["url"] or r["path"]]
        for r in repos
    ]
    output.table(["#", "NAME", "ORIGIN", "COMPONENTS", "LOCATION"], rows)


@repo.command()
@click.argument("path", type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def add(path, as_json):
    """Register a directory that holds cr-repo.json."""
    from ..api import repo_add
    from ..store.repository import repo_descriptor

    r = repo_add(path)
    output.emit_json(repo_descriptor(r)) if as_json else click.echo(f"registered {r.name}: {r.path}")


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
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def pull(url, ref, as_json):
    """Clone a git repository of components and register it."""
    from ..api import repo_pull
    from ..store.repository import repo_descriptor

    r = repo_pull(url, ref=ref)
    output.emit_json(repo_descriptor(r)) if as_json else click.echo(f"registered {r.name}: {r.path}")


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
