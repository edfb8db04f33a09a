"""The index's warm path (cr.store.snapshot): a refresh that only confirms stamps must see
every change a full walk sees: in-place edits within the same second, new and removed
components, files replaced by directories and back, changed repositories."""
from __future__ import annotations

import dataclasses
import json
import os
import random
import secrets
import shutil
import time
from pathlib import Path

import pytest

from cr.store import snapshot
from cr.store.index import Index
from cr.store.repository import read_repo

from conftest import make_component, make_repo, write_json


def later(monkeypatch, seconds: float = 3) -> None:
    """Make the index believe seconds have passed (every file is then out of the racy window)."""
    import cr.store.index as index_module

    real = time.time_ns
    monkeypatch.setattr(index_module.time, "time_ns", lambda: real() + int(seconds * 1e9))


class Walks:
    """Counts full walks (Index._walk): a refresh the snapshot answers makes none."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = Index._walk

        def walk(index, *args):
            self.count += 1
            return real(index, *args)

        monkeypatch.setattr(Index, "_walk", walk)


def index_of(home: Path, *repos: Path) -> Index:
    return Index(home, [read_repo(p, "dir") for p in repos])


def state(index: Index, kind: str | None = None) -> tuple[list, list]:
    """What a user sees: components with their fields, and the invalid metas."""
    found = sorted((c.ref, c.repo, c.location, c.tags, c.description) for c in index.components(kind=kind))
    return found, sorted(p for _, p, _ in index.invalid())


def rewrite_in_place(meta: Path, description: str, keep_mtime: bool = True) -> None:
    """Edit a meta in place (same inode), keeping its size and, like an edit within the same
    timestamp tick, its mtime: only the ctime tells."""
    st = os.stat(meta)
    data = json.loads(meta.read_text())
    data["description"] = description
    text = json.dumps(data, indent=2)
    text = text + " " * (st.st_size - len(text) - 1) + "\n"
    assert len(text) == st.st_size, "the new description must not be longer than the old one"
    with open(meta, "r+", encoding="utf-8") as f:
        f.write(text)
    if keep_mtime:
        os.utime(meta, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(meta)
    assert (after.st_ino, after.st_size) == (st.st_ino, st.st_size)
    assert not keep_mtime or after.st_mtime_ns == st.st_mtime_ns


@pytest.fixture
def store(tmp_path, cr_home, monkeypatch):
    repo = make_repo(tmp_path / "r", "r")
    for i in range(6):
        make_component(repo, "model", f"m{i}", description="x" * 40)
    make_component(repo, "model", "m0", "2.0.0", description="x" * 40)
    make_component(repo, "dataset", "d", description="x" * 40)
    later(monkeypatch)
    index = index_of(cr_home, repo)
    index.refresh()  # a full walk; everything is settled, so it leaves a snapshot
    yield repo, index
    index.close()


@pytest.mark.parametrize("kind", [None, "model"])
def test_a_warm_refresh_only_confirms_stamps(store, monkeypatch, kind):
    repo, index = store
    index.refresh(kind)  # the first of this scope walks and leaves its snapshot
    walks = Walks(monkeypatch)
    listed = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path=".": listed.append(path) or real_scandir(path))
    before = state(index, kind)
    for _ in range(3):
        stats = index.refresh(kind)
        assert (stats.scanned, stats.parsed, stats.removed) == (7 if kind else 8, 0, 0)
    assert walks.count == 0 and listed == []
    assert state(index, kind) == before
    # another process (a new connection) uses it too
    other = index_of(index.home, repo)
    other.refresh(kind)
    other.close()
    assert walks.count == 0


@pytest.mark.parametrize("keep_mtime", [True, False])
def test_an_in_place_edit_within_the_same_second_is_seen(store, monkeypatch, keep_mtime):
    repo, index = store
    meta = repo / "model" / "m3" / "1.0.0" / "meta.json"
    rewrite_in_place(meta, "edited", keep_mtime=keep_mtime)
    walks = Walks(monkeypatch)
    stats = index.refresh()
    # the one meta whose stamp differs is read again alone: no walk
    # (compared by content first when its mtime and size were kept)
    assert walks.count == 0 and (stats.parsed, stats.rehashed, stats.scanned) == (1, int(keep_mtime), 8)
    assert index.components(name="m3")[0].description == "edited"
    index.refresh("model")
    assert index.components(kind="model", name="m3")[0].description == "edited"


def test_new_and_removed_components_are_seen(store, monkeypatch):
    repo, index = store
    index.refresh("model")
    make_component(repo, "model", "m1", "3.0.0")        # a new version of a known name
    make_component(repo, "model", "fresh")              # a new name
    make_component(repo, "solution", "s")               # a new kind directory
    index.refresh("model")
    refs = {c.ref for c in index.components(kind="model")}
    assert {"model:m1@3.0.0", "model:fresh@1.0.0"} <= refs
    index.refresh()
    assert "solution:s@1.0.0" in {c.ref for c in index.components()}
    index.refresh()  # settles (later() makes every file old enough): a snapshot again
    shutil.rmtree(repo / "model" / "m2")                 # a whole component
    (repo / "model" / "m4" / "1.0.0" / "meta.json").unlink()  # a meta, its directory kept
    shutil.rmtree(repo / "model" / "m0" / "2.0.0")       # one version of two
    index.refresh("model")
    refs = {c.ref for c in index.components(kind="model")}
    assert not refs & {"model:m2@1.0.0", "model:m4@1.0.0", "model:m0@2.0.0"}
    assert "model:m0@1.0.0" in refs
    index.refresh()
    assert not {c.ref for c in index.components()} & {"model:m2@1.0.0", "model:m4@1.0.0", "model:m0@2.0.0"}


def test_a_meta_replaced_by_a_directory_and_back(store):
    repo, index = store
    meta = repo / "model" / "m5" / "1.0.0" / "meta.json"
    text = meta.read_text()
    meta.unlink()
    meta.mkdir()
    index.refresh()
    assert "model:m5@1.0.0" not in {c.ref for c in index.components()}
    assert [p for _, p, _ in index.invalid()] == [str(meta)]  # reported, not silently lost
    index.refresh()
    meta.rmdir()
    meta.write_text(text.replace("x" * 40, "back"))
    index.refresh()
    assert index.components(name="m5")[0].description == "back"
    assert index.invalid() == []


def test_a_version_directory_replaced_by_a_file(store):
    repo, index = store
    version_dir = repo / "model" / "m1" / "1.0.0"
    shutil.rmtree(version_dir)
    version_dir.write_text("not a directory\n")
    index.refresh("model")
    assert "model:m1@1.0.0" not in {c.ref for c in index.components(kind="model")}
    index.refresh("model")
    version_dir.unlink()
    make_component(repo, "model", "m1", description="again")
    index.refresh("model")
    assert index.components(kind="model", name="m1")[0].description == "again"


def test_a_meta_replaced_by_another_file_with_the_same_stamp(store):
    repo, index = store
    meta = repo / "model" / "m2" / "1.0.0" / "meta.json"
    st = os.stat(meta)
    other = meta.with_name("meta.json.new")
    other.write_text(meta.read_text().replace("x" * 40, "y" * 40))
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(other, meta)  # another inode, same size and mtime; the directory changed
    version_dir = meta.parent
    os.utime(version_dir, ns=(st.st_atime_ns, os.stat(version_dir).st_mtime_ns))
    index.refresh()
    assert index.components(name="m2")[0].description == "y" * 40


def test_a_changed_repository_is_seen(tmp_path, store, monkeypatch):
    repo, index = store
    # the same directory registered under another name: refs now come from it
    renamed = Index(index.home, [dataclasses.replace(read_repo(repo, "dir"), name="renamed")])
    renamed.refresh()
    assert {c.repo for c in renamed.components()} == {"renamed"}
    renamed.close()
    # a second repository added in front, then removed again
    second = make_repo(tmp_path / "second", "second")
    make_component(second, "model", "other")
    both = index_of(index.home, second, repo)
    both.refresh("model")
    assert "model:other@1.0.0" in {c.ref for c in both.components(kind="model")}
    both.close()
    alone = index_of(index.home, repo)
    alone.refresh("model")
    assert "model:other@1.0.0" not in {c.ref for c in alone.components(kind="model")}
    alone.close()


def test_nothing_is_trusted_while_files_are_fresh(tmp_path, cr_home, monkeypatch):
    repo = make_repo(tmp_path / "r", "r")
    make_component(repo, "model", "m")
    index = index_of(cr_home, repo)
    walks = Walks(monkeypatch)
    for _ in range(3):  # changed less than RACY_NS ago: every refresh walks (and re-reads)
        index.refresh()
    assert walks.count == 3
    assert index.db.execute("SELECT COUNT(*) FROM snapshots").fetchone()[0] == 0
    later(monkeypatch)
    index.refresh()  # settles them and takes a snapshot
    index.refresh()
    assert walks.count == 4
    index.close()


def test_a_damaged_snapshot_means_a_walk(store, monkeypatch):
    repo, index = store
    index.db.execute("UPDATE snapshots SET data = ?", (b"\x00garbage",))
    walks = Walks(monkeypatch)
    assert index.refresh().scanned == 8
    assert walks.count == 1
    assert snapshot.unchanged(b"", "[]") is None and snapshot.unchanged(None, "[]") is None


def test_writes_drop_the_snapshots(store, monkeypatch):
    repo, index = store
    index.refresh("model")
    assert index.db.execute("SELECT COUNT(*) FROM snapshots").fetchone()[0] == 2
    meta = make_component(repo, "model", "added")
    index.add(index.repos[0], meta)
    assert index.db.execute("SELECT COUNT(*) FROM snapshots").fetchone()[0] == 0


def test_name_layout_repository(tmp_path, cr_home, monkeypatch):
    repo = make_repo(tmp_path / "acts", "acts", layout="name", kind="action")
    for n in ("a", "b"):
        write_json(repo / n / "meta.json", {"uid": secrets.token_hex(8), "kind": "action", "name": n, "version": "1.0.0",
                                           "tags": [], "description": "z" * 20, "entry": "pkg.mod:main"})
    later(monkeypatch)
    index = index_of(cr_home, repo)
    problems = index.refresh("action")
    assert problems.invalid == 0, index.invalid()
    walks = Walks(monkeypatch)
    index.refresh("action")
    assert walks.count == 0
    rewrite_in_place(repo / "a" / "meta.json", "edited")
    index.refresh("action")
    assert index.components(kind="action", name="a")[0].description == "edited"
    write_json(repo / "c" / "meta.json", {"uid": secrets.token_hex(8), "kind": "action", "name": "c", "version": "1.0.0",
                                         "tags": [], "entry": "pkg.mod:main"})
    index.refresh("action")
    assert {c.name for c in index.components(kind="action")} == {"a", "b", "c"}
    index.close()


def test_random_changes_are_seen_as_a_full_walk_sees_them(tmp_path, cr_home, monkeypatch):
    """After each random change, the index with its snapshots answers exactly what an index
    built from nothing answers."""
    rng = random.Random(18)
    repo = make_repo(tmp_path / "r", "r")
    metas = [make_component(repo, rng.choice(("model", "dataset")), f"c{i}", description="d" * 30) for i in range(12)]
    later(monkeypatch)
    index = index_of(cr_home, repo)
    index.refresh()

    def live_metas():
        return sorted(p for p in repo.glob("*/*/*/meta.json") if p.is_file())

    def change(step: int) -> str:
        op = rng.choice(("edit", "edit_keep", "add_version", "add_name", "rm_version", "rm_meta", "meta_dir", "new_kind"))
        present = live_metas()
        if op in ("edit", "edit_keep") and present:
            rewrite_in_place(rng.choice(present), f"e{step}", keep_mtime=op == "edit_keep")
        elif op == "add_version" and present:
            target = rng.choice(present)
            kind, name = target.parts[-4], target.parts[-3]
            make_component(repo, kind, name, f"{step + 2}.0.0", description="d" * 30)
        elif op == "add_name":
            make_component(repo, "model", f"n{step}", description="d" * 30)
        elif op == "rm_version" and present:
            shutil.rmtree(rng.choice(present).parent)
        elif op == "rm_meta" and present:
            rng.choice(present).unlink()
        elif op == "meta_dir" and present:
            victim = rng.choice(present)
            victim.unlink()
            victim.mkdir()
        elif op == "new_kind":
            make_component(repo, rng.choice(("solution", "platform")), f"k{step}", description="d" * 30)
        return op

    for step in range(40):
        op = change(step)
        kind = rng.choice((None, "model", "dataset"))
        index.refresh(kind)
        got = state(index, kind)
        fresh_home = tmp_path / f"fresh-{step}"
        fresh = index_of(fresh_home, repo)
        fresh.refresh(kind)
        want = state(fresh, kind)
        fresh.close()
        shutil.rmtree(fresh_home)
        assert got[0] == want[0], f"step {step} ({op}), scope {kind}"
        if kind is None:
            assert got[1] == want[1], f"step {step} ({op})"
    index.close()
    assert metas  # the tree started populated


def test_without_stat_relative_to_a_descriptor(store, monkeypatch):
    """Where os.stat takes no dir_fd (Windows), the check stats whole paths, with the same answers."""
    repo, index = store
    monkeypatch.setattr(os, "supports_dir_fd", set())
    walks = Walks(monkeypatch)
    assert index.refresh().scanned == 8 and walks.count == 0
    rewrite_in_place(repo / "dataset" / "d" / "1.0.0" / "meta.json", "edited")
    assert index.refresh().parsed == 1
    assert walks.count == 0 and index.components(kind="dataset")[0].description == "edited"


def test_cli_sees_an_edit_made_right_after_a_warm_search(tmp_path, run_cr):
    """Real time, real processes: the command after a warm one sees an in-place edit that
    kept the meta's size and mtime, and a component added meanwhile."""
    repo = make_repo(tmp_path / "r", "r")
    metas = [make_component(repo, "model", f"m{i}", tags=["t"], description="before-" + "x" * 20) for i in range(5)]
    assert run_cr("repo", "add", repo).returncode == 0
    assert run_cr("find", "model", "--tags", "t").returncode == 0
    time.sleep(2.3)  # out of the racy window: the next search settles the index and takes a snapshot
    first = run_cr("find", "model", "--tags", "t", "--json")
    assert first.returncode == 0 and len(json.loads(first.stdout)) == 5
    warm = run_cr("find", "model", "--tags", "t", "--json")  # answered by the snapshot
    assert json.loads(warm.stdout) == json.loads(first.stdout)

    def found():
        return {c["name"]: c["description"] for c in json.loads(run_cr("find", "model", "--tags", "t", "--json").stdout)}

    rewrite_in_place(metas[2], "after")
    assert found()["m2"] == "after"
    make_component(repo, "model", "m9", tags=["t"])
    assert sorted(found()) == ["m0", "m1", "m2", "m3", "m4", "m9"]


