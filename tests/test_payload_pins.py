"""Pinned payloads (docs/security.md "Pinned payloads"): a model file taken from a registry
package is trusted by the sha256 `cr hash` records; loading, `cr check`, `cr show`, archives
and `cr reproduce` check it against what is installed.

The package is the real onnxruntime wheel of the test interpreter, whose iris classifier
(datasets/logreg_iris.onnx) is a copy of model:iris-logreg in a repository of the test's own.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from importlib import metadata
from pathlib import Path

import pytest

from cr.runtime import pins
from conftest import make_repo, write_json

SHIPPED = Path(__file__).resolve().parents[1] / "repo" / "model" / "iris-logreg" / "1.0.0" / "meta.json"
ORT = metadata.version("onnxruntime")
FAST = ("--backend", "onnxruntime", "--inputs", "synthetic", "--min-duration", "0", "--min-queries", "3", "--warmup", "0")
ZEROS = "0" * 64


def _copy(repo: Path, name: str, **source) -> Path:
    meta = json.loads(SHIPPED.read_text())
    meta.update(uid=os.urandom(8).hex(), name=name)
    meta["source"] = {k: v for k, v in {**meta["source"], **source}.items() if v is not None}
    return write_json(repo / "model" / name / "1.0.0" / "meta.json", meta)


@pytest.fixture
def local(tmp_path, run_cr):
    repo = make_repo(tmp_path / "mine", "mine")
    assert run_cr("repo", "add", str(repo)).returncode == 0
    return repo


def _one_error(done, *needles):
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert done.returncode == 1 and len(errors) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    assert any(ln.startswith("Hint:") for ln in done.stderr.splitlines())
    return errors[0]


def test_hash_pins_the_installed_file_then_check_show_and_a_run_verify_it(local, run_cr):
    meta_path = _copy(local, "iris-copy", sha256=None, package_version=None)
    done = run_cr("hash", "model:iris-copy", "--json")
    assert done.returncode == 0, done.stderr
    pinned = json.loads(done.stdout)["pinned"]
    source = json.loads(meta_path.read_text())["source"]
    assert source["sha256"] == pinned["sha256"] == json.loads(SHIPPED.read_text())["source"]["sha256"]
    assert source["package_version"] == ORT
    again = run_cr("hash", "model:iris-copy", "--json")
    assert json.loads(again.stdout)["pin_changed"] is False
    check = json.loads(run_cr("check", "model:iris-copy", "--json").stdout)
    assert check["ok"] and [p["state"] for p in check["payloads"]] == ["verified"]
    shown = json.loads(run_cr("show", "model:iris-copy", "--json").stdout)
    assert shown["payload"]["state"] == "verified" and shown["payload"]["installed_version"] == ORT
    ran = run_cr("benchmark", "model", "iris-copy", *FAST, "--json")
    assert ran.returncode == 0, ran.stderr
    model_file = json.loads(ran.stdout)["model_file"]
    assert model_file["pin"] == "verified" and model_file["sha256"] == source["sha256"]


def test_a_wrong_hash_fails_the_run_check_and_show_naming_file_package_and_both_hashes(local, run_cr):
    _copy(local, "iris-zeros", sha256=ZEROS, package_version="9.9.9")
    ran = run_cr("benchmark", "model", "iris-zeros", *FAST)
    error = _one_error(ran, "logreg_iris.onnx", f"onnxruntime {ORT} installed, 9.9.9 pinned", ZEROS)
    hint = next(ln for ln in ran.stderr.splitlines() if ln.startswith("Hint:"))
    assert "install onnxruntime 9.9.9, the pinned version" in hint and "cr hash model:iris-zeros@1.0.0" in hint
    assert json.loads(SHIPPED.read_text())["source"]["sha256"] in error
    records = json.loads(run_cr("results", "list", "--json").stdout)  # a failed run, no numbers
    assert [r["status"] for r in records] == ["failed"] and not records[0].get("metrics")
    check = run_cr("check", "model:iris-zeros", "--json")
    assert check.returncode == 1
    report = json.loads(check.stdout)
    assert report["payloads"][0]["state"] == "mismatch"
    assert [p["pointer"] for p in report["problems"]] == ["/source/sha256"]
    shown = run_cr("show", "model:iris-zeros")
    assert "payload: datasets/logreg_iris.onnx from package onnxruntime: mismatch" in shown.stdout
    _one_error(shown, "does not match its pin")


def test_a_wrong_version_without_a_hash_fails_and_with_the_right_hash_passes(local, run_cr):
    _copy(local, "iris-old", sha256=None, package_version="0.0.1")
    _one_error(run_cr("benchmark", "model", "iris-old", *FAST), "another package version than pinned",
               f"onnxruntime {ORT} installed, 0.0.1 pinned")
    _copy(local, "iris-same-bytes", package_version="0.0.1")  # the shipped sha256: the same graph
    ran = run_cr("benchmark", "model", "iris-same-bytes", *FAST, "--json")
    assert ran.returncode == 0, ran.stderr
    shown = json.loads(run_cr("show", "model:iris-same-bytes", "--json").stdout)
    assert shown["payload"]["state"] == "verified" and "the same file" in shown["payload"]["message"]
    check = run_cr("check", "model:iris-same-bytes", "--json")
    report = json.loads(check.stdout)
    assert check.returncode == 0 and [w["pointer"] for w in report["warnings"]] == ["/source/package_version"]


def test_a_missing_package_is_reported_not_judged_and_stops_a_run(local, run_cr):
    _copy(local, "iris-nopkg", package="cr-test-no-such-package")
    check = run_cr("check", "model:iris-nopkg", "--json")
    assert check.returncode == 0 and json.loads(check.stdout)["payloads"][0]["state"] == "not installed"
    assert json.loads(run_cr("show", "model:iris-nopkg", "--json").stdout)["payload"]["state"] == "not installed"
    hashed = run_cr("hash", "model:iris-nopkg")
    _one_error(hashed, "cr-test-no-such-package", "not installed")


def test_an_unpinned_file_is_a_check_warning(local, run_cr):
    _copy(local, "iris-loose", sha256=None, package_version=None)
    check = run_cr("check", "model:iris-loose", "--json")
    report = json.loads(check.stdout)
    assert check.returncode == 0 and report["payloads"][0]["state"] == "unpinned"
    assert "not pinned" in report["warnings"][0]["message"]


def test_the_shipped_package_sourced_models_are_pinned_and_verified_here(run_cr):
    report = json.loads(run_cr("check", "--json").stdout)
    states = {p["ref"].split("@")[0]: p["state"] for p in report["payloads"]}
    assert {"model:iris-logreg", "model:efficientnet-lite0", "model:face-detection",
            "model:ssdlite-mobilenet-v2-person"} <= set(states)
    assert all(p["pinned_sha256"] for p in report["payloads"] if p["file"].startswith(str(SHIPPED.parents[3])))
    assert states["model:iris-logreg"] == "verified"


def test_the_cache_serves_an_unchanged_file_and_misses_a_rewritten_one(tmp_path, cr_home):
    payload = tmp_path / "weights.bin"
    payload.write_bytes(b"a" * 4096)
    assert pins.file_sha256(str(payload)) and not (cr_home / "cache" / pins.CACHE_NAME).exists()  # just written: racy
    old = time.time() - 60
    os.utime(payload, (old, old))
    first = pins.file_sha256(str(payload))
    cache = json.loads((cr_home / "cache" / pins.CACHE_NAME).read_text())
    assert [e["sha256"] for e in cache["files"].values()] == [first]
    # a forged cache entry for the same stamp is what a cached verify returns: proof it is read
    key = next(iter(cache["files"]))
    cache["files"][key]["sha256"] = ZEROS
    (cr_home / "cache" / pins.CACHE_NAME).write_text(json.dumps(cache))
    assert pins.file_sha256(str(payload)) == ZEROS
    assert pins.file_sha256(str(payload), cached=False) == first  # cr check's audit never reads it
    payload.write_bytes(b"b" * 4096)  # same size, new mtime
    os.utime(payload, (old + 1, old + 1))
    assert pins.file_sha256(str(payload)) == hashlib.sha256(b"b" * 4096).hexdigest()


# -- archives and reproduction ------------------------------------------------------------

def _solution(repo: Path, model: str) -> None:
    sol = json.loads((SHIPPED.parents[3] / "solution" / "iris-logreg-onnxruntime" / "1.0.0" / "meta.json").read_text())
    sol.update(uid=os.urandom(8).hex(), name=f"{model}-sol", model=f"model:{model}@1.0.0")
    sol["actions"][0]["params"].update(min_duration_s=0, min_queries=3, warmup_queries=0)
    write_json(repo / "solution" / f"{model}-sol" / "1.0.0" / "meta.json", sol)


def _rewrite_manifest(archive: Path, out: Path, change) -> None:
    import zipfile

    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "manifest.json":
                manifest = json.loads(data)
                change(manifest)
                data = json.dumps(manifest, indent=2).encode()
            dst.writestr(info, data)


def test_an_archive_records_the_pin_and_refuses_a_tampered_one(local, run_cr, tmp_path):
    _copy(local, "iris-copy")
    _solution(local, "iris-copy")
    assert run_cr("pack", "solution:iris-copy-sol", "-o", str(tmp_path)).returncode == 0
    archive = tmp_path / "iris-copy-sol-1.0.0.cr.zip"
    import zipfile

    with zipfile.ZipFile(archive) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        assert not any(n.endswith(".onnx") for n in zf.namelist())  # pinned, not carried
    entry = next(e for e in manifest["excluded"] if e["ref"] == "model:iris-copy@1.0.0")
    shipped = json.loads(SHIPPED.read_text())["source"]
    assert {k: entry[k] for k in ("package", "package_version", "path", "sha256")} == \
        {k: shipped[k] for k in ("package", "package_version", "path", "sha256")}
    assert entry["redistributable"] is True

    tampered = tmp_path / "tampered" / archive.name
    tampered.parent.mkdir()
    _rewrite_manifest(archive, tampered, lambda m: next(e for e in m["excluded"] if e["ref"] == entry["ref"]).update(sha256=ZEROS))
    fresh = {"CR_HOME": str(tmp_path / "fresh")}
    done = run_cr("unpack", str(tampered), env=fresh)
    _one_error(done, "model/iris-copy/1.0.0/meta.json", "source.sha256", ZEROS, "tampered pin")
    assert not (tmp_path / "fresh" / "archives").exists() or not any((tmp_path / "fresh" / "archives").iterdir())
    unpacked = run_cr("unpack", str(archive), env=fresh)
    assert unpacked.returncode == 0, unpacked.stderr
    assert "pinned sha256 " + entry["sha256"][:12] in unpacked.stdout


def test_reproduce_refuses_an_archive_whose_pinned_file_differs_from_the_installed_one(local, run_cr, tmp_path):
    _copy(local, "iris-zeros", sha256=ZEROS, package_version=ORT)
    _solution(local, "iris-zeros")
    assert run_cr("pack", "solution:iris-zeros-sol", "-o", str(tmp_path)).returncode == 0
    fresh = {"CR_HOME": str(tmp_path / "fresh")}
    done = run_cr("reproduce", str(tmp_path / "iris-zeros-sol-1.0.0.cr.zip"), "--trust", env=fresh)
    _one_error(done, "does not match its pin", ZEROS)
    assert json.loads(run_cr("results", "list", "--json", env=fresh).stdout) == []  # nothing ran
    _copy(local, "iris-copy")
    _solution(local, "iris-copy")
    ready = run_cr("init", "solution", "iris-copy-sol", "--json")
    assert ready.returncode == 0, ready.stderr
    assert json.loads(ready.stdout)["payload"]["state"] == "verified"
