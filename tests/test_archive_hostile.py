"""Solution archives against the remaining hostile tricks, and crash hygiene.

Each hostile archive is built here (as tests/test_archive.py does) and must be refused
through the real CLI with one Error line naming what is wrong, leaving nothing behind:
a bomb made of many entries each just under the per-entry ratio size, a file nothing in
the archive accounts for, junk before the first entry or after the end, JSON nested
1,000 deep. A packed archive carries no path of the packing host and stays
deterministic. A `cr unpack` or `cr pack` killed with SIGKILL leaves a temp dir / partial
file that the next run removes.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from conftest import _env, make_component, make_repo, write_json
from helpers.archive import REPO_META, _info, _write, cr, leftovers, ok, sha, sha_file

NAME = "evil-sol"
SOL_DIR = f"solution/{NAME}/1.0.0"
NOTES = b"hello\n"


# -- building archives ------------------------------------------------------------------

def sol_meta(files: dict[str, bytes], **extra) -> dict:
    return {"uid": "00112233445566aa", "kind": "solution", "name": NAME, "version": "1.0.0", "tags": [],
            "files": {rel: sha(data) for rel, data in files.items()}, **extra}


def members_of(files: dict[str, bytes] | None = None, meta: dict | None = None) -> list[tuple[str, bytes]]:
    """cr-repo.json, the solution's meta and its files (every one listed in its meta: a valid archive)."""
    files = {"notes.txt": NOTES} if files is None else files
    meta = meta or sol_meta(files)
    return ([("cr-repo.json", json.dumps(REPO_META).encode()), (f"{SOL_DIR}/meta.json", json.dumps(meta).encode())]
            + [(f"{SOL_DIR}/{rel}", data) for rel, data in sorted(files.items())])


def manifest_for(members, **changes) -> bytes:
    manifest = {
        "format": 1, "created_by": "tests", "repo": f"{NAME}-1.0.0",
        "solution": {"ref": f"solution:{NAME}@1.0.0", "name": NAME, "version": "1.0.0", "uid": "00112233445566aa"},
        "components": [{"ref": f"solution:{NAME}@1.0.0", "uid": "00112233445566aa", "path": SOL_DIR}],
        "excluded": [], "lock": None, "results": [],
        "files": [{"path": n, "size": len(d), "sha256": sha(d)} for n, d in members],
    }
    manifest.update(changes)
    return json.dumps(manifest).encode()


def archive_of(path: Path, members, manifest: bytes | None = None, method: int = zipfile.ZIP_DEFLATED) -> Path:
    items = [(_info(n, method=method), d) for n, d in members]
    return _write(path, items, manifest if manifest is not None else manifest_for(members))


def refused(home: Path, archive: Path, *args: str) -> str:
    """Run cr unpack (default target, then --into); each must be refused cleanly. The Error line."""
    into = archive.parent / "into" / "x"
    lines = []
    for target in ([], ["--into", str(into)]):
        done = cr(home, "unpack", archive, *target, *args)
        out = done.stderr.splitlines()
        assert done.returncode == 1, done.stdout + done.stderr
        assert len(out) == 2 and out[0].startswith(f"Error: refused {archive.name}: ") and out[1].startswith("Hint: "), done.stderr
        assert "Traceback" not in done.stderr and done.stdout == ""
        assert leftovers(home) == [], leftovers(home)
        assert not into.parent.exists() or list(into.parent.iterdir()) == []
        lines.append(out[0])
    assert lines[0] == lines[1]
    repos = json.loads((home / "repos.json").read_text())["repos"] if (home / "repos.json").exists() else []
    assert repos == []
    return lines[0]


def test_the_valid_archive_these_tests_break_unpacks(tmp_path, cr_home):
    archive = archive_of(tmp_path / f"{NAME}-1.0.0.cr.zip", members_of())
    ok(cr(cr_home, "unpack", archive))
    info = json.loads(ok(cr(cr_home, "show", f"solution:{NAME}", "--json")).stdout)
    assert info["verified"] is True and [f["path"] for f in info["files"]] == ["notes.txt"]


# -- 1. a bomb of many entries each just under the per-entry ratio size --------------------

