"""The search index (cr.store.index) and the operations built on it (cr.api find/show/new/check)."""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import cr.api as api
from cr import sqlcache
from cr.errors import Conflict, InvalidRef, NotFound, RepoError, StoreError
from cr.events import CollectingReporter, set_reporter
from cr.store import registry
from cr.store.index import INDEX_FILE, Index
from cr.store.repository import read_repo

from conftest import ROOT, make_component, make_repo, write_json

HOUR_NS = 3600 * 10**9


def age(*paths: Path, seconds: float = 3600) -> None:
    """Set mtimes well in the past, so the index stores them as settled (not racy)."""
    t = time.time_ns() - int(seconds * 1e9)
    for p in paths:
        os.utime(p, ns=(t, t))


def age_tree(root: Path, seconds: float = 3600) -> None:
    age(*root.rglob("meta.json"), seconds=seconds)


@pytest.fixture
def collect():
    rep = CollectingReporter()
    set_reporter(rep)  # conftest's autouse fixture restores the previous reporter
    return rep


def only_repo_index(home: Path, *repo_paths: Path) -> Index:
    return Index(home, [read_repo(p, "dir") for p in repo_paths])


def names(components) -> list[str]:
    return [c.name for c in components]


def refs(components) -> list[tuple[str, str]]:
    return [(c.ref, c.repo) for c in components]


# -- incremental refresh ------------------------------------------------------------------------

def test_second_refresh_parses_nothing(tmp_path, cr_home):
    repo = make_repo(tmp_path / "r", "r")
    for i in range(5):
        make_component(repo, "model", f"m{i}")
    make_component(repo, "dataset", "d", "2.0")
    age_tree(repo)
    index = only_repo_index(cr_home, repo)
    first = index.refresh()
    assert (first.scanned, first.parsed, first.removed, first.invalid) == (6, 6, 0, 0)
    second = index.refresh()
    assert (second.scanned, second.parsed, second.removed, second.invalid) == (6, 0, 0, 0)
    index.close()
    # the index persists: another process (a new Index) does not parse anything either
    again = only_repo_index(cr_home, repo)
    assert again.refresh().parsed == 0
    assert sorted(names(again.components())) == ["d", "m0", "m1", "m2", "m3", "m4"]
    again.close()


def test_rewritten_meta_is_reparsed_alone(tmp_path, cr_home):
    repo = make_repo(tmp_path / "r", "r")
    metas = [make_component(repo, "model", f"m{i}", tags=["old"]) for i in range(4)]
    age(*metas, seconds=7200)
    index = only_repo_index(cr_home, repo)
    assert index.refresh().parsed == 4

    data = json.loads(metas[2].read_text())
    data["tags"] = ["new"]
    data["description"] = "rewritten"
    write_json(metas[2], data)
    age(metas[2], seconds=3600)  # a different, settled mtime
    stats = index.refresh()
    assert (stats.scanned, stats.parsed) == (4, 1)
    assert names(index.components(tags=("new",))) == ["m2"]
    assert sorted(names(index.components(tags=("old",)))) == ["m0", "m1", "m3"]
    assert index.components(name="m2")[0].description == "rewritten"
    assert index.refresh().parsed == 0
    index.close()


def test_touched_meta_is_reparsed_alone(tmp_path, cr_home):
    repo = make_repo(tmp_path / "r", "r")
    metas = [make_component(repo, "dataset", f"d{i}") for i in range(3)]
    age(*metas, seconds=7200)
    index = only_repo_index(cr_home, repo)
    index.refresh()
    age(metas[0], seconds=3000)  # only the mtime changes
    assert index.refresh().parsed == 1
    assert index.refresh().parsed == 0
    index.close()


def test_recent_metas_are_racy_and_read_again(tmp_path, cr_home):
    repo = make_repo(tmp_path / "r", "r")
    settled = make_component(repo, "model", "settled")
    age(settled)
    fresh = make_component(repo, "model", "fresh")  # mtime: now
    index = only_repo_index(cr_home, repo)
    assert index.refresh().parsed == 2
    # modified within RACY_NS: it could change again without its (mtime, size) changing,
    # so it is read again (and parsed again only if its sha256 changed)
    for _ in range(2):
        stats = index.refresh()
        assert (stats.parsed, stats.rehashed) == (0, 1)
    age(fresh)
    stats = index.refresh()
    assert (stats.parsed, stats.rehashed) == (1, 0)
    stats = index.refresh()
    assert (stats.parsed, stats.rehashed) == (0, 0)
    index.close()


def later(monkeypatch, seconds: float) -> None:
    """Make the index believe seconds have passed."""
    import cr.store.index as index_module

    real = time.time_ns
    monkeypatch.setattr(index_module.time, "time_ns", lambda: real() + int(seconds * 1e9))


class CountingScandir:
    """os.scandir, counting the directories listed."""

    def __init__(self, monkeypatch):
        self.listed: list[str] = []
        real = os.scandir

        def scandir(path="."):
            self.listed.append(path if isinstance(path, int) else os.fspath(path))
            return real(path)

        monkeypatch.setattr(os, "scandir", scandir)


def test_directory_listings_are_remembered(tmp_path, cr_home, monkeypatch):
    repo = make_repo(tmp_path / "r", "r")
    for name in ("a", "b", "c"):
        make_component(repo, "model", name)
    make_component(repo, "dataset", "d")
    age_tree(repo)
    later(monkeypatch, 3)  # every directory is older than the racy window
    index = only_repo_index(cr_home, repo)
    assert index.refresh().parsed == 4
    counting = CountingScandir(monkeypatch)
    stats = index.refresh()
    assert (stats.scanned, stats.parsed) == (4, 0)
    assert counting.listed == []  # nothing listed again: every directory is unchanged
    assert index.refresh("model").scanned == 3 and counting.listed == []
    # a new version, a new component, a new kind: each changes a directory listed before
    make_component(repo, "model", "a", "2.0.0")
    make_component(repo, "model", "e")
    make_component(repo, "solution", "s")
    stats = index.refresh()
    assert (stats.scanned, stats.parsed) == (7, 3)
    assert sorted(set(counting.listed)) == sorted(str(p) for p in (repo, repo / "model", repo / "model" / "a", repo / "model" / "e",
                                                             repo / "solution", repo / "solution" / "s"))
    # removing a version, a component: seen too, and their remembered listings are dropped
    shutil.rmtree(repo / "model" / "a" / "1.0.0")
    shutil.rmtree(repo / "model" / "b")
    stats = index.refresh()
    assert (stats.scanned, stats.removed) == (5, 2)
    assert sorted(names(index.components())) == ["a", "c", "d", "e", "s"]
    listed = {p for (p,) in index.db.execute("SELECT path FROM dirs")}
    assert str(repo / "model" / "b") not in listed and str(repo / "model" / "c") in listed
    index.close()


