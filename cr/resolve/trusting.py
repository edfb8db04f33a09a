"""`cr repo trust|untrust` as calls: what a registered repository would run, and the user's consent."""
from __future__ import annotations


def review(name: str, dry_run: bool = False) -> tuple[list, list[str]]:
    """(what repository name would run: cr.store.trust.Item list, the names trust changed):
    RepoError when no repository of that name is registered; with dry_run nothing changes."""
    from ..errors import RepoError
    from ..store import trust as trust_mod
    from ..store.catalog import repo_list
    from .plan import repo_review

    if not any(r["name"] == name for r in repo_list()):
        raise RepoError(f"no repository named {name!r}", hint="cr repo list shows the registered ones")
    items = repo_review(name)
    return items, ([] if dry_run else trust_mod.trust_repos([name]))


def trust_report(name: str, items: list, changed: list[str], dry_run: bool) -> dict:
    """What `cr repo trust --json` prints."""
    return {"name": name, "trusted": not dry_run, "changed": bool(changed), "would_run": [i.to_dict() for i in items]}


def repo_trust(name: str, dry_run: bool = False) -> dict:
    """Trust registered repository name: what it holds may run code (`cr repo trust NAME
    --json`; docs/security.md). {"name", "trusted", "changed", "would_run": every install
    method, probe, Python file and action entry it holds}. dry_run: only list them."""
    items, changed = review(name, dry_run)
    return trust_report(name, items, changed, dry_run)


def repo_untrust(name: str):
    """Take trust back from registered repository name (`cr repo untrust NAME`): nothing in it
    runs code until it is trusted again. Returns the repository as now registered."""
    from ..store import registry

    return registry.set_trusted(name, False)
