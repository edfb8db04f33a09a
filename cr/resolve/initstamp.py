"""The ready stamp: proof, from stats alone, that `cr init solution NAME` has nothing to do.

A warm `cr init solution NAME` verifies the solution's components (sha256 of every file),
resolves them through the index, checks the platform constraints, finds the cached lock
still current (cr.resolve.lock._state_key: component metas, every recipe, the registered
software envs, the package directories of the interpreter) and its software still there,
and finds nothing to install or compile. When such a run ends having done nothing and said
nothing, write() records what it read: every path that decision depends on with its stat
stamp, the platform it ran on, and the report it printed. check() then answers the same
command from the stamp (cli/fastinit.py, before click, the index, the resolver or the
store are imported) when every path stats the same, the interpreter and cr are the same
and the platform (detected again, as the slow path does) has the same fingerprint,
markers and capabilities; any difference, or a stamp it cannot read, falls back to the
full init, which writes a new stamp when it again finds nothing to do.

What a stamp covers (each a stat stamp, None for a path where nothing was found):
- CR_HOME/repos.json and the local repo's cr-repo.json (which repositories, their order,
  layout and trust), and each repository's root;
- for every component the lock lists (solution, model, dataset, ...) and the model a
  declared compile produces: in every repository, the directory where a component of
  that kind and name may live (Repository.scope), its subdirectories and their metas, so
  a new version, a namesake in another repository or an edited meta is a difference;
- every file of the verified components (what _verify hashes);
- in every repository, every software meta (the recipes the lock's cache key covers);
- the registered software envs (CR_HOME/envs), the directories of the interpreter's
  packages (what the lock's cache key stats), each prefix and location the lock uses;
- the lock file and the interpreter.

Stamps follow cr.store.snapshot: directories (inode, mtime, ctime), files (mtime, size,
inode, ctime); ctime cannot be set back, so an edit that restores size and mtime is still
seen. A stamp is racy, and not used, while anything it recorded changed within RACY_NS
of its writing (a second edit in the same timestamp tick could keep every stamp).

This module imports only the standard library and cr.platform at check time.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat as stat_module
import sys
import time

FORMAT = 1
RACY_NS = 2_000_000_000  # as the index's (cr.store.snapshot.RACY_NS): file systems and clocks may be coarse


def _stamp(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    if stat_module.S_ISDIR(st.st_mode):
        return ["d", st.st_ino, st.st_mtime_ns, st.st_ctime_ns]
    return ["f", st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]


def stamp_file(home: str, source: str) -> str:
    """Where the stamp of `cr init solution SOURCE` run by this interpreter lives."""
    key = hashlib.sha256(json.dumps([source, sys.executable]).encode()).hexdigest()[:16]
    return os.path.join(home, "cache", "init", key + ".json")


def _platform_facts() -> dict | None:
    """What the full path's decision reads of the platform; None when detecting it had
    something to report (the full path would show it)."""
    from ..events import CollectingReporter, set_reporter
    from ..platform import current

    told = CollectingReporter()
    previous = set_reporter(told)
    try:
        here = current()
        facts = {"fingerprint": here.fingerprint, "markers": here.markers(), "capabilities": sorted(here.capabilities())}
    finally:
        set_reporter(previous)
    return None if told.warnings or told.infos else facts


def check(home: str, source: str) -> dict | None:
    """The report a full `cr init solution SOURCE` would print (without 'seconds'), when
    the stamp proves nothing changed since it was written; None otherwise."""
    from ..__about__ import __version__

    try:
        with open(stamp_file(home, source), encoding="utf-8") as f:
            stamp = json.load(f)
        if (stamp.get("format") != FORMAT or stamp.get("cr_version") != __version__ or stamp.get("source") != source
                or stamp.get("executable") != sys.executable):
            return None
        oldest_safe = stamp["written_ns"] - RACY_NS
        for path, recorded in stamp["paths"]:
            if recorded is not None and max(recorded[2 if recorded[0] == "d" else 1], recorded[-1]) >= oldest_safe:
                return None  # racy: changed too close to when the stamp was written
            if _stamp(path) != recorded:
                return None
        facts = _platform_facts()
        if facts is None or stamp["platform"] != facts:
            return None
        report = stamp["report"]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None  # no stamp, or one this version cannot read: the full init decides
    return report if isinstance(report, dict) else None


# ------------------------------------------------------------------- writing (slow path)

def _walk(paths: list[str], top: str, meta_file: str, depth: int) -> None:
    """top, its meta file, and (depth levels down) every subdirectory and its meta file."""
    paths += [top, os.path.join(top, meta_file)]
    if depth <= 0:
        return
    try:
        entries = sorted(e.path for e in os.scandir(top) if e.is_dir(follow_symlinks=True))
    except OSError:
        return
    for entry in entries:
        _walk(paths, entry, meta_file, depth - 1)


def _tree(paths: list[str], top: str) -> None:
    """top and everything under it."""
    paths.append(top)
    for root, dirs, files in os.walk(top):
        dirs.sort()
        paths += [os.path.join(root, d) for d in dirs] + [os.path.join(root, f) for f in sorted(files)]


def inputs(the_lock: dict, verified: list[dict], extra_refs: list[str] = ()) -> list[str]:
    """Every path whose state decides that init has nothing to do (see the module's docstring)."""
    from ..paths import cr_home
    from ..software.envs import list_envs
    from ..store.refs import parse_ref
    from ..store.registry import REGISTRY_FILE, REPO_FILE, all_repos, local_repo_path
    from .lock import usable_envs

    home = cr_home()
    paths = [str(home / REGISTRY_FILE), str(local_repo_path(home) / REPO_FILE)]
    named = set()
    for ref in [c.get("ref") for c in the_lock.get("components") or ()] + list(extra_refs):
        if isinstance(ref, str):
            parsed = parse_ref(ref)
            named.add((parsed.kind, parsed.name))
    for repo in all_repos(home):
        paths += [str(repo.path), str(repo.path / REPO_FILE)]
        for kind, name in sorted(named):
            scope = repo.scope(kind, name)
            if scope is not None:
                _walk(paths, scope.rstrip(os.sep), repo.meta_file, 1)
        software = repo.scope("software", None)
        if software is not None:
            _walk(paths, software.rstrip(os.sep), repo.meta_file, 1 if repo.layout == "name" else 2)
    for info in verified:
        paths.append(str(info["meta_path"]))
        paths += [os.path.join(str(info["path"]), rel) for rel in sorted((info["meta"].get("files") or {}))]
    _tree(paths, str(home / "envs"))
    interpreter = the_lock.get("interpreter") or sys.executable
    fingerprint = (the_lock.get("platform") or {}).get("fingerprint")
    for env in usable_envs(list_envs(platform=fingerprint), interpreter):
        if env.interpreter and env.location:
            paths.append(os.path.dirname(env.location))
    for sw in the_lock.get("software") or ():
        for key in ("prefix", "location"):
            if isinstance(sw, dict) and isinstance(sw.get(key), str) and sw[key]:
                paths.append(sw[key])
    paths += [the_lock["path"], interpreter, sys.executable]
    return list(dict.fromkeys(paths))


def write(home: str, source: str, report: dict, the_lock: dict, verified: list[dict], extra_refs: list[str] = ()) -> None:
    """Record that `cr init solution SOURCE` had nothing to do and printed report. Best
    effort: a stamp that cannot be written only means the next run takes the full path."""
    from ..__about__ import __version__
    from ..fsutil import atomic_write_json
    from pathlib import Path

    written = time.time_ns()  # before the stats: a change after them is racy or seen
    facts = _platform_facts()
    if facts is None:
        forget(home, source)
        return
    stamp = {
        "format": FORMAT, "cr_version": __version__, "source": source, "executable": sys.executable,
        "written_ns": written, "platform": facts,
        "paths": [[p, _stamp(p)] for p in inputs(the_lock, verified, extra_refs)],
        "report": {k: v for k, v in report.items() if k != "seconds"},
    }
    from ..errors import CRError

    target = Path(stamp_file(home, source))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(target, stamp, durable=False)
    except (OSError, CRError):
        pass


def forget(home: str, source: str) -> None:
    """Remove the stamp of `cr init solution SOURCE` (a run that did something)."""
    try:
        os.unlink(stamp_file(home, source))
    except OSError:
        pass