def test_a_directory_replaced_with_the_same_mtime_is_listed_again(tmp_path, cr_home, monkeypatch):
    repo = make_repo(tmp_path / "r", "r")
    make_component(repo, "model", "m")
    later(monkeypatch, 3)
    index = only_repo_index(cr_home, repo)
    index.refresh()
    old = repo / "model" / "m"
    st = os.stat(old)
    other = make_repo(tmp_path / "other", "other")
    make_component(other, "model", "m", "2.0.0")
    os.utime(other / "model" / "m", ns=(st.st_atime_ns, st.st_mtime_ns))
    shutil.rmtree(old)
    os.rename(other / "model" / "m", old)  # same path, same mtime: another inode and ctime
    os.utime(repo / "model", ns=(os.stat(repo / "model").st_atime_ns, os.stat(repo / "model").st_mtime_ns))
    assert [c.version for c in (index.refresh(), index.components())[1]] == ["2.0.0"]
    index.close()


def test_a_symlink_to_a_directory_created_later_is_seen(tmp_path, cr_home, monkeypatch):
    repo = make_repo(tmp_path / "r", "r")
    make_component(repo, "model", "m")
    target = tmp_path / "elsewhere"
    (repo / "model" / "linked").symlink_to(target, target_is_directory=True)
    later(monkeypatch, 3)
    index = only_repo_index(cr_home, repo)
    assert index.refresh().scanned == 1
    (target / "1.0.0").mkdir(parents=True)
    write_json(target / "1.0.0" / "meta.json", {"uid": secrets.token_hex(8), "kind": "model", "name": "linked", "version": "1.0.0"})
    assert index.refresh().scanned == 2  # the kind directory did not change, the link's target did
    assert sorted(names(index.components())) == ["linked", "m"]
    index.close()


def test_racy_meta_settles_once_read_after_the_window(tmp_path, cr_home, monkeypatch):
    repo = make_repo(tmp_path / "r", "r")
    make_component(repo, "model", "fresh")
    index = only_repo_index(cr_home, repo)
    assert index.refresh().parsed == 1
    assert index.refresh().rehashed == 1
    later(monkeypatch, 3)
    stats = index.refresh()  # read again once older than the window: trusted from now on
    assert (stats.parsed, stats.rehashed) == (0, 1)
    stats = index.refresh()
    assert (stats.parsed, stats.rehashed) == (0, 0)
    index.close()


def test_racy_meta_rewritten_in_place_is_parsed_again(tmp_path, cr_home, monkeypatch):
    repo = make_repo(tmp_path / "r", "r")
    meta = make_component(repo, "model", "m", description="aaaa")
    st = os.stat(meta)
    index = only_repo_index(cr_home, repo)
    index.refresh()
    assert index.refresh().parsed == 0
    meta.write_text(meta.read_text().replace("aaaa", "bbbb"))
    os.utime(meta, ns=(st.st_atime_ns, st.st_mtime_ns))
    later(monkeypatch, 3)  # even when that refresh comes after the window
    stats = index.refresh()
    assert (stats.parsed, stats.rehashed) == (1, 1)
    assert index.components(name="m")[0].description == "bbbb"
    index.close()