@pytest.fixture
def shared_out(monkeypatch):
    """The check shared out over three processes whatever the number of paths and CPUs;
    yields the list of the children it forked."""
    monkeypatch.setattr(snapshot, "PARALLEL_MIN", 2)
    monkeypatch.setattr(snapshot, "_usable_cpus", lambda: 3)
    real_single = snapshot._single_threaded
    monkeypatch.setattr(snapshot, "_single_threaded", lambda: True)  # whatever other tests left running
    monkeypatch.setattr(snapshot, "_real_single_threaded", real_single, raising=False)
    forked = []
    real_fork = os.fork

    def fork():
        pid = real_fork()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return forked


def test_a_shared_out_check_confirms_an_unchanged_store(store, shared_out, monkeypatch):
    repo, index = store
    walks = Walks(monkeypatch)
    assert index.refresh().scanned == 8
    assert walks.count == 0 and len(shared_out) == 2


@pytest.mark.parametrize("which", range(8))
def test_a_shared_out_check_sees_an_edit_in_any_share(store, shared_out, monkeypatch, which):
    """Whichever process's share the edited meta falls in, the refresh sees it (and reads
    only it again)."""
    repo, index = store
    meta = sorted(repo.glob("*/*/*/meta.json"))[which]
    rewrite_in_place(meta, "edited")
    walks = Walks(monkeypatch)
    assert index.refresh().parsed == 1
    assert walks.count == 0 and len(shared_out) == 2
    kind, name, version = meta.parts[-4:-1]
    assert [c.description for c in index.components(kind=kind, name=name) if c.version == version] == ["edited"]
    for pid in shared_out:  # every child was waited for
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_a_child_that_fails_means_a_walk(store, shared_out, monkeypatch):
    """A child that cannot answer (here: its check raises) is no 'unchanged'."""
    repo, index = store
    parent = os.getpid()
    real_diffs = snapshot._share_diffs

    def diffs(*args):
        if os.getpid() != parent:
            raise RuntimeError("the child's check broke")
        return real_diffs(*args)

    monkeypatch.setattr(snapshot, "_share_diffs", diffs)
    walks = Walks(monkeypatch)
    assert index.refresh().scanned == 8
    assert walks.count == 1 and len(shared_out) == 2