def test_many_entries_just_under_one_mib_are_one_bomb(tmp_path, cr_home):
    """300 entries of 1 MiB - 1 zeros: each is under the per-entry ratio check (1 MiB), the
    archive (~300 KB) would unpack 300 MiB. Refused on the zip's directory, nothing written."""
    zeros = bytes((1 << 20) - 1)
    files = {f"z/{i:03}.bin": zeros for i in range(300)}
    archive = archive_of(tmp_path / f"{NAME}-1.0.0.cr.zip", members_of(files))
    assert archive.stat().st_size < 2 << 20
    cr_home.mkdir()
    error = refused(cr_home, archive)
    assert "unpacks to 300.1 MiB" in error and "for the whole archive" in error and "zip bomb" in error, error
    done = cr(cr_home, "unpack", archive)
    assert "--max-total-ratio R" in done.stderr.splitlines()[1]


def test_the_whole_archive_ratio_limit_can_be_raised(tmp_path, cr_home):
    zeros = bytes((1 << 20) - 1)
    files = {f"z/{i:02}.bin": zeros for i in range(3)}
    archive = archive_of(tmp_path / f"{NAME}-1.0.0.cr.zip", members_of(files))
    cr_home.mkdir()
    assert "for the whole archive" in refused(cr_home, archive)
    ok(cr(cr_home, "unpack", archive, "--max-total-ratio", "100000"))
    from cr.archive import Limits, unpack
    from cr.archive.format import ArchiveError

    with pytest.raises(ArchiveError, match="for the whole archive"):
        unpack(archive, tmp_path / "elsewhere", limits=Limits().with_(max_total_ratio=50.0))
    assert not (tmp_path / "elsewhere").exists()


# -- 2. files nothing accounts for ----------------------------------------------------------

def _stray_in_component(path):
    members = members_of() + [(f"{SOL_DIR}/extra.py", b"import os\n")]  # in the manifest, in no meta's files
    return archive_of(path, members), f"{SOL_DIR}/extra.py"


def _stray_in_results(path):
    members = members_of() + [("results/run.sh", b"#!/bin/sh\n")]  # no result names it
    return archive_of(path, members), "results/run.sh"


def _stray_result_record(path):
    record = json.dumps({"uid": "0123456789abcdef", "action": "benchmark", "status": "ok"}).encode()
    members = members_of() + [("results/0123456789abcdef.json", record)]  # manifest /results does not name it
    return archive_of(path, members), "results/0123456789abcdef.json"


def _lock_not_in_manifest(path):
    lock = json.dumps({"format": 1, "root": f"solution:{NAME}@1.0.0", "software": [], "components": []}).encode()
    members = members_of() + [("lock.json", lock)]  # manifest /lock is null
    return archive_of(path, members), "lock.json"


STRAYS = {"component-dir": _stray_in_component, "results-dir": _stray_in_results,
          "result-not-in-manifest": _stray_result_record, "lock-not-in-manifest": _lock_not_in_manifest}


@pytest.mark.parametrize("case", list(STRAYS))
def test_a_file_that_belongs_to_nothing_is_refused(case, tmp_path, cr_home):
    archive, entry = STRAYS[case](tmp_path / f"{NAME}-1.0.0.cr.zip")
    cr_home.mkdir()
    error = refused(cr_home, archive)
    assert repr(entry) in error and "belongs to nothing" in error, error


def test_a_result_whose_latencies_file_is_not_there_is_refused(tmp_path, cr_home):
    record = json.dumps({"uid": "0123456789abcdef", "raw": {"latencies_ns_file": "gone.i64"}}).encode()
    members = members_of() + [("results/0123456789abcdef.json", record)]
    archive = archive_of(tmp_path / f"{NAME}-1.0.0.cr.zip", members,
                         manifest_for(members, results=["results/0123456789abcdef.json"]))
    cr_home.mkdir()
    error = refused(cr_home, archive)
    assert "'results/0123456789abcdef.json'" in error and "gone.i64" in error, error


# -- 3. junk before the first entry, or after the end ------------------------------------------

def _prefixed(path):
    """A shell script in front of the zip (zipfile still reads it: offsets are relative)."""
    archive_of(path, members_of())
    path.write_bytes(b"#!/bin/sh\necho pwned\nexit 0\n" + path.read_bytes())
    return path


def _prefixed_with_offsets(path):
    """The zip written after a prefix, its offsets counting the prefix (as zip -A leaves them)."""
    members = members_of()
    with open(path, "wb") as f:
        f.write(b"MZ" + bytes(510))
        with zipfile.ZipFile(f, "w") as zf:
            for name, data in members:
                zf.writestr(_info(name), data)
            zf.writestr(_info("manifest.json"), manifest_for(members))
    return path


def _comment(path):
    members = members_of()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members:
            zf.writestr(_info(name), data)
        zf.writestr(_info("manifest.json"), manifest_for(members))
        zf.comment = b"anything at all"
    return path


