"""cr publish --git: result records into a git repository, with the dashboard built beside them.

    from cr.dashboard.publish import publish_git
    report = publish_git("git@host:team/results.git", branch="main")   # PublishReport

The repository holds

    results/<sha256>.json            one record, named after the sha256 of its canonical bytes
    results/<sha256>.latencies.i64   its raw latencies (little-endian int64), when it has any
    site/                            the dashboard (cr.dashboard.build), ready for a static host
    .gitignore                       keeps the builder's private state (site/.cr-dashboard*) out

Content addressing makes publishing idempotent: the same record published twice, from
the store or an exported file, on any machine, lands at the same path with the same
bytes, so a second publish adds nothing and makes no commit. It also makes concurrent
publishers easy: two of them never write one path with different bytes.

The clone lives in CR_HOME/publish/<hash of the URL>/ (kept between runs: a later
publish only fetches), locked with a file lock against a second `cr publish` of this
CR_HOME. A push rejected because someone else pushed first is answered by starting
again from their commit: reset to the new tip, add our records (those they already
published are no-ops), rebuild the site, commit, push. This is `pull --rebase` with the
generated site regenerated instead of merged (a textual rebase of data/index.js would
conflict every time). It is tried MAX_ATTEMPTS times with jittered exponential backoff.

Git never prompts (cr.store.gitrepo's environment): a missing credential is an error.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import time
from array import array
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import CRError
from ..events import reporter
from ..results.latencies import SIDE_SUFFIX, encode, inline_raw, side_raw

MAX_ATTEMPTS = 5
BACKOFF_S = 0.5  # first wait; doubles each attempt, times a random factor in [0.5, 1.5)
IGNORED = ("site/.cr-dashboard.json", "site/.cr-dashboard/")


class PublishError(CRError):
    """Results could not be published (unreachable, refused, rejected after retries)."""


# -- the records to publish ---------------------------------------------------------------
@dataclass
class Item:
    """One valid record ready to publish: where it came from, the record (raw as a side-file
    reference without a file name, or None), its latencies, and its content address."""

    origin: str
    record: dict
    latencies: array | None
    digest: str

    @property
    def uid(self) -> str:
        return self.record["uid"]

    def inline(self) -> dict:
        """The record with its latencies inline (what an upload sends)."""
        raw = inline_raw(self.latencies) if self.latencies is not None else None
        return {**self.record, "raw": raw}

    def stored(self) -> tuple[bytes, bytes | None]:
        """(record file bytes, side file bytes or None) as the git repository keeps them."""
        from ..results.files import record_bytes

        if self.latencies is None:
            return record_bytes(self.record), None
        return record_bytes({**self.record, "raw": {"latencies_ns_file": self.digest + SIDE_SUFFIX, **self.record["raw"]}}), \
            encode(self.latencies)


def prepare(record: object, where: str, base: Path | None = None, strict: bool = False) -> Item | None:
    """record as an Item, or None with a warning naming where when it is not a valid result
    (with strict, InvalidResult instead).

    Raw latencies may be inline or in a side file beside the record (base: its folder).
    The content address is the sha256 of the record's canonical JSON (sorted keys, no
    blanks, UTF-8), with raw replaced by the count and sha256 of the latencies, so the
    same result has one address whether its latencies are inline or in a file.
    """
    from ..results.files import int64s, read_side
    from ..results.validate import InvalidResult, problems

    try:
        if not isinstance(record, dict):
            raise InvalidResult(f"{where}: expected a result object, found {type(record).__name__}")
        raw, latencies = record.get("raw"), None
        if isinstance(raw, dict) and "latencies_ns" in raw:
            values = raw["latencies_ns"]
            if not isinstance(values, (list, array)):
                raise InvalidResult(f"{where}: /raw/latencies_ns: expected an array, found {type(values).__name__}")
            latencies = int64s(values, where)
        elif isinstance(raw, dict) and "latencies_ns_file" in raw:
            name = raw["latencies_ns_file"]
            if base is None:
                raise InvalidResult(f"{where}: /raw/latencies_ns_file: latencies must be sent inline here (raw.latencies_ns)")
            if not isinstance(name, str) or "/" in name or "\\" in name or name in ("", ".", ".."):
                raise InvalidResult(f"{where}: /raw/latencies_ns_file: expected a file beside the record, found {name!r}")
            latencies = read_side(base / name, raw, where)
        data = dict(record)
        data["raw"] = None if latencies is None else side_raw(encode(latencies))  # {format, count, sha256}
        check = data if latencies is None else {**data, "raw": {"latencies_ns_file": "x" + SIDE_SUFFIX, **data["raw"]}}
        found = problems(check, where)
        if found:
            raise InvalidResult(found[0] + (f" (+{len(found) - 1} more)" if len(found) > 1 else ""))
    except InvalidResult as exc:
        if strict:
            raise
        reporter().warning(f"{exc.message} (skipped)")
        return None
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return Item(where, data, latencies, hashlib.sha256(canonical).hexdigest())


def collect(sources=None) -> list[Item]:
    """The valid records of sources (files or folders, searched recursively for *.json, as
    cr dashboard build reads them; default: the local results store), each once. Invalid
    ones are skipped with a warning naming them."""
    if not sources:
        from ..results.store import default_store

        root = default_store().root
        if not root.is_dir():
            raise CRError(f"there are no results in {root} yet",
                          hint="run cr benchmark ... first, or pass files or folders of results with --results")
        sources = [root]
    items: dict[str, Item] = {}
    for path in _files(sources):
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError) as exc:
            what = f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}" if isinstance(exc, json.JSONDecodeError) \
                else f"cannot read it ({getattr(exc, 'strerror', None) or exc})"
            reporter().warning(f"{path}: {what} (skipped)")
            continue
        records = data if isinstance(data, list) else [data]
        for i, record in enumerate(records):
            item = prepare(record, f"{path}" + (f" (record {i})" if isinstance(data, list) else ""), path.parent)
            if item is not None:
                items.setdefault(item.digest, item)
    return list(items.values())


def _files(sources) -> list[Path]:
    found = []
    for source in sources:
        root = Path(source).expanduser().absolute()
        if root.is_file():
            found.append(root)
        elif root.is_dir():
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not d.endswith(".loadgen"))
                found += [Path(folder) / n for n in sorted(files) if n.endswith(".json") and not n.startswith(".")]
        else:
            raise CRError(f"results path {root} does not exist", hint="pass a result file or a folder of them with --results")
    return found


def label(record: dict) -> str:
    """'lenet-digits / onnxruntime': what a result is of, for commit messages and reports."""
    from ..results.summary import summarize

    s = summarize(record)
    target = s.get("solution") or s.get("model") or "?"
    return f"{target.split(':', 1)[-1]} / {s.get('backend') or '?'}"


# -- git ---------------------------------------------------------------------------------
@dataclass
class PublishReport:
    url: str
    branch: str
    added: int = 0  # records new to the repository
    duplicates: int = 0  # records it already held
    commit: str | None = None  # None: nothing to publish
    attempts: int = 0
    by_label: dict = field(default_factory=dict)  # 'solution / backend' -> records added
    clone: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def cache_dir(url: str, home: Path | None = None) -> Path:
    from ..paths import ensure_home

    return (home or ensure_home()) / "publish" / hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


def publish_git(url: str, branch: str | None = None, sources=None, message: str | None = None,
                home: Path | None = None) -> PublishReport:
    """Publish the records of sources (default: the local store) to branch of the git repository
    at url (None: the remote's default branch, its HEAD; see default_branch), with the
    dashboard rebuilt into site/. See the module doc."""
    from filelock import FileLock

    items = collect(sources)
    clone = cache_dir(url, home)
    clone.parent.mkdir(parents=True, exist_ok=True)
    report = PublishReport(url=url, branch=branch or "", clone=str(clone))
    with FileLock(str(clone) + ".lock"):
        repo = _open_clone(clone, url)
        with repo:
            if not branch:
                branch = report.branch = default_branch(repo, url)
            for attempt in range(1, MAX_ATTEMPTS + 1):
                report.attempts = attempt
                _sync(repo, url, branch)
                added, dupes = _write_records(clone, items)
                report.added, report.duplicates = len(added), dupes
                report.by_label = _count(added)
                if not added:
                    return report
                _build_site(clone)
                sha = _commit(repo, report, message)
                if _push(repo, url, branch):
                    report.commit = sha
                    return report
                reporter().info(f"{url} moved on while publishing (attempt {attempt} of {MAX_ATTEMPTS}); "
                                "starting again from its new commit")
                if attempt < MAX_ATTEMPTS:
                    time.sleep(BACKOFF_S * 2 ** (attempt - 1) * random.uniform(0.5, 1.5))
    raise PublishError(f"cannot publish to {url}: the push was rejected as non-fast-forward {MAX_ATTEMPTS} times "
                       "(others keep pushing to it)", hint="run cr publish again in a moment")


FALLBACK_BRANCH = "main"


def default_branch(repo, url: str) -> str:
    """The branch the remote's HEAD names: what a clone of it checks out and a forge shows.

    `git ls-remote --symref origin HEAD` answers for a remote with commits. An empty one
    (a fresh `git init --bare --initial-branch=trunk`) has an unborn HEAD, which ls-remote
    does not print but a clone learns over protocol v2: its name is read from a clone of
    the empty remote (nothing to download). FALLBACK_BRANCH ("main") when the remote names
    none: an empty remote that does not say (protocol v0), or a HEAD naming no branch
    while other branches exist (what publishing to main kept there stays found).
    """
    import tempfile

    from ..store.gitrepo import git_module

    git = git_module()
    try:
        listed = repo.git.ls_remote("--symref", "origin", "HEAD")
        heads = "" if listed.strip() else repo.git.ls_remote("--heads", "origin")
    except git.GitCommandError as exc:
        raise _error(exc, "fetch from", url) from None
    for line in listed.splitlines():
        target, _, name = line.removeprefix("ref:").strip().partition("\t")
        if line.startswith("ref:") and name.strip() == "HEAD" and target.startswith("refs/heads/"):
            return target.removeprefix("refs/heads/")
    if listed.strip() or heads.strip():
        return FALLBACK_BRANCH
    with tempfile.TemporaryDirectory(prefix=".head-", dir=Path(repo.working_dir).parent) as tmp:
        try:
            repo.git.execute(["git", "-c", f"init.defaultBranch={FALLBACK_BRANCH}", "clone", "-q", "--no-checkout",
                              "--", url, str(Path(tmp) / "probe")])
            head = git.Git(str(Path(tmp) / "probe")).execute(["git", "symbolic-ref", "-q", "HEAD"], env=_git_env())
        except git.GitCommandError as exc:
            raise _error(exc, "fetch from", url) from None
    head = head.strip()
    return head.removeprefix("refs/heads/") if head.startswith("refs/heads/") else FALLBACK_BRANCH


def fetch_results(url: str, branch: str = "main", home: Path | None = None) -> Path:
    """The results/ folder of the git results repository at url, fetched into the publish
    cache (the same clone `cr publish --git` uses): what `cr dashboard build --from-git` reads."""
    from filelock import FileLock

    clone = cache_dir(url, home)
    clone.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(clone) + ".lock"):
        repo = _open_clone(clone, url)
        with repo:
            if not _sync(repo, url, branch):
                raise PublishError(f"{url} has no branch {branch!r}", hint="give --branch, or publish to it first (cr publish --git URL)")
    results = clone / "results"
    if not results.is_dir():
        raise PublishError(f"{url} ({branch}) holds no results/ folder", hint="is it a results repository made by cr publish --git?")
    return results


def _git_env() -> dict:
    from ..store.gitrepo import GIT_ENV

    return dict(GIT_ENV)


def _error(exc, action: str, url: str) -> PublishError:
    """A GitCommandError as one line: unreachable, refused credentials, or git's own words."""
    stderr = str(getattr(exc, "stderr", "") or exc)
    low = stderr.lower()
    lines = [ln.strip().removeprefix("stderr:").strip().strip("'").strip() for ln in stderr.splitlines() if ln.strip()]
    fatal = [ln for ln in lines if ln.lower().startswith(("fatal:", "error:", "remote:"))]
    detail = fatal[0] if fatal else (lines[-1] if lines else "git failed")  # the first is the most specific
    if any(s in low for s in ("authentication failed", "could not read username", "could not read password",
                              "terminal prompts disabled", "permission denied", "error: 403", "error: 401",
                              "access denied", "invalid username or password", "invalid credentials")):
        return PublishError(f"cannot {action} {url}: authentication failed ({detail})",
                            hint="git runs non-interactively: configure a credential helper, an SSH key or a token in the URL")
    if any(s in low for s in ("could not resolve host", "connection refused", "connection timed out", "could not read from remote",
                              "does not appear to be a git repository", "not found", "unable to access",
                              "no such file or directory", "network is unreachable", "failed to connect")):
        return PublishError(f"cannot reach {url}: {detail}", hint="check the URL and the network; the repository must exist")
    return PublishError(f"cannot {action} {url}: {detail}", hint="see git's message above")


def _open_clone(clone: Path, url: str):
    """The cached clone of url (initialised when missing or not a clone of url)."""
    from ..store.gitrepo import git_module

    git = git_module()
    if (clone / ".git").is_dir():
        try:
            repo = git.Repo(clone)
            if repo.remotes and repo.remotes.origin.url == url:
                repo.git.update_environment(**_git_env())
                return repo
            repo.close()
        except (git.InvalidGitRepositoryError, git.NoSuchPathError, AttributeError, ValueError):
            pass
        shutil.rmtree(clone)
    clone.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(clone)
    repo.git.update_environment(**_git_env())
    repo.git.remote("add", "origin", url)
    return repo


def _sync(repo, url: str, branch: str) -> bool:
    """Fetch origin and make the work tree exactly origin/branch (an empty orphan branch when
    it does not exist yet); ignored files (the builder's state) stay. True if it existed."""
    git = repo.git
    from ..store.gitrepo import git_module

    try:
        git.fetch("--prune", "origin", "+refs/heads/*:refs/remotes/origin/*")
    except git_module().GitCommandError as exc:
        raise _error(exc, "fetch from", url) from None
    remote = f"refs/remotes/origin/{branch}"
    try:
        git.rev_parse("--verify", "--quiet", remote)
        exists = True
    except git_module().GitCommandError:
        exists = False
    if exists:
        git.checkout("--force", "-B", branch, remote)
        git.reset("--hard", remote)
    else:
        try:  # a local branch left from before (the remote one was deleted) would block --orphan
            git.checkout("--force", "--detach")
            git.branch("-D", branch)
        except git_module().GitCommandError:
            pass
        git.checkout("--force", "--orphan", branch)
        try:
            git.rm("-r", "-q", "--cached", "--ignore-unmatch", ".")
        except git_module().GitCommandError:
            pass
    git.clean("-f", "-d", "-q")  # not -x: the builder's ignored state makes rebuilds incremental
    return exists


def _write_records(clone: Path, items: list[Item]) -> tuple[list[Item], int]:
    folder = clone / "results"
    folder.mkdir(exist_ok=True)
    added, dupes = [], 0
    for item in items:
        path = folder / f"{item.digest}.json"
        if path.is_file():
            dupes += 1
            continue
        text, side = item.stored()
        if side is not None:
            (folder / f"{item.digest}{SIDE_SUFFIX}").write_bytes(side)
        path.write_bytes(text)
        added.append(item)
    ignore = clone / ".gitignore"
    lines = ignore.read_text(encoding="utf-8").splitlines() if ignore.is_file() else []
    missing = [p for p in IGNORED if p not in lines]
    if missing:
        ignore.write_text("\n".join(lines + ["# private state of cr dashboard build (cr publish)"] + missing) + "\n",
                          encoding="utf-8")
    return added, dupes


def _count(items: list[Item]) -> dict:
    counts: dict[str, int] = {}
    for item in items:
        key = label(item.record)
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def _build_site(clone: Path) -> None:
    from .build import CACHE_FILE, build

    site = clone / "site"
    if site.exists() and not (site / CACHE_FILE).is_file():
        shutil.rmtree(site)  # a fresh clone: the builder's state is not in git, so build it all again
    build(clone / "results", site)


def _commit(repo, report: PublishReport, message: str | None) -> str:
    git = repo.git
    git.add("-A", "--", ".gitignore", "results", "site")
    lines = [message or f"publish {report.added} result{'s' if report.added != 1 else ''}", ""]
    lines += [f"- {key}: {n}" for key, n in report.by_label.items()]
    env = {}
    try:
        git.config("user.email")
    except Exception:  # no identity configured (CI, a fresh container): commit as cr
        env = {"GIT_AUTHOR_NAME": "cr publish", "GIT_AUTHOR_EMAIL": "cr-publish@localhost",
               "GIT_COMMITTER_NAME": "cr publish", "GIT_COMMITTER_EMAIL": "cr-publish@localhost"}
    git.commit("-q", "-m", "\n".join(lines) + "\n", env={**os.environ, **_git_env(), **env})
    return repo.head.commit.hexsha


def _push(repo, url: str, branch: str) -> bool:
    """Push HEAD to branch; False when rejected because the branch moved on."""
    from ..store.gitrepo import git_module

    try:
        repo.git.push("--porcelain", "origin", f"HEAD:refs/heads/{branch}")
        return True
    except git_module().GitCommandError as exc:
        text = f"{exc.stdout or ''}\n{exc.stderr or ''}".lower()
        if any(s in text for s in ("non-fast-forward", "fetch first", "[rejected]", "stale info", "cannot lock ref",
                                   "failed to update ref")):
            return False
        raise _error(exc, "push to", url) from None