def test_no_fork_beside_another_thread(store, shared_out, monkeypatch):
    """A process with another thread (a library's, a server's) checks alone: a child of a
    fork would hold copies of that thread's locks."""
    import threading

    repo, index = store
    monkeypatch.setattr(snapshot, "_single_threaded", snapshot._real_single_threaded)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    try:
        walks = Walks(monkeypatch)
        assert index.refresh().scanned == 8
        rewrite_in_place(repo / "model" / "m5" / "1.0.0" / "meta.json", "edited")
        index.refresh()
    finally:
        stop.set()
        thread.join()
    assert shared_out == [] and walks.count == 0
    assert index.components(kind="model", name="m5")[0].description == "edited"


def test_random_changes_with_the_check_shared_out(tmp_path, cr_home, monkeypatch, shared_out):
    test_random_changes_are_seen_as_a_full_walk_sees_them(tmp_path, cr_home, monkeypatch)
    assert shared_out


# -- what the check hands over to be read alone, and what still means a walk ---------------
def test_an_edit_is_read_alone_and_the_next_edit_in_the_racy_window_is_seen(store, monkeypatch):
    """After an in-place edit the refresh reads that one meta (no walk, no listing) and
    records a snapshot listing it as racy; a second same-size edit that keeps the mtime,
    made while it is racy, is compared by content and seen; once it is old, nothing is read."""
    repo, index = store
    meta = repo / "model" / "m4" / "1.0.0" / "meta.json"
    monkeypatch.undo()  # the racy window is real time from here: the fixture's later() is gone
    walks = Walks(monkeypatch)
    listed = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path=".": listed.append(path) or real_scandir(path))
    rewrite_in_place(meta, "first", keep_mtime=False)
    assert index.refresh().parsed == 1
    assert index.components(name="m4")[0].description == "first"

    def load():
        blob = index.db.execute("SELECT data FROM snapshots WHERE scope = '*'").fetchone()[0]
        return snapshot.load(blob, snapshot.repos_key(index.repos))

    assert len(load().racy) == 1  # the edited meta, to be compared by content while it is fresh
    rewrite_in_place(meta, "again", keep_mtime=True)
    # a second edit within the file system's timestamp tick keeps every stamp: make the
    # snapshot hold the stamp the meta has now, so that only its being racy can tell
    snap = load()
    (group, i), = snap.racy
    blob = snap.pack({(group, i): snapshot.file_stamp(os.stat(meta))}, time.time_ns())
    index.db.execute("UPDATE snapshots SET data = ? WHERE scope = '*'", (blob,))
    stats = index.refresh()
    assert (stats.rehashed, stats.parsed) == (1, 1)
    assert index.components(name="m4")[0].description == "again"
    later(monkeypatch)
    index.refresh()  # old enough now: no longer racy, and the one after reads nothing
    stats = index.refresh()
    assert (stats.rehashed, stats.parsed) == (0, 0)
    assert walks.count == 0 and listed == []