def _appended(path):
    archive_of(path, members_of())
    path.write_bytes(path.read_bytes() + b"\0appended payload")
    return path


FRAMING = {"prefix": (_prefixed, "bytes of other data before its first entry"),
           "prefix-with-offsets": (_prefixed_with_offsets, "512 bytes of other data before its first entry"),
           "comment": (_comment, "data after the zip's end record"),
           "appended": (_appended, "data after the zip's end record")}


@pytest.mark.parametrize("case", list(FRAMING))
def test_junk_around_the_zip_is_refused(case, tmp_path, cr_home):
    make, reason = FRAMING[case]
    archive = make(tmp_path / f"{NAME}-1.0.0.cr.zip")
    with zipfile.ZipFile(archive) as zf:  # what makes it a trick: zipfile reads it without complaint
        assert zf.testzip() is None and "manifest.json" in zf.namelist()
    cr_home.mkdir()
    assert reason in refused(cr_home, archive)


# -- 5. JSON nested 1,000 deep -----------------------------------------------------------------

DEEP = "__deep__"  # replaced by 1,000 nested arrays in the bytes (json cannot even build it)


def deep(data: bytes) -> bytes:
    return data.replace(json.dumps(DEEP).encode(), b"[" * 1000 + b"]" * 1000)


def _deep_manifest(path):
    members = members_of()
    return archive_of(path, members, deep(manifest_for(members, **{"x-deep": DEEP}))), "manifest.json"


def _deep_meta(path):
    members = members_of()
    members[1] = (members[1][0], deep(json.dumps(sol_meta({"notes.txt": NOTES}, **{"x-deep": DEEP})).encode()))
    return archive_of(path, members), f"{SOL_DIR}/meta.json"


def _deep_lock(path):
    lock = deep(json.dumps({"format": 1, "root": f"solution:{NAME}@1.0.0", "software": [], "deep": DEEP}).encode())
    members = members_of() + [("lock.json", lock)]
    return archive_of(path, members, manifest_for(members, lock="lock.json")), "lock.json"


def _deep_result(path):
    record = deep(json.dumps({"uid": "0123456789abcdef", "status": "ok", "deep": DEEP}).encode())
    members = members_of() + [("results/0123456789abcdef.json", record)]
    return archive_of(path, members, manifest_for(members, results=["results/0123456789abcdef.json"])), "results/0123456789abcdef.json"


def _deep_repo_file(path):
    members = members_of()
    members[0] = ("cr-repo.json", deep(json.dumps({**REPO_META, "x-deep": DEEP}).encode()))
    return archive_of(path, members), "cr-repo.json"


DEEPS = {"manifest": _deep_manifest, "meta": _deep_meta, "lock": _deep_lock, "result": _deep_result, "repo-file": _deep_repo_file}


@pytest.mark.parametrize("case", list(DEEPS))
def test_json_nested_1000_deep_is_refused_cleanly(case, tmp_path, cr_home):
    archive, member = DEEPS[case](tmp_path / f"{NAME}-1.0.0.cr.zip")
    cr_home.mkdir()
    error = refused(cr_home, archive)
    assert member in error and "nested deeper than 100 levels" in error, error
    from cr.archive import unpack
    from cr.archive.format import ArchiveError

    with pytest.raises(ArchiveError, match="nested deeper"):  # the library: an ArchiveError, never RecursionError
        unpack(archive, tmp_path / "api")


# -- 4. no host paths, still deterministic ------------------------------------------------------

def _host_paths(home: Path, *more: Path) -> set[bytes]:
    paths = {str(home), os.path.realpath(home), sys.executable, os.path.realpath(sys.executable),
             os.path.dirname(sys.executable), os.path.expanduser("~"), *map(str, more)}
    return {p.encode() for p in paths if len(p) > 1}


def _leaks(archive: Path, needles: set[bytes]) -> list[str]:
    found = []
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            data = zf.read(info)
            found += [f"{info.filename}: {n.decode()}" for n in needles if n in data]
    return found


QUICK = {"min_duration_s": 0.2, "min_queries": 100, "warmup_queries": 10, "batch_size": 1, "threads": 1, "seed": 0}