def test_new_components_are_not_parsed_again(cr_home, monkeypatch):
    api.open_index().close()  # the shipped components, indexed first
    made = [api.new("model", f"n{i}", tags=["t"]) for i in range(30)]
    index = api.open_index(refresh=False)
    stats = index.refresh()
    assert (stats.parsed, stats.rehashed) == (0, 30)  # read and hashed (they are racy), not parsed
    assert len(index.components(kind="model", tags=("t",))) == 30
    # one rewritten behind new()'s back, keeping its size and mtime, is seen all the same
    st = os.stat(made[7].meta_path)
    data = json.loads(made[7].meta_path.read_text())
    data["tags"] = ["u"]
    made[7].meta_path.write_text(json.dumps(data, indent=2, ensure_ascii=False).ljust(st.st_size - 1) + "\n")
    os.utime(made[7].meta_path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(made[7].meta_path).st_size == st.st_size
    later(monkeypatch, 3)
    stats = index.refresh()
    assert (stats.parsed, stats.rehashed) == (1, 30)
    assert names(index.components(tags=("u",))) == ["n7"]
    assert index.refresh().rehashed == 0
    index.close()


def test_same_size_same_mtime_rewrite_is_still_seen(tmp_path, cr_home):
    repo = make_repo(tmp_path / "r", "r")
    meta = make_component(repo, "model", "m", description="aaaa")
    st = os.stat(meta)
    index = only_repo_index(cr_home, repo)
    index.refresh()
    meta.write_text(meta.read_text().replace("aaaa", "bbbb"))
    os.utime(meta, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(meta).st_size == st.st_size and os.stat(meta).st_mtime_ns == st.st_mtime_ns
    index.refresh()
    assert index.components(name="m")[0].description == "bbbb"
    index.close()


def test_deleted_components_disappear(tmp_path, cr_home):
    repo = make_repo(tmp_path / "r", "r")
    keep = make_component(repo, "model", "keep")
    gone_dir = make_component(repo, "model", "gone").parent
    gone_meta = make_component(repo, "model", "gone-meta-only")
    age_tree(repo)
    index = only_repo_index(cr_home, repo)
    index.refresh()
    assert sorted(names(index.components())) == ["gone", "gone-meta-only", "keep"]
    shutil.rmtree(gone_dir)
    gone_meta.unlink()  # the directory stays, without a meta.json
    stats = index.refresh()
    assert (stats.scanned, stats.parsed, stats.removed) == (1, 0, 2)
    assert names(index.components()) == ["keep"]
    assert keep.exists()
    index.close()


# -- a refresh scoped to what the query needs -----------------------------------------------------

def scoped_setup(tmp_path: Path):
    repo = make_repo(tmp_path / "r", "r")
    metas = {}
    for name in ("m", "m2", "m-b"):
        metas[name] = make_component(repo, "model", name)
    metas["m@2"] = make_component(repo, "model", "m", "2.0.0")
    for name in ("d1", "d2"):
        metas[name] = make_component(repo, "dataset", name)
    rec = make_repo(tmp_path / "rec", "rec", layout="name", kind="software", meta_file="recipe.json")
    for name in ("tool", "tool2"):
        metas[name] = write_json(rec / name / "recipe.json", {"uid": secrets.token_hex(8), "kind": "software", "name": name, "version": "1.0"})
    age_tree(repo)
    age(*rec.rglob("recipe.json"))
    return repo, rec, metas


def test_refresh_of_one_kind_walks_only_that_kind(tmp_path, cr_home):
    repo, rec, metas = scoped_setup(tmp_path)
    index = Index(cr_home, [read_repo(repo, "dir"), read_repo(rec, "dir")])
    stats = index.refresh("model")
    assert (stats.scanned, stats.parsed) == (4, 4)
    assert sorted(names(index.components())) == ["m", "m", "m-b", "m2"]  # nothing else was read
    stats = index.refresh("software")  # only the 'name' layout repo holds software here
    assert (stats.scanned, stats.parsed) == (2, 2)
    assert index.refresh("dataset").scanned == 2
    assert index.refresh("solution").scanned == 0
    # a full refresh finds everything already indexed
    stats = index.refresh()
    assert (stats.scanned, stats.parsed, stats.removed) == (8, 0, 0)
    index.close()


def test_refresh_of_one_kind_sees_added_changed_and_removed(tmp_path, cr_home):
    repo, rec, metas = scoped_setup(tmp_path)
    index = Index(cr_home, [read_repo(repo, "dir"), read_repo(rec, "dir")])
    index.refresh()
    shutil.rmtree(metas["m2"].parent.parent)
    age(make_component(repo, "model", "m3"))
    data = json.loads(metas["m-b"].read_text())
    data["description"] = "changed"
    write_json(metas["m-b"], data)
    age(metas["m-b"], seconds=60)
    shutil.rmtree(metas["d1"].parent.parent)  # another kind: left alone by refresh("model")
    stats = index.refresh("model")
    assert (stats.scanned, stats.parsed, stats.removed) == (4, 2, 1)
    assert sorted(names(index.components(kind="model"))) == ["m", "m", "m-b", "m3"]
    assert index.components(name="m-b")[0].description == "changed"
    assert sorted(names(index.components(kind="dataset"))) == ["d1", "d2"]  # not refreshed yet
    stats = index.refresh("dataset")
    assert (stats.scanned, stats.parsed, stats.removed) == (1, 0, 1)
    assert names(index.components(kind="dataset")) == ["d2"]
    assert index.refresh().parsed == 0
    index.close()


def test_refresh_of_one_component_walks_only_its_directory(tmp_path, cr_home):
    repo, rec, metas = scoped_setup(tmp_path)
    index = Index(cr_home, [read_repo(repo, "dir"), read_repo(rec, "dir")])
    index.refresh()
    # 'm' is a prefix of 'm2' and 'm-b': their rows are outside the range of model/m/
    stats = index.refresh("model", "m")
    assert (stats.scanned, stats.parsed, stats.removed) == (2, 0, 0)
    make_component(repo, "model", "m", "3.0.0")
    shutil.rmtree(metas["m@2"].parent)
    stats = index.refresh("model", "m")
    assert (stats.scanned, stats.parsed, stats.removed) == (2, 1, 1)
    assert [c.version for c in index.components(kind="model", name="m")] == ["3.0.0", "1.0.0"]
    assert sorted(names(index.components(kind="model"))) == ["m", "m", "m-b", "m2"]
    assert index.refresh("model", "nothing-here").scanned == 0
    # in a 'name' layout repo, a component is <repo>/<name>/
    metas["tool"].unlink()
    stats = index.refresh("software", "tool")
    assert (stats.scanned, stats.removed) == (0, 1)
    assert names(index.components(kind="software")) == ["tool2"]
    assert index.refresh("model", "tool2").scanned == 0  # the recipes repo holds no models
    index.close()


def test_invalid_metas_are_reported_within_the_scope(tmp_path, cr_home):
    repo, rec, metas = scoped_setup(tmp_path)
    bad_model = make_component(repo, "model", "bad", uid="NOT-HEX")
    bad_data = make_component(repo, "dataset", "bad", uid="NOT-HEX")
    index = Index(cr_home, [read_repo(repo, "dir"), read_repo(rec, "dir")])
    index.refresh()
    assert [p for _, p, _ in index.invalid()] == [str(bad_data), str(bad_model)]
    assert [p for _, p, _ in index.invalid("model")] == [str(bad_model)]
    assert [p for _, p, _ in index.invalid("model", "bad")] == [str(bad_model)]
    assert index.invalid("model", "m") == []
    assert index.invalid("software") == []
    index.close()


def test_find_and_show_see_changes_in_their_scope(tmp_path, collect):
    repo = make_repo(tmp_path / "r", "r")
    api.repo_add(repo)
    make_component(repo, "model", "s", description="one")
    assert api.show("model:s", verify=False)["description"] == "one"
    v2 = make_component(repo, "model", "s", "2.0.0", description="two")
    assert api.resolve("model:s").version == "2.0.0"
    assert api.show("model:s", verify=False)["description"] == "two"
    shutil.rmtree(v2.parent)
    assert api.resolve("model:s").version == "1.0.0"
    make_component(repo, "dataset", "s", description="data")
    assert [c.kind for c in api.find(name="s", repo="r")] == ["dataset", "model"]
    assert [c.kind for c in api.find("dataset", repo="r")] == ["dataset"]
    assert collect.warnings == []


def test_deleted_component_disappears_from_find(tmp_path, collect):
    repo = make_repo(tmp_path / "r", "r")
    api.repo_add(repo)
    meta = make_component(repo, "model", "temp")
    assert names(api.find("model", name="temp")) == ["temp"]
    shutil.rmtree(meta.parent)
    assert api.find("model", name="temp") == []
    with pytest.raises(NotFound):
        api.show("model:temp")
    assert collect.warnings == []


def test_unregistered_repo_disappears(tmp_path):
    repo = make_repo(tmp_path / "r", "r")
    make_component(repo, "model", "m")
    api.repo_add(repo)
    assert refs(api.find("model", name="m")) == [("model:m@1.0.0", "r")]
    api.repo_rm("r")
    assert api.find("model", name="m") == []
    assert repo.is_dir()  # a plain directory is only forgotten, never deleted


def test_new_component_is_found_at_once():
    comp = api.new("model", "fresh", version="1.2.3", tags=["a", "b"], description="d")
    assert comp.meta_path.is_file()
    found = api.find("model", name="fresh")
    assert [c.to_dict() for c in found] == [comp.to_dict()]
    info = api.show("model:fresh@1.2.3")
    assert info["uid"] == comp.uid and info["repo"] == "local"
    assert info["meta"]["tags"] == ["a", "b"]
    assert api.check().ok


def test_new_keeps_working_when_its_cached_state_goes_away(cr_home):
    """new() keeps CR_HOME's local repo and an index connection between calls: both are
    found again when they were removed behind its back."""
    api.new("model", "a")
    for suffix in ("", "-wal", "-shm"):
        Path(str(cr_home / INDEX_FILE) + suffix).unlink(missing_ok=True)
    api.new("model", "b")  # written into the new index file, not the deleted one
    index = Index(cr_home, registry.all_repos(cr_home))  # not refreshed: what new() wrote
    assert names(index.components(kind="model")) == ["b"]
    index.close()
    shutil.rmtree(cr_home / "local")
    api.new("model", "c")
    assert (cr_home / "local" / "cr-repo.json").is_file()
    assert names(api.find("model", repo="local")) == ["c"]


def test_new_follows_a_change_of_cr_home(tmp_path, monkeypatch):
    api.new("dataset", "first")
    monkeypatch.setenv("CR_HOME", str(tmp_path / "other-home"))
    api.new("dataset", "second")
    assert names(api.find("dataset", repo="local")) == ["second"]
    assert (tmp_path / "other-home" / "local" / "dataset" / "second" / "0.1.0" / "meta.json").is_file()


def test_new_refuses_existing_and_bad_input():
    api.new("dataset", "d", version="1.0.0")
    with pytest.raises(Conflict) as exc:
        api.new("dataset", "d", version="1.0.0")
    assert "dataset:d@1.0.0 already exists" in str(exc.value)
    with pytest.raises(InvalidRef):
        api.new("robot", "d")
    with pytest.raises(InvalidRef):
        api.new("dataset", "Bad Name")
    with pytest.raises(InvalidRef):
        api.new("dataset", "d2", version="one")
    with pytest.raises(RepoError):
        api.new("dataset", "d3", repo="builtin")
    assert names(api.find("dataset", repo="local")) == ["d"]


# -- a bad meta is a warning, never an abort ----------------------------------------------------------

BAD_METAS = {
    "bad-json": ('{\n  "uid": "0123456789abcdef",\n  "kind": "model",\n}\n', "line 4 column 1"),
    "bad-uid": (None, "/uid"),
    "misplaced": (None, "belongs at"),
    "not-utf8": (b'{"kind": "model", "description": "caf\xe9"}', "UTF-8"),
    "a-list": ("[1, 2, 3]", "expected a JSON object"),
    "empty": ("", "line 1 column 1"),
}


def make_bad_repo(root: Path) -> tuple[Path, dict[str, Path]]:
    repo = make_repo(root, "mixed")
    for i in range(3):
        make_component(repo, "model", f"good{i}", tags=["ok"])
    bad = {}
    for name, (content, _) in BAD_METAS.items():
        path = repo / "model" / name / "1.0.0" / "meta.json"
        if name == "bad-uid":
            make_component(repo, "model", name, uid="NOT-HEX")
        elif name == "misplaced":
            make_component(repo, "model", name)
            data = json.loads(path.read_text())
            data["name"] = "elsewhere"
            write_json(path, data)
        else:
            path.parent.mkdir(parents=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
        bad[name] = path
    # a meta.json that is a directory
    (repo / "dataset" / "dir-meta" / "1.0.0" / "meta.json").mkdir(parents=True)
    bad["dir-meta"] = repo / "dataset" / "dir-meta" / "1.0.0" / "meta.json"
    return repo, bad


def test_a_meta_one_level_off_is_reported_with_the_layout_not_silently_missed(tmp_path, run_cr):
    """model/<name>/meta.json (no version level) and model/<name>/<version>/x/meta.json used to
    make a search find nothing and cr check say 'all valid'."""
    repo = make_repo(tmp_path / "off", "off")
    shallow = make_component(repo, "model", "flat")
    flat = repo / "model" / "flat" / "meta.json"
    shallow.rename(flat)
    shallow.parent.rmdir()
    deep = make_component(repo, "model", "nested")
    nested = deep.parent / "inner" / "meta.json"
    nested.parent.mkdir()
    deep.rename(nested)
    make_component(repo, "model", "fine")
    assert run_cr("repo", "add", repo).returncode == 0
    for _ in range(2):  # the first search (it indexes) and a warm one (the index answers) say the same
        done = run_cr("find", "model", "--repo", "off")
        assert done.returncode == 0 and [l.split()[0] for l in done.stdout.splitlines()[1:] if l.strip()] == ["model:fine@1.0.0"], done.stdout
        warnings = [line for line in done.stderr.splitlines() if line.startswith("Warning:")]
        assert len(warnings) == 2, done.stderr
        assert any(str(flat) in w and "one level too shallow for repository 'off'" in w and "move it to model/flat/1.0.0/meta.json" in w for w in warnings), warnings
        assert any(str(nested) in w and "one level too deep" in w and "<repo>/<kind>/<name>/<version>/meta.json" in w for w in warnings), warnings
    done = run_cr("check", repo)
    assert done.returncode == 1 and "2 problem(s)" in done.stdout + done.stderr, done.stdout + done.stderr
    assert "one level too shallow" in done.stdout + done.stderr and "one level too deep" in done.stdout + done.stderr


def test_a_name_layout_meta_one_level_too_deep_is_reported(tmp_path, run_cr):
    repo = make_repo(tmp_path / "acts", "acts", layout="name", kind="dataset")
    meta = make_component(repo, "dataset", "d")
    inner = repo / "d" / "1.0.0" / "meta.json"
    inner.parent.mkdir(parents=True)
    meta.rename(inner)
    assert run_cr("repo", "add", repo).returncode == 0
    done = run_cr("find", "dataset", "--repo", "acts")
    assert "one level too deep for repository 'acts'" in done.stderr and "<repo>/<name>/meta.json" in done.stderr, done.stderr


def test_malformed_metas_are_warnings_naming_the_file(tmp_path, collect):
    repo, bad = make_bad_repo(tmp_path / "mixed")
    api.repo_add(repo)
    found = api.find("model", repo="mixed")
    assert sorted(names(found)) == ["good0", "good1", "good2"]
    # a search for models warns about the bad metas among the models (the only ones it
    # reads); the bad one under dataset/ is warned about by a search that covers datasets
    for name, path in bad.items():
        hits = [w for w in collect.warnings if str(path) in w]
        assert len(hits) == (name != "dir-meta"), (name, collect.warnings)
    assert "iris" in names(api.find("dataset"))
    for name, path in bad.items():
        hits = [w for w in collect.warnings if str(path) in w]
        assert len(hits) == 1, (name, collect.warnings)
        if name in BAD_METAS:
            assert BAD_METAS[name][1] in hits[0], hits[0]
        assert "(mixed)" in hits[0]
    collect.warnings.clear()
    api.find()  # every kind: every bad meta
    for name, path in bad.items():
        assert len([w for w in collect.warnings if str(path) in w]) == 1, (name, collect.warnings)
    # the rest of the world is still searchable: the shipped components too
    assert api.show("model:good1")["name"] == "good1"
    # still reported on the next call (the user has not fixed it), without re-reading it
    collect.warnings.clear()
    api.find()
    assert all(any(str(p) in w for w in collect.warnings) for p in bad.values())


def test_malformed_meta_is_never_returned_or_resolved(tmp_path, collect):
    repo, bad = make_bad_repo(tmp_path / "mixed")
    api.repo_add(repo)
    with pytest.raises(NotFound):
        api.resolve("model:bad-uid")
    with pytest.raises(NotFound):
        api.show("model:bad-json")
    assert not set(names(api.find())) & set(bad)


def test_fixing_a_malformed_meta_makes_it_appear(tmp_path, collect):
    repo = make_repo(tmp_path / "r", "r")
    api.repo_add(repo)
    meta = make_component(repo, "model", "m")
    good_text = meta.read_text()
    meta.write_text(good_text.rstrip().rstrip("}") + ",}")
    age(meta, seconds=7200)
    assert api.find("model", name="m") == []
    assert any(str(meta) in w for w in collect.warnings)
    meta.write_text(good_text)
    age(meta, seconds=3600)
    collect.warnings.clear()
    assert names(api.find("model", name="m")) == ["m"]
    assert collect.warnings == []


def test_bad_meta_in_high_precedence_repo_does_not_hide_good_one(tmp_path, collect):
    local = registry.ensure_local_repo()
    broken = local.path / "model" / "shared" / "1.0.0" / "meta.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{oops")
    other = make_repo(tmp_path / "other", "other")
    make_component(other, "model", "shared")
    api.repo_add(other)
    comp = api.resolve("model:shared@1.0.0")
    assert comp.repo == "other"
    assert any(str(broken) in w for w in collect.warnings)


def test_cli_find_survives_malformed_metas(tmp_path, run_cr):
    repo, bad = make_bad_repo(tmp_path / "mixed")
    api.repo_add(repo)
    result = run_cr("find", "model", "--repo", "mixed", "--json")
    assert result.returncode == 0, result.stderr
    assert sorted(c["name"] for c in json.loads(result.stdout)) == ["good0", "good1", "good2"]
    for name, path in bad.items():
        assert (str(path) in result.stderr) == (name != "dir-meta")  # a search for models reads only models
    assert "Traceback" not in result.stderr
    result = run_cr("find", "--repo", "mixed", "--json")
    assert result.returncode == 0, result.stderr
    for path in bad.values():
        assert str(path) in result.stderr
    assert "Traceback" not in result.stderr


def test_odd_entries_are_skipped(tmp_path, collect):
    repo = make_repo(tmp_path / "r", "r")
    make_component(repo, "model", "m")
    (repo / "model" / "stray-file").write_text("not a directory")
    (repo / "model" / "m" / "stray.txt").write_text("x")
    (repo / "model" / "m" / "2.0.0").mkdir()  # a version dir without meta.json
    (repo / ".git" / "model" / "hidden" / "1.0.0").mkdir(parents=True)
    (repo / "notakind" / "x" / "1.0.0").mkdir(parents=True)
    write_json(repo / "notakind" / "x" / "1.0.0" / "meta.json", {"junk": 1})
    api.repo_add(repo)
    assert refs(api.find(repo="r")) == [("model:m@1.0.0", "r")]
    assert collect.warnings == []


def test_name_layout_repo(tmp_path, collect):
    """recipes/-style repos (<name>/recipe.json, one kind) are indexed the same way."""
    repo = make_repo(tmp_path / "rec", "rec", layout="name", kind="software", meta_file="recipe.json")
    write_json(repo / "tool" / "recipe.json", {"uid": "0123456789abcdef", "kind": "software", "name": "tool", "version": "3.1", "tags": ["cli"]})
    write_json(repo / "other" / "recipe.json", {"uid": "0123456789abcde0", "kind": "software", "name": "wrong-dir", "version": "1"})
    (repo / "broken").mkdir()
    (repo / "broken" / "recipe.json").write_text("{")
    api.repo_add(repo)
    assert refs(api.find("software", repo="rec")) == [("software:tool@3.1", "rec")]
    assert api.show("software:tool")["meta"]["tags"] == ["cli"]
    for bad in ("other", "broken"):
        assert any(str(repo / bad / "recipe.json") in w for w in collect.warnings), bad


# -- duplicates and precedence ---------------------------------------------------------------------

def dup_setup(tmp_path: Path) -> dict[str, Path]:
    """model:dup@1.0.0 in local, 'second' (added first) and 'first' (added second)."""
    local = api.new("model", "dup", version="1.0.0", description="local").meta_path
    second = make_repo(tmp_path / "b-second", "b-second")
    first = make_repo(tmp_path / "a-first", "a-first")
    in_second = make_component(second, "model", "dup", description="b-second")
    in_first = make_component(first, "model", "dup", description="a-first")
    api.repo_add(second)  # added first: higher precedence, whatever its name
    api.repo_add(first)
    return {"local": local, "b-second": in_second, "a-first": in_first}


def test_precedence_local_then_order_added(tmp_path, collect):
    dup_setup(tmp_path)
    found = api.find("model", name="dup")
    assert [c.repo for c in found] == ["local", "b-second", "a-first"]
    assert [c.description for c in found] == ["local", "b-second", "a-first"]
    shadow = [w for w in collect.warnings if "shadowed" in w]
    assert len(shadow) == 2
    assert all("model:dup@1.0.0" in w and "'local'" in w for w in shadow)


def test_resolve_picks_highest_precedence_and_warns(tmp_path, collect):
    dup_setup(tmp_path)
    comp = api.resolve("model:dup@1.0.0")
    assert comp.repo == "local"
    warnings = [w for w in collect.warnings if "shadows" in w]
    assert len(warnings) == 2
    assert any("'b-second'" in w for w in warnings) and any("'a-first'" in w for w in warnings)
    assert api.show("model:dup")["meta"]["description"] == "local"


def test_precedence_without_local(tmp_path, collect):
    paths = dup_setup(tmp_path)
    shutil.rmtree(paths["local"].parent)
    assert api.resolve("model:dup").repo == "b-second"
    assert api.show("model:dup@1.0.0")["meta"]["description"] == "b-second"
    shutil.rmtree(paths["b-second"].parent)
    assert api.resolve("model:dup").repo == "a-first"


def test_precedence_is_stable_across_index_rebuilds(tmp_path, cr_home):
    dup_setup(tmp_path)
    before = refs(api.find())
    (cr_home / INDEX_FILE).unlink()
    assert refs(api.find()) == before


def test_registered_repo_shadows_builtin(tmp_path, collect):
    builtin = api.resolve("dataset:iris@1.0.0")
    assert builtin.repo == "builtin"
    mine = make_repo(tmp_path / "mine", "mine")
    make_component(mine, "dataset", "iris", "1.0.0", description="my iris")
    api.repo_add(mine)
    comp = api.resolve("dataset:iris@1.0.0")
    assert comp.repo == "mine"
    assert any("'builtin'" in w for w in collect.warnings)
    assert [c.repo for c in api.find("dataset", name="iris")] == ["mine", "builtin"]


def test_newest_version_wins_over_precedence(tmp_path):
    api.new("model", "v", version="1.0.0")
    other = make_repo(tmp_path / "o", "o")
    make_component(other, "model", "v", "2.0.0")
    api.repo_add(other)
    assert api.resolve("model:v").ref == "model:v@2.0.0"
    assert api.resolve("model:v@<2").repo == "local"
    assert [c.ref for c in api.find("model", name="v")] == ["model:v@2.0.0", "model:v@1.0.0"]


def test_check_reports_duplicate_kind_name_version(tmp_path):
    paths = dup_setup(tmp_path)
    report = api.check()
    dups = [p for p in report.problems if "duplicate kind/name/version" in p.message]
    assert len(dups) == 1
    assert "model/dup/1.0.0" in dups[0].message
    assert "precedence keeps local" in dups[0].message
    assert dups[0].file == str(paths["b-second"])
    assert not report.ok


def test_check_reports_duplicate_uid(tmp_path):
    uid = "0123456789abcdef"
    repo = make_repo(tmp_path / "r", "r")
    one = make_component(repo, "model", "one", uid=uid)
    two = make_component(repo, "dataset", "two", uid=uid)
    api.repo_add(repo)
    report = api.check()
    dups = [p for p in report.problems if "duplicate uid" in p.message]
    assert len(dups) == 1, report.problems
    assert uid in dups[0].message
    assert str(one) in dups[0].message and str(two) in dups[0].message
    assert report.to_dict()["ok"] is False


def test_check_all_ok_without_duplicates(tmp_path):
    repo = make_repo(tmp_path / "r", "r")
    make_component(repo, "model", "one")
    make_component(repo, "model", "one", "2.0")
    api.repo_add(repo)
    report = api.check()
    assert report.ok, [str(p) for p in report.problems]
    assert report.checked >= 2


# -- a damaged index is rebuilt -----------------------------------------------------------------

@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"this is not a database\n" * 200,
        lambda data: os.urandom(len(data)),
        lambda data: b"SQLite format 3\x00" + b"\xff" * (len(data) - 16),
        lambda data: data[: len(data) // 3],
        lambda data: data[:100],
    ],
    ids=["text", "random", "header-only", "truncated", "header-page-cut"],
)
def test_damaged_index_is_rebuilt(damage, cr_home, collect):
    for i in range(20):
        api.new("model", f"m{i}", tags=["t"])
    assert len(api.find("model", tags=["t"])) == 20
    index_file = cr_home / INDEX_FILE
    index_file.write_bytes(damage(index_file.read_bytes()))
    for suffix in ("-wal", "-shm"):
        Path(str(index_file) + suffix).unlink(missing_ok=True)
    collect.warnings.clear()
    assert sorted(names(api.find("model", tags=["t"]))) == sorted(f"m{i}" for i in range(20))
    damaged = [w for w in collect.warnings if "damaged" in w]
    assert len(damaged) == 1 and str(index_file) in damaged[0]
    collect.warnings.clear()
    assert len(api.find("model", tags=["t"])) == 20
    assert collect.warnings == []  # rebuilt once, fine from then on


def test_a_locked_index_is_reported_and_never_deleted(cr_home, collect, monkeypatch, run_cr):
    """A lock held past the busy timeout is another process's doing, not damage: the index
    stays (its rows and every process using it), the command fails with one clear line."""
    api.new("model", "kept", tags=["t"])
    assert names(api.find("model", tags=["t"])) == ["kept"]
    index_file = cr_home / INDEX_FILE
    holder = sqlite3.connect(str(index_file), isolation_level=None)
    holder.execute("UPDATE info SET value = 'older' WHERE key = 'fingerprint'")  # opening must re-create it...
    holder.execute("BEGIN IMMEDIATE")  # ...and another process holds the write lock
    inode = index_file.stat().st_ino
    monkeypatch.setattr(sqlcache, "BUSY_TIMEOUT_S", 0.2)
    collect.warnings.clear()
    with pytest.raises(StoreError) as raised:
        api.find("model", tags=["t"])
    assert "database is locked" in str(raised.value) and "another process held the index" in raised.value.hint
    assert collect.warnings == [] and index_file.stat().st_ino == inode
    assert holder.execute("SELECT name FROM entries WHERE name = 'kept'").fetchall() == [("kept",)]
    holder.execute("ROLLBACK")
    holder.close()
    assert names(api.find("model", tags=["t"])) == ["kept"]


def test_damage_anywhere_in_the_index_is_rebuilt(cr_home, collect):
    """Overwrite each page of a settled index in turn: every operation must still work."""
    created = []
    for i in range(40):
        comp = api.new("model", f"m{i:02d}", tags=["t", f"g{i % 3}"], description="x" * 300)
        created.append(comp.meta_path)
    age(*created)
    api.find()
    api.find()  # settled: a refresh now reads no meta and writes nothing
    index_file = cr_home / INDEX_FILE
    good = index_file.read_bytes()
    page = 4096
    assert len(good) > 8 * page
    for start in range(0, len(good), page):
        index_file.write_bytes(good[:start] + b"\x13" * page + good[start + page:])
        assert len(api.find("model", tags=["t", "g1"])) == 13, start
        assert api.show("model:m07", verify=False)["name"] == "m07"
        assert names(api.find("model", name="m3*")) == ["m30", "m31", "m32", "m33", "m34", "m35", "m36", "m37", "m38", "m39"]
        assert api.check().ok
        index_file.write_bytes(good)


def test_unusable_home_is_a_clear_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("CR_HOME", str(blocker / "home"))
    from cr.errors import CRError

    with pytest.raises(CRError) as exc:  # not an OSError traceback
        api.find()
    assert str(blocker / "home") in str(exc.value)


# -- filters ------------------------------------------------------------------------------------------

@pytest.fixture
def tagged(tmp_path):
    repo = make_repo(tmp_path / "t", "t")
    for name, tags in {
        "ab": ["a", "b"],
        "abc": ["a", "b", "c"],
        "a-only": ["a"],
        "b-only": ["b"],
        "abd": ["a", "b", "d"],
        "none": [],
        "c-only": ["c"],
    }.items():
        make_component(repo, "model", name, tags=tags)
    make_component(repo, "dataset", "ab-data", tags=["a", "b"])
    api.repo_add(repo)
    return repo


@pytest.mark.parametrize(
    "tags, expected",
    [
        (["a", "b", "-c"], ["ab", "abd"]),
        (["a", "b"], ["ab", "abc", "abd"]),
        (["a"], ["a-only", "ab", "abc", "abd"]),
        (["-c"], ["a-only", "ab", "abd", "b-only", "none"]),
        (["-a", "-b"], ["c-only", "none"]),
        (["c", "-a"], ["c-only"]),
        (["a", "-a"], []),
        (["zzz"], []),
        (["-zzz"], ["a-only", "ab", "abc", "abd", "b-only", "c-only", "none"]),
        ([], ["a-only", "ab", "abc", "abd", "b-only", "c-only", "none"]),
        (["", "-"], ["a-only", "ab", "abc", "abd", "b-only", "c-only", "none"]),
    ],
)
def test_tag_filter(tagged, tags, expected):
    assert sorted(names(api.find("model", tags=tags, repo="t"))) == expected


def test_tag_filter_on_cli(tagged, run_cr):
    result = run_cr("find", "model", "--tags", "a,b,-c", "--repo", "t", "--json")
    assert result.returncode == 0, result.stderr
    assert sorted(c["name"] for c in json.loads(result.stdout)) == ["ab", "abd"]
    result = run_cr("find", "--tags", "a, b", "--repo", "t", "--json")
    assert sorted(c["name"] for c in json.loads(result.stdout)) == ["ab", "ab-data", "abc", "abd"]


def test_tags_are_returned_in_order(tagged):
    (comp,) = api.find("model", name="abd")
    assert comp.tags == ("a", "b", "d")


@pytest.fixture
def versioned(tmp_path):
    repo = make_repo(tmp_path / "v", "v")
    for version in ("0.9", "1.0.0", "1.5.0", "2.0rc1", "2.0.0", "10.0"):
        make_component(repo, "model", "vv", version)
    make_component(repo, "model", "other", "1.0.0")
    api.repo_add(repo)
    return repo


@pytest.mark.parametrize(
    "spec, expected",
    [
        (None, ["10.0", "2.0.0", "2.0rc1", "1.5.0", "1.0.0", "0.9"]),
        (">=1,<2", ["1.5.0", "1.0.0"]),
        ("1.0.0", ["1.0.0"]),
        ("1.0", ["1.0.0"]),
        ("==1.*", ["1.5.0", "1.0.0"]),
        (">1.5", ["10.0", "2.0.0", "2.0rc1"]),
        ("<2", ["1.5.0", "1.0.0", "0.9"]),
        ("2.0rc1", ["2.0rc1"]),
        ("!=2.0.0,>=2", ["10.0"]),
        ("~=1.0", ["1.5.0", "1.0.0"]),
        ("3.0", []),
    ],
)
def test_version_filter(versioned, spec, expected):
    found = api.find("model", name="vv", version=spec)
    assert [c.version for c in found] == expected  # newest first, numerically (10.0 > 2.0.0)


def test_version_filter_rejects_bad_spec(versioned):
    with pytest.raises(InvalidRef) as exc:
        api.find("model", version="newest")
    assert "'newest'" in str(exc.value)


def test_resolve_follows_the_spec(versioned):
    assert api.resolve("model:vv").version == "10.0"
    assert api.resolve("model:vv@<2").version == "1.5.0"
    assert api.resolve("model:vv@>=2,<3").version == "2.0.0"
    assert api.resolve("model:vv@2.0rc1").version == "2.0rc1"
    with pytest.raises(NotFound) as exc:
        api.resolve("model:vv@>=11")
    assert "10.0" in exc.value.hint  # lists what exists
    with pytest.raises(NotFound):
        api.resolve("model:nothing-like-this")


@pytest.fixture
def named(tmp_path):
    repo = make_repo(tmp_path / "n", "n")
    for name in ("lenet-a", "lenet-b", "lenet-10", "resnet", "mobilenet.v2", "alexnet_x"):
        make_component(repo, "model", name)
    make_component(repo, "dataset", "lenet-data")
    api.repo_add(repo)
    return repo


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("lenet*", ["lenet-10", "lenet-a", "lenet-b"]),
        ("lenet-?", ["lenet-a", "lenet-b"]),
        ("*net*", ["alexnet_x", "lenet-10", "lenet-a", "lenet-b", "mobilenet.v2", "resnet"]),
        ("[lr]*", ["lenet-10", "lenet-a", "lenet-b", "resnet"]),
        ("*.v2", ["mobilenet.v2"]),
        ("resnet", ["resnet"]),
        ("lenet", []),
        ("LENET*", []),
        ("*-[0-9]*", ["lenet-10"]),
    ],
)
def test_name_filter(named, pattern, expected):
    assert sorted(names(api.find("model", name=pattern, repo="n"))) == expected


