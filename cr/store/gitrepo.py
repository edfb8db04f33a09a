"""Component repositories pulled with git (gitpython), always non-interactively.

git never prompts: GIT_TERMINAL_PROMPT=0 and ssh BatchMode make a missing credential a
failure instead of a hang, and a failure becomes one RepoError line taken from git's own
'fatal:' message, never a gitpython traceback.

git never outlives cr: every git process gitpython starts here gets SIGTERM when cr dies
(PR_SET_PDEATHSIG through cr.procs; SIGTERM lets git remove its own .lock files).

A pull is crash-safe at every point:
  1. clone and check out in a scratch directory, CR_HOME/tmp/clone-<pid>-* (the same file
     system as CR_HOME/repos; swept by the next cr once this process is gone);
  2. under CR_HOME/repos.pull.lock: rename it to CR_HOME/repos/<name>, then register it.
A kill between the rename and the registration leaves an unregistered CR_HOME/repos/<name>:
the next pull of that name finds it (under the same lock, so it cannot be another pull's
clone in progress), moves it away and takes its place. `cr repo rm` unregisters before it
deletes, so a kill there leaves the same kind of leftover, with the same remedy.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import signal
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
    if ".lock" in detail and "exists" in detail:  # a git killed without the chance to clean up
        return RepoError(f"cannot {action} {url}: {detail}",
                         hint="an interrupted git left that lock file: if no git runs in the clone now, delete it and run again "
                              "(or start over: cr repo rm NAME && cr repo pull URL)")
    return RepoError(f"cannot {action} {url}: {detail}", hint="check the URL and revision; git ran non-interactively, so credentials must already be configured")


PULL_LOCK = "repos.pull.lock"  # in CR_HOME: serialises the rename + registration of pulls


def git_module():
    try:
        import git
    except ImportError as exc:  # gitpython raises ImportError when no git executable exists
        raise RepoError(f"git is not usable here ({exc})", hint="install git (e.g. apt-get install git)") from None
    return git


_REPO_CLASS = None


def repo_class():
    """git.Repo whose git commands die with cr (SIGTERM on Linux, cr.procs): use it for
    Repo(path) and Repo.clone_from(...) wherever cr runs git through gitpython."""
    global _REPO_CLASS
    if _REPO_CLASS is None:
        git = git_module()
        from ..procs import die_with_parent

        class Git(git.Git):
            def execute(self, command, *args, **kwargs):
                preexec = die_with_parent(signal.SIGTERM)
                if preexec is not None and os.name == "posix":
                    kwargs.setdefault("preexec_fn", preexec)
                return super().execute(command, *args, **kwargs)

        class Repo(git.Repo):
            GitCommandWrapperType = Git

        _REPO_CLASS = Repo
    return _REPO_CLASS


def _pull_lock(home: Path):
    from filelock import FileLock  # lazily, as registry does: start-up time

    return FileLock(str(home / PULL_LOCK), timeout=300)


def _move_away(path: Path, into: Path) -> None:
    """Take path out of CR_HOME/repos at once (a rename), then delete it."""
    dead = into / f"gone-{path.name}"
    try:
        os.replace(path, dead)
    except OSError:
        dead = path
    shutil.rmtree(dead, ignore_errors=True)


def _place(src: Path, target: Path) -> None:
    """Rename the finished clone into CR_HOME/repos (copied where it is another file system)."""
    try:
        os.replace(src, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise RepoError(f"cannot place the clone at {target} ({exc.strerror or exc})",
                            hint="CR_HOME/repos must be a writable directory") from None
        shutil.move(str(src), str(target))  # a kill here leaves an unregistered copy: swept by the next pull


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
    from .. import scratch

    git = git_module()
    GitRepo = repo_class()
    home = home or ensure_home()
    clones = home / "repos"
    clones.mkdir(parents=True, exist_ok=True)
    with scratch.scratch("clone") as tmp:
        reporter().info(f"cloning {url}")
        try:
            clone = GitRepo.clone_from(url, tmp / "repo", env=GIT_ENV, no_checkout=False)
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
        with _pull_lock(home):
            owner = next((r for r in registry.registered(home) if r.name == probe.name or _same(r.path, target)), None)
            if owner is not None and _same(owner.path, target):
                raise RepoError(
                    f"a repository named {probe.name!r} is already pulled at {target}",
                    hint=f"update it with: cr repo update {probe.name}  (or cr repo rm {probe.name} first)",
                )
            if owner is not None:  # registry.register would refuse it: say so before moving anything
                raise RepoError(
                    f"a repository named {probe.name!r} is already registered ({owner.path})",
                    hint=f"remove it first with: cr repo rm {probe.name}",
                )
            if target.exists() or target.is_symlink():
                # nothing registered points here: left by a pull or rm that was killed
                reporter().info(f"removing {target}, left unregistered by an interrupted pull or rm")
                _move_away(target, tmp)
            _place(tmp / "repo", target)
            repo = read_repo(target, "git", url=url, ref=ref)
            try:
                registry.register(repo, home)
            except BaseException:
                _move_away(target, tmp)
                raise
        reporter().info(f"pulled {repo.name} at {sha[:12]}")
        return repo


def _same(a: Path, b: Path) -> bool:
    try:
        return Path(a).absolute() == Path(b).absolute() or Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def update(repo: Repo, home: Path | None = None) -> tuple[str, str]:
    """Fetch and check out the repo's recorded ref (or origin's default branch); returns (old, new) sha."""
    git = git_module()
    home = home or ensure_home()
    if repo.origin != "git":
        raise RepoError(f"repository {repo.name!r} was not pulled with git", hint="only repos added with cr repo pull can be updated")
    if not repo.path.is_dir():
        raise RepoError(f"the clone of {repo.name!r} at {repo.path} is missing", hint=f"cr repo rm {repo.name} && cr repo pull {repo.url}")
    with repo_class()(repo.path) as clone:
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
    fresh = read_repo(repo.path, "git", url=repo.url, ref=repo.ref,
                      **({"trusted": repo.trusted} if repo.trusted is not None else {}))  # trust stays as the user set it
    registry.replace_entry(fresh, home)
    return old, new
