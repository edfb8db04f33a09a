"""Component repositories pulled with git (gitpython), always non-interactively.

git never prompts: GIT_TERMINAL_PROMPT=0 and ssh BatchMode make a missing credential a
failure instead of a hang, and a failure becomes one RepoError line taken from git's own
'fatal:' message, never a gitpython traceback.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from ..errors import RepoError
from ..events import reporter
from ..paths import ensure_home
from . import registry
from .repository import REPO_FILE, Repo, read_repo

GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -o ConnectTimeout=20",
    "GCM_INTERACTIVE": "never",
    "LC_ALL": "C",
}


def _git_error(exc, action: str, url: str) -> RepoError:
    """Condense a GitCommandError into one line from git's own message."""
    stderr = getattr(exc, "stderr", "") or str(exc)
    lines = [ln.strip().strip("'").strip() for ln in str(stderr).splitlines() if ln.strip()]
    fatal = [ln for ln in lines if ln.lower().startswith(("fatal:", "error:"))]
    detail = (fatal[-1] if fatal else (lines[-1] if lines else "git failed")).removeprefix("stderr:").strip()
    return RepoError(f"cannot {action} {url}: {detail}", hint="check the URL and revision; git ran non-interactively, so credentials must already be configured")


def git_module():
    try:
        import git
    except ImportError as exc:  # gitpython raises ImportError when no git executable exists
        raise RepoError(f"git is not usable here ({exc})", hint="install git (e.g. apt-get install git)") from None
    return git


def _resolve(repo, rev: str, url: str) -> str:
    """The commit sha rev names (a branch of origin, a tag or a commit); RepoError if none."""
    git = git_module()
    candidates = [f"origin/{rev}", rev] if not rev.startswith("origin/") else [rev]
    for candidate in candidates:
        try:
            return repo.git.rev_parse("--verify", "--quiet", f"{candidate}^{{commit}}")
        except git.GitCommandError:
            continue
    raise RepoError(f"revision {rev!r} not found in {url}", hint="give a branch, tag or commit that exists there (git ls-remote URL lists them)")


def _checkout(repo, rev: str, url: str) -> str:
    sha = _resolve(repo, rev, url)
    try:
        repo.git.checkout("--detach", "--force", sha)
    except git_module().GitCommandError as exc:
        raise _git_error(exc, f"check out {rev} of", url) from None
    return sha


def pull(url: str, ref: str | None = None, home: Path | None = None) -> Repo:
    """Clone url into CR_HOME/repos/<name> (name from its cr-repo.json), check out ref, register it."""
    git = git_module()
    home = home or ensure_home()
    clones = home / "repos"
    clones.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".pull-", dir=clones))
    try:
        reporter().info(f"cloning {url}")
        try:
            clone = git.Repo.clone_from(url, tmp / "repo", env=GIT_ENV, no_checkout=False)
        except git.GitCommandError as exc:
            raise _git_error(exc, "clone", url) from None
        with clone:
            clone.git.update_environment(**GIT_ENV)
            sha = _checkout(clone, ref, url) if ref else clone.head.commit.hexsha
        if not (tmp / "repo" / REPO_FILE).is_file():
            raise RepoError(
                f"{url} is not a reefkit repository (no {REPO_FILE} at its top" + (f" at {ref}" if ref else "") + ")",
                hint="a component repository needs cr-repo.json; create one with cr repo init",
            )
        probe = read_repo(tmp / "repo", "git")
        target = clones / probe.name
        if target.exists():
            raise RepoError(
                f"a repository named {probe.name!r} is already pulled at {target}",
                hint=f"update it with: cr repo update {probe.name}  (or cr repo rm {probe.name} first)",
            )
        os.replace(tmp / "repo", target)
        repo = read_repo(target, "git", url=url, ref=ref)
        try:
            registry.register(repo, home)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        reporter().info(f"pulled {repo.name} at {sha[:12]}")
        return repo
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def update(repo: Repo, home: Path | None = None) -> tuple[str, str]:
    """Fetch and check out the repo's recorded ref (or origin's default branch); returns (old, new) sha."""
    git = git_module()
    home = home or ensure_home()
    if repo.origin != "git":
        raise RepoError(f"repository {repo.name!r} was not pulled with git", hint="only repos added with cr repo pull can be updated")
    if not repo.path.is_dir():
        raise RepoError(f"the clone of {repo.name!r} at {repo.path} is missing", hint=f"cr repo rm {repo.name} && cr repo pull {repo.url}")
    with git.Repo(repo.path) as clone:
        clone.git.update_environment(**GIT_ENV)
        old = clone.head.commit.hexsha
        try:
            clone.git.fetch("--tags", "--force", "--prune", "origin")
        except git.GitCommandError as exc:
            raise _git_error(exc, "fetch", repo.url or str(repo.path)) from None
        target = repo.ref
        if not target:
            try:
                target = clone.git.symbolic_ref("refs/remotes/origin/HEAD").removeprefix("refs/remotes/")
            except git.GitCommandError:
                target = "origin/HEAD"
        sha = _resolve(clone, target, repo.url or "")
        # Refuse before touching the work tree if the new revision renamed the repository.
        try:
            theirs = json.loads(clone.git.show(f"{sha}:{REPO_FILE}")).get("name")
        except (git.GitCommandError, ValueError, AttributeError):
            theirs = None
        if theirs != repo.name:
            what = f"calls itself {theirs!r}" if theirs else f"has no valid {REPO_FILE}"
            raise RepoError(
                f"{repo.url} at {target} {what} (registered as {repo.name!r}); the clone was left at {old[:12]}",
                hint=f"cr repo rm {repo.name} && cr repo pull {repo.url}",
            )
        new = _checkout(clone, sha, repo.url or "")
    fresh = read_repo(repo.path, "git", url=repo.url, ref=repo.ref)
    registry.replace_entry(fresh, home)
    return old, new