def test_a_packed_archive_holds_no_path_of_this_host_and_packs_identically(tmp_path, cr_home, run_cr):
    """A real lock and real results (init + benchmark on this machine) name the interpreter,
    the prefixes, the model file's path...: none of it travels, and two packs are one file."""
    repo = make_repo(tmp_path / "sols", "sols")
    make_component(repo, "solution", "quick", model="model:lenet-digits@1.0.0", dataset="dataset:digits@1.0.0",
                   backend="onnxruntime", backend_options={"intra_op_threads": 1},
                   deps=["software:python@>=3.9", "software:numpy@>=1.23", "software:onnxruntime@>=1.17"],
                   actions=[{"action": "benchmark", "params": {"scenario": "single-stream", **QUICK}},
                            {"action": "validate", "params": {}}])
    assert run_cr("repo", "add", repo).returncode == 0
    for cmd in (("init", "solution", "quick"), ("benchmark", "solution", "quick")):
        done = run_cr(*cmd)
        assert done.returncode == 0, done.stderr
    a, b = tmp_path / "a" / "quick.cr.zip", tmp_path / "b" / "quick.cr.zip"
    packed = [json.loads(ok(cr(cr_home, "pack", "solution", "quick", "-o", out, "--json")).stdout) for out in (a, b)]
    assert sha_file(a) == sha_file(b) and packed[0]["lock"] and len(packed[0]["results"]) == 2
    # the records on this machine do hold them: what is checked is that the archive does not
    stored = [Path(r["file"]).read_bytes() for r in json.loads(run_cr("results", "list", "--json").stdout)]
    assert len(stored) == 2 and all(os.path.dirname(sys.executable).encode() in data for data in stored)
    needles = _host_paths(cr_home, tmp_path, Path.cwd())
    assert _leaks(a, needles) == []
    with zipfile.ZipFile(a) as zf:
        lock = json.loads(zf.read("lock.json"))
        assert lock["interpreter"] == "<host path>" and lock["root"] == "solution:quick@1.0.0"
        assert all(not str(s.get("location", "")).startswith("/") for s in lock["software"])
        records = [json.loads(zf.read(r)) for r in packed[0]["results"]]
    assert {r["action"] for r in records} == {"benchmark", "validate"}
    assert records[0]["model_file"]["path"] == "<host path>" and records[0]["model_file"]["sha256"]
    # what reproduce compares survives: versions, metrics, pipeline
    assert {s["name"]: s["version"] for s in lock["software"]}.keys() >= {"python", "numpy", "onnxruntime"}


def test_given_lock_and_results_lose_their_host_paths_only(tmp_path, cr_home):
    """A lock and a record given by hand, with host paths in every shape: whole values, list
    items, inside an error message, a file:// URL; NaN as Python writes it. The copies keep
    everything else, unpack accepts them, and packing again gives the same bytes."""
    from cr.resolve.lock import component_sha256

    repo = make_repo(tmp_path / "team", "team")
    make_component(repo, "dataset", "tiny-data", format="csv", files={})
    meta_path = make_component(repo, "solution", "tiny-sol", dataset="dataset:tiny-data@1.0.0", files={})
    ok(cr(cr_home, "repo", "add", repo))
    home, exe = os.path.expanduser("~"), sys.executable
    metas = {r: json.loads(p.read_text()) for r, p in (("solution:tiny-sol@1.0.0", meta_path),
                                                       ("dataset:tiny-data@1.0.0", repo / "dataset/tiny-data/1.0.0/meta.json"))}
    lock = write_json(tmp_path / "lock.json", {
        "format": 1, "root": "solution:tiny-sol@1.0.0", "interpreter": exe,
        "components": [{"ref": r, "uid": m["uid"], "sha256": component_sha256(m)} for r, m in metas.items()],
        "software": [{"name": "python", "version": "3.11.7", "location": exe, "prefix": f"{cr_home}/envs/python/x",
                      "exports": {"PATH": [os.path.dirname(exe), f"{home}/bin"]}}],
    })
    side = tmp_path / "results" / "r1.latencies.i64"
    side.parent.mkdir()
    side.write_bytes(b"\x02" * 80)
    record = tmp_path / "results" / "r1.json"
    record.write_text(json.dumps({
        "format": 1, "uid": "0123456789abcdef", "action": "benchmark", "status": "failed",
        "components": [{"ref": "solution:tiny-sol@1.0.0"}], "metrics": {"stdev": float("nan"), "p50": 12.5},
        "error": {"message": f"cannot open {cr_home}/models/x.onnx (see file://{home}/log.txt)", "hint": "Debian GNU/Linux, 1/255"},
        "runtime": {"executable": exe, "argv": [exe, "-m", "cr.runtime.child", f"{tmp_path}/job.json"]},
        "raw": {"latencies_ns_file": side.name, "format": "int64-le", "count": 10, "sha256": sha_file(side)},
    }))
    out = [tmp_path / "one.cr.zip", tmp_path / "two.cr.zip"]
    for path in out:
        ok(cr(cr_home, "pack", "solution:tiny-sol", "-o", path, "--lock", lock, "--result", record))
    assert sha_file(out[0]) == sha_file(out[1])
    assert _leaks(out[0], _host_paths(cr_home, tmp_path)) == []
    with zipfile.ZipFile(out[0]) as zf:
        got = json.loads(zf.read("results/0123456789abcdef.json"), parse_constant=float)
        packed_lock = json.loads(zf.read("lock.json"))
        assert zf.read("results/r1.latencies.i64") == side.read_bytes()
    assert got["error"]["message"] == "cannot open <host path> (see file://<host path>)"
    assert got["error"]["hint"] == "Debian GNU/Linux, 1/255" and got["metrics"]["p50"] == 12.5 and got["metrics"]["stdev"] != got["metrics"]["stdev"]
    assert got["runtime"] == {"executable": "<host path>", "argv": ["<host path>", "-m", "cr.runtime.child", "<host path>"]}
    assert packed_lock["software"][0]["exports"] == {"PATH": ["<host path>", "<host path>"]}
    assert packed_lock["components"] == json.loads(lock.read_text())["components"]
    fresh = tmp_path / "fresh"
    ok(cr(fresh, "unpack", out[0]))
    # the unpacked archive packed again (from the repository it now is): the same bytes
    again = tmp_path / "again.cr.zip"
    unpacked = fresh / "archives" / "tiny-sol-1.0.0"
    ok(cr(fresh, "pack", "solution:tiny-sol", "-o", again, "--lock", unpacked / "lock.json",
          "--result", unpacked / "results" / "0123456789abcdef.json"))
    assert sha_file(again) == sha_file(out[0])