def test_filters_combine(named, tmp_path):
    # sorted by kind, then name
    assert names(api.find(name="lenet*", repo="n", version=">=1")) == ["lenet-data", "lenet-10", "lenet-a", "lenet-b"]
    assert names(api.find("dataset", name="lenet*", repo="n")) == ["lenet-data"]
    assert api.find("solution", name="lenet*", repo="n") == []


def test_find_rejects_unknown_kind_and_repo(named):
    with pytest.raises(InvalidRef) as exc:
        api.find("modle")
    assert "'modle'" in str(exc.value)
    with pytest.raises(RepoError) as exc:
        api.find("model", repo="nope")
    assert "'nope'" in str(exc.value)


def test_find_results_are_sorted(named):
    found = api.find()
    keys = [(c.kind, c.name) for c in found]
    assert keys == sorted(keys)


# -- checksums --------------------------------------------------------------------------------------

@pytest.fixture
def with_files(tmp_path):
    repo = make_repo(tmp_path / "f", "f")
    comp_dir = repo / "model" / "withfiles" / "1.0.0"
    comp_dir.mkdir(parents=True)
    (comp_dir / "weights.bin").write_bytes(b"\x00\x01" * 1000)
    (comp_dir / "sub").mkdir()
    (comp_dir / "sub" / "labels.txt").write_text("a\nb\n")
    files = {
        "weights.bin": hashlib.sha256(b"\x00\x01" * 1000).hexdigest(),
        "sub/labels.txt": hashlib.sha256(b"a\nb\n").hexdigest(),
    }
    meta = make_component(repo, "model", "withfiles", files=files, file="weights.bin", labels="sub/labels.txt")
    api.repo_add(repo)
    return comp_dir, files, meta