def test_a_new_meta_in_an_existing_directory_is_seen(store, monkeypatch):
    repo, index = store
    version_dir = repo / "model" / "m6" / "1.0.0"
    version_dir.mkdir(parents=True)
    index.refresh()
    index.refresh()  # settled (later()): a snapshot with the meta recorded as not there
    assert "model:m6@1.0.0" not in {c.ref for c in index.components()}
    write_json(version_dir / "meta.json", {"uid": secrets.token_hex(8), "kind": "model", "name": "m6",
                                           "version": "1.0.0", "tags": [], "description": "new"})
    index.refresh("model")
    assert index.components(kind="model", name="m6")[0].description == "new"


def test_a_deleted_meta_and_a_renamed_directory_are_seen(store, monkeypatch):
    repo, index = store
    (repo / "model" / "m1" / "1.0.0" / "meta.json").unlink()
    index.refresh()
    assert "model:m1@1.0.0" not in {c.ref for c in index.components()}
    index.refresh()
    os.rename(repo / "model" / "m2", repo / "model" / "m2b")
    index.refresh("model")
    refs = {c.ref for c in index.components(kind="model")}
    assert "model:m2@1.0.0" not in refs
    # its meta, now where its name does not put it, is reported rather than lost
    assert [p for _, p, _ in index.invalid()] == [str(repo / "model" / "m2b" / "1.0.0" / "meta.json")]


