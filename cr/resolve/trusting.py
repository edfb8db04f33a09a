"""`cr repo trust|untrust` as calls: what a registered repository would run, and the user's consent."""
from __future__ import annotations

from dataclasses import dataclass, fields

from ..store.repository import Repo, repo_descriptor


@dataclass(frozen=True)
class PulledRepo(Repo):
    """A repository `cr repo pull` registered (trusted: whether it was trusted then), with
    what it would run (would_run: cr.store.trust.Item). to_dict(): what --json prints."""

    would_run: tuple = ()

    def to_dict(self) -> dict:
        return {**repo_descriptor(self), "trusted": bool(self.trusted), "would_run": [i.to_dict() for i in self.would_run]}


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


def repo_pull(url: str, ref: str | None = None, trust: bool = False):
    """Clone git repository url (at ref) into CR_HOME/repos and register it (`cr repo pull URL
    --json`): a PulledRepo, the registered Repo plus would_run (what it holds that would run
    code: install methods, probes, Python files, action entries). trust: trust it now (as
    --trust); without it, it stays untrusted. to_dict() is what --json prints."""
    from ..store import trust as trust_mod
    from ..store.catalog import repo_pull as pull
    from .plan import repo_review

    repo = pull(url, ref)
    items = repo_review(repo.name)
    if trust:
        trust_mod.trust_repos([repo.name])
    return PulledRepo(**{**{f.name: getattr(repo, f.name) for f in fields(repo)}, "trusted": trust}, would_run=tuple(items))


def repo_untrust(name: str):
    """Take trust back from registered repository name (`cr repo untrust NAME`): nothing in it
    runs code until it is trusted again. Returns the repository as now registered."""
    from ..store import registry

    return registry.set_trusted(name, False)