def test_intact_files_verify(with_files):
    comp_dir, files, meta = with_files
    info = api.show("model:withfiles")
    assert info["verified"] is True
    assert {f["path"]: f["status"] for f in info["files"]} == {"weights.bin": "ok", "sub/labels.txt": "ok"}
    assert all(f["actual"] == f["expected"] for f in info["files"])
    assert api.check("model:withfiles").ok
    assert api.check(str(comp_dir)).ok
    assert api.check(str(meta)).ok
    assert api.check().ok


def test_missing_file_detected(with_files):
    comp_dir, files, meta = with_files
    (comp_dir / "sub" / "labels.txt").unlink()
    info = api.show("model:withfiles")
    assert info["verified"] is False
    status = {f["path"]: (f["status"], f["actual"]) for f in info["files"]}
    assert status == {"weights.bin": ("ok", files["weights.bin"]), "sub/labels.txt": ("missing", None)}
    for target in ("model:withfiles", str(comp_dir), None):
        report = api.check(target)
        assert not report.ok
        problem = next(p for p in report.problems if p.pointer == "/files/sub~1labels.txt")
        assert problem.file == str(meta)
        assert problem.message == "expected file sub/labels.txt, found nothing"


def test_sha256_mismatch_detected(with_files):
    comp_dir, files, meta = with_files
    (comp_dir / "weights.bin").write_bytes(b"tampered")
    actual = hashlib.sha256(b"tampered").hexdigest()
    info = api.show("model:withfiles")
    assert info["verified"] is False
    (bad,) = [f for f in info["files"] if f["status"] != "ok"]
    assert bad == {"path": "weights.bin", "expected": files["weights.bin"], "actual": actual, "status": "mismatch"}
    report = api.check("model:withfiles")
    (problem,) = report.problems
    assert (problem.file, problem.pointer) == (str(meta), "/files/weights.bin")
    assert problem.message == f"expected sha256 {files['weights.bin']}, found {actual}"