def test_many_edits_at_once_mean_a_walk(store, monkeypatch):
    repo, index = store
    monkeypatch.setattr(snapshot, "MAX_CHANGED", 2)
    metas = sorted(repo.glob("*/*/*/meta.json"))[:3]
    for meta in metas:
        rewrite_in_place(meta, "bulk")
    walks = Walks(monkeypatch)
    assert index.refresh().parsed == 3
    assert walks.count == 1
    assert sum(c.description == "bulk" for c in index.components()) == 3


@pytest.mark.parametrize("child_fails", [False, True])
def test_a_cold_build_over_forked_processes_indexes_what_one_process_does(tmp_path, cr_home, monkeypatch, child_fails):
    """The cold build's reading and validating shared out over three processes gives the
    same index as one process (also when a child fails: its share is done again here)."""
    from cr.store import parallel
    import cr.store.index as index_module

    repo = make_repo(tmp_path / "r", "r")
    for i in range(9):
        make_component(repo, "model", f"m{i}", tags=["t", f"t{i}"], description=f"d{i}")
    (repo / "model" / "bad" / "1.0.0").mkdir(parents=True)
    (repo / "model" / "bad" / "1.0.0" / "meta.json").write_text("{not json\n")
    alone = index_of(tmp_path / "alone", repo)
    alone.refresh()
    want = state(alone)
    alone.close()
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 2)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 3)
    monkeypatch.setattr(parallel, "single_threaded", lambda: True)
    forked, real_fork, parent = [], os.fork, os.getpid()

    def fork():
        pid = real_fork()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    if child_fails:
        real_indexed = index_module._indexed

        def indexed(item, now):
            if os.getpid() != parent:
                raise RuntimeError("the child broke")
            return real_indexed(item, now)

        monkeypatch.setattr(index_module, "_indexed", indexed)
    shared = index_of(cr_home, repo)
    stats = shared.refresh()
    assert (stats.parsed, stats.invalid) == (10, 1)
    assert len(forked) == 2
    assert state(shared) == want and want[1] == [str(repo / "model" / "bad" / "1.0.0" / "meta.json")]
    shared.close()
