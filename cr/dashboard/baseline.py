"""cr gate --baseline-repo: the baseline from a results repository (cr publish --git): the
newest published record that matches the candidate (cr.results.gate.matches).

    baseline = from_repo("https://git.example.org/team/results.git", candidate)
"""
from __future__ import annotations

from ..results.gate import GateError, Side, component_name, matches


def _is_url(text: str) -> bool:
    """A git URL (scheme://..., or scp-like user@host:path) rather than a local path."""
    import re

    return "://" in text or re.match(r"^[\w.-]+@[\w.-]+:", text) is not None


def results_folder(repo: str, branch: str | None = None):
    """The results/ folder of a results repository (cr publish --git): a checked-out work
    tree is read as it is; a git URL or a bare repository is fetched into the publish cache
    (cr.dashboard.publish.fetch_results) on branch (None: the branch its HEAD names)."""
    from pathlib import Path

    local = None if _is_url(repo) else Path(repo).expanduser()
    if local is not None:
        if not local.exists():
            raise GateError(f"results repository {repo} does not exist",
                            hint="give the path or URL of a git repository that cr publish --git writes to")
        if branch is None and (local / "results").is_dir():
            return local / "results"
        repo = str(local.absolute())
    from .publish import PublishError, fetch_results

    try:
        return fetch_results(repo, branch or _remote_head(repo))
    except PublishError as exc:
        raise GateError(f"cannot read results repository {repo}: {exc.message}", hint=exc.hint) from None


def _remote_head(url: str) -> str:
    """The branch a remote's HEAD names ('main' when it names none)."""
    import os
    import subprocess

    from ..store.gitrepo import GIT_ENV

    try:
        done = subprocess.run(["git", "ls-remote", "--symref", "--", url, "HEAD"], capture_output=True, text=True,
                              env={**os.environ, **GIT_ENV}, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GateError(f"cannot read results repository {url}: {exc}", hint="is git installed, and the URL reachable?") from None
    if done.returncode != 0:
        said = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
        raise GateError(f"cannot read results repository {url}: {said[0] if said else 'git ls-remote failed'}",
                        hint="give the path or URL of a git repository that cr publish --git writes to")
    for line in done.stdout.splitlines():
        if line.startswith("ref: refs/heads/") and line.endswith("\tHEAD"):
            return line[len("ref: refs/heads/"):-len("\tHEAD")]
    return "main"


def from_repo(repo: str, candidate: Side, branch: str | None = None, any_machine: bool = False) -> Side:
    """The newest record of a results repository that matches the candidate (matches())."""
    import json

    from ..results.summary import config_label, platform_description, utc

    from .publish import prepare

    folder = results_folder(repo, branch)
    found, read = [], 0
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue  # not a record (the dashboard reads it with a warning; the gate only looks for one)
        read += 1
        if isinstance(record, dict) and matches(record, candidate.record, same_machine=not any_machine):
            found.append((utc(record.get("started")) or "", path, record))
    if not found:
        c = candidate.record
        where = "" if any_machine else f" on {platform_description(c.get('platform'))}"
        raise GateError(f"no baseline in results repository {repo}: none of its {read} record(s) is an ok benchmark of "
                        f"{component_name(c, 'model')} ({component_name(c, 'dataset') or 'no dataset'}, {(c.get('backend') or {}).get('name')}, "
                        f"{config_label(c)}){where}",
                        hint="publish a baseline of this configuration from this machine (cr publish --git URL)"
                             + ("" if any_machine else ", or give --any-machine"))
    _, path, record = max(found, key=lambda f: (f[0], f[1].name))
    item = prepare(record, str(path), path.parent, strict=True)
    return Side(item.record, item.latencies, f"results repository {repo} ({path.name[:16]})", [record.get("uid")])