def test_show_without_verify_skips_checksums(with_files):
    comp_dir, files, meta = with_files
    (comp_dir / "weights.bin").unlink()
    info = api.show("model:withfiles", verify=False)
    assert "files" not in info and "verified" not in info
    assert info["meta"]["files"] == files


def test_cli_show_fails_on_bad_checksum(with_files, run_cr):
    comp_dir, files, meta = with_files
    ok = run_cr("show", "model", "withfiles", "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["verified"] is True
    (comp_dir / "weights.bin").write_bytes(b"tampered")
    bad = run_cr("show", "model:withfiles")
    assert bad.returncode == 1
    assert "weights.bin" in bad.stderr and "Traceback" not in bad.stderr
    check = run_cr("check", "model:withfiles", "--json")
    assert check.returncode == 1
    report = json.loads(check.stdout)
    assert report["ok"] is False and report["problems"][0]["pointer"] == "/files/weights.bin"


def test_file_field_must_be_listed_with_a_checksum(tmp_path):
    repo = make_repo(tmp_path / "r", "r")
    meta = make_component(repo, "model", "m", file="model.onnx")
    (meta.parent / "model.onnx").write_bytes(b"onnx")
    api.repo_add(repo)
    listed, opened = api.check("model:m").problems
    assert listed.pointer == "/file" and "not listed in files" in listed.message
    # and 4 bytes named .onnx are no ONNX model (cr.store.modelfiles)
    assert opened.pointer == "/file" and "model.onnx: not an ONNX model" in opened.message


# -- concurrency ---------------------------------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import json, sys
    import cr.api as api
    from cr.events import CollectingReporter, set_reporter

    worker, count = int(sys.argv[1]), int(sys.argv[2])
    rep = CollectingReporter()
    set_reporter(rep)
    mine = []
    for j in range(count):
        comp = api.new("model", f"w{worker}-c{j:02d}", version="1.0.0", tags=[f"w{worker}", "conc"])
        mine.append(comp.name)
        seen = {c.name for c in api.find("model", tags=[f"w{worker}"])}
        missing = [n for n in mine if n not in seen]
        assert not missing, f"not found right after creation: {missing}"
        if j % 5 == 0:
            api.find(name="w*")
            api.show(f"model:{comp.name}")
    print(json.dumps({"created": mine, "warnings": rep.warnings}))
    """
)


def test_concurrent_processes_add_and_search(cr_home, tmp_path, run_cr):
    workers, per_worker = 4, 25
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "CR_HOME": str(cr_home)}
    env.pop("PYTHONWARNINGS", None)
    procs = [
        subprocess.Popen([sys.executable, str(script), str(w), str(per_worker)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        for w in range(workers)
    ]
    # the real CLI at the same time: creating and searching
    cli = [
        subprocess.Popen([sys.executable, "-m", "cr", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env, cwd=ROOT)
        for args in (
            ["new", "dataset", "cli-a", "--tags", "conc"],
            ["find", "model", "--tags", "conc", "--json"],
            ["new", "dataset", "cli-b", "--tags", "conc"],
            ["find", "--json"],
            ["find", "model", "--name", "w0-*", "--json"],
        )
    ]
    outputs = []
    for p in procs + cli:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "Traceback" not in err and "Warning" not in err, err
        outputs.append(out)
    created = set()
    for out in outputs[:workers]:
        result = json.loads(out)
        assert result["warnings"] == []
        created.update(result["created"])
    assert len(created) == workers * per_worker
    for out in outputs[workers + 1:workers + 2] + outputs[workers + 3:]:
        json.loads(out)  # every concurrent search printed complete JSON

    found = api.find(tags=["conc"])
    assert {c.name for c in found} == created | {"cli-a", "cli-b"}
    assert len({c.uid for c in found}) == len(found)
    result = run_cr("find", "model", "--tags", "conc", "--json")
    assert result.returncode == 0, result.stderr
    assert {c["name"] for c in json.loads(result.stdout)} == created
    report = api.check()
    assert report.ok, [str(p) for p in report.problems[:5]]


# -- ordering -------------------------------------------------------------------------------------------

def test_sort_components_matches_the_three_stable_sorts():
    """kind, name, newest version, repo precedence, path: parsed versions only where needed."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from cr.store.index import Component, sort_components
    from cr.store.refs import parse_version

    comps = st.builds(
        lambda kind, name, version, repo, n: Component(kind, name, version, "0" * 16, repo, Path(f"/r/{repo}/{n}/meta.json")),
        st.sampled_from(["model", "dataset"]), st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["1.0.0", "1.0", "2.0rc1", "2.0.0", "10.0", "0.9.post1"]), st.sampled_from(["x", "y", "z", "gone"]),
        st.integers(0, 3),
    )
    rank = {"x": 0, "y": 1, "z": 2}

    @settings(max_examples=200, deadline=None)
    @given(st.lists(comps, max_size=12))
    def check(components):
        expected = sorted(components, key=lambda c: (rank.get(c.repo, 1 << 30), str(c.meta_path)))
        expected.sort(key=lambda c: parse_version(c.version), reverse=True)
        expected.sort(key=lambda c: (c.kind, c.name))
        assert sort_components(list(components), rank) == expected

    check()