# -- 6. kill -9 ---------------------------------------------------------------------------------

def _start(home: Path, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cr", *map(str, args)], env=_env({"CR_HOME": str(home)}),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _kill_when(proc: subprocess.Popen, found, timeout: float = 30.0):
    """SIGKILL proc as soon as found() returns something; that thing."""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            hit = found()
            if hit:
                os.killpg(proc.pid, signal.SIGKILL)
                return hit
            if proc.poll() is not None:
                pytest.fail(f"the process ended (exit {proc.returncode}) before it could be killed mid-way")
            time.sleep(0.002)
        pytest.fail("the temporary output never appeared")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _big_archive(path: Path) -> Path:
    """Six incompressible 20 MB files (stored: extraction is fast, but not instant)."""
    files = {f"big/{i}.bin": os.urandom(20 << 20) for i in range(6)}
    return archive_of(path, members_of(files), method=zipfile.ZIP_STORED)


def _small_other_archive(path: Path) -> Path:
    """A valid archive of another solution (the unpack 'of anything' that sweeps)."""
    meta = {"uid": "00112233445566cc", "kind": "solution", "name": "other-sol", "version": "1.0.0", "tags": [], "files": {}}
    members = [("cr-repo.json", json.dumps({"name": "other-sol-1.0.0", "uid": "00112233445566dd", "version": "1.0.0"}).encode()),
               ("solution/other-sol/1.0.0/meta.json", json.dumps(meta).encode())]
    manifest = manifest_for(members, repo="other-sol-1.0.0",
                            solution={"ref": "solution:other-sol@1.0.0", "name": "other-sol", "version": "1.0.0", "uid": meta["uid"]},
                            components=[{"ref": "solution:other-sol@1.0.0", "uid": meta["uid"], "path": "solution/other-sol/1.0.0"}])
    return archive_of(path, members, manifest)


def _temp_dirs(folder: Path, prefix: str) -> list[Path]:
    try:
        return [folder / n for n in os.listdir(folder) if n.startswith(prefix)]
    except OSError:
        return []


@pytest.mark.parametrize("where", ["cr-home", "into"])
def test_kill_9_during_unpack_leaves_a_temp_dir_the_next_unpack_removes(where, tmp_path, cr_home):
    archive = _big_archive(tmp_path / f"{NAME}-1.0.0.cr.zip")
    cr_home.mkdir()
    if where == "cr-home":  # CR_HOME/archives/NAME: extracted in CR_HOME/tmp/unpack-PID-*
        target, args, scratch, prefix = cr_home / "archives" / f"{NAME}-1.0.0", [], cr_home / "tmp", "unpack-"
    else:  # outside CR_HOME: extracted beside the target, in .cr-unpack-PID-*
        target = tmp_path / "place" / "sol"
        args, scratch, prefix = ["--into", target], target.parent, ".cr-unpack-"
    proc = _start(cr_home, "unpack", archive, *args)

    def extracting():
        return [d for d in _temp_dirs(scratch, prefix) if any((d / "repo").glob("*"))]

    left = _kill_when(proc, extracting)
    assert left[0].name.startswith(f"{prefix}{proc.pid}-") and left[0].is_dir()
    assert not target.exists()
    # the next unpack, of another archive (into the same folder for the beside case), removes it
    other = _small_other_archive(tmp_path / "other-sol-1.0.0.cr.zip")
    ok(cr(cr_home, "unpack", other, *(["--into", target.parent / "other"] if where == "into" else [])))
    assert not left[0].exists()
    # and the archive itself unpacks, leaving no temp dir
    ok(cr(cr_home, "unpack", archive, *args))
    assert _temp_dirs(scratch, prefix) == [] and _temp_dirs(target.parent, ".cr-unpack-") == []
    info = json.loads(ok(cr(cr_home, "show", f"solution:{NAME}", "--json")).stdout)
    assert info["verified"] is True and len(info["files"]) == 6 and Path(info["path"]).is_relative_to(target)


def test_kill_9_during_pack_leaves_a_partial_file_the_next_pack_removes(tmp_path, cr_home):
    repo = make_repo(tmp_path / "team", "team")
    model_dir = repo / "model" / "huge-net" / "1.0.0"
    model_dir.mkdir(parents=True)
    files = {}
    for i in range(4):
        data = os.urandom(20 << 20)
        (model_dir / f"w{i}.bin").write_bytes(data)
        files[f"w{i}.bin"] = sha(data)
    make_component(repo, "model", "huge-net", format="onnx", file="w0.bin", files=files)
    make_component(repo, "solution", "huge-sol", model="model:huge-net@1.0.0", files={})
    ok(cr(cr_home, "repo", "add", repo))
    out = tmp_path / "out"
    out.mkdir()
    proc = _start(cr_home, "pack", "solution:huge-sol", "-o", out, "--no-results")

    def writing():
        return [p for p in _temp_dirs(out, ".huge-sol-1.0.0.cr.zip.cr-pack-") if p.stat().st_size > 0]

    left = _kill_when(proc, writing)
    assert left[0].name.startswith(f".huge-sol-1.0.0.cr.zip.cr-pack-{proc.pid}-") and left[0].name.endswith(".tmp")
    assert left[0].exists() and not (out / "huge-sol-1.0.0.cr.zip").exists()
    ok(cr(cr_home, "pack", "solution:huge-sol", "-o", out, "--no-results"))
    assert sorted(os.listdir(out)) == ["huge-sol-1.0.0.cr.zip"]
    with zipfile.ZipFile(out / "huge-sol-1.0.0.cr.zip") as zf:
        assert zf.testzip() is None


def test_stale_leftovers_of_dead_processes_are_swept_and_live_ones_kept(tmp_path, cr_home):
    """What a kill leaves is named after its process: a later unpack / pack into the same
    folder deletes those of processes that are gone, never those of a live one."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    live = str(os.getppid())
    place = tmp_path / "place"
    for pid in (dead, live):
        (place / f".cr-unpack-{pid}-abc123" / "repo").mkdir(parents=True)
    (place / ".cr-unpack-notapid-x").mkdir()
    from cr.archive import pack, unpack

    unpack(archive_of(tmp_path / f"{NAME}-1.0.0.cr.zip", members_of()), place / "sol")
    assert sorted(os.listdir(place)) == [f".cr-unpack-{live}-abc123", ".cr-unpack-notapid-x", "sol"]

    repo = make_repo(tmp_path / "team", "team")
    make_component(repo, "solution", "s", files={})
    ok(cr(cr_home, "repo", "add", repo))
    out = tmp_path / "out"
    out.mkdir()
    for pid in (dead, live):
        (out / f".s-1.0.0.cr.zip.cr-pack-{pid}-0123abcd.tmp").write_bytes(b"partial")
    (out / "keep.tmp").write_bytes(b"mine")
    pack("solution:s", output=out)
    assert sorted(os.listdir(out)) == [f".s-1.0.0.cr.zip.cr-pack-{live}-0123abcd.tmp", "keep.tmp", "s-1.0.0.cr.zip"]
