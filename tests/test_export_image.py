"""cr export solution --oci / --docker-archive: the layout's format and reproducibility, the
bad inputs, and (slow, as root) the image run without network: `cr benchmark solution`
passes inside it and its records name the image's digest and the lock."""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from cr.export import oci

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = "lenet-digits-onnxruntime"


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _layer(tmp_path, name):
    src = tmp_path / name
    (src / "b").mkdir(parents=True)
    (src / "b" / "x.txt").write_text("x")
    (src / "a.sh").write_text("#!/bin/sh\n")
    os.chmod(src / "a.sh", 0o755)
    os.symlink("a.sh", src / "link")
    return src


def test_a_layer_is_reproducible_and_carries_no_owner_or_time(tmp_path):
    one, two = _layer(tmp_path, "one"), _layer(tmp_path, "two")
    os.utime(two / "b" / "x.txt", (1e9, 1e9))  # other mtimes, same content
    outs = []
    for src in (one, two):
        buf = io.BytesIO()
        diff_id, digest, size = oci.write_layer(oci.tree(src, "/opt/x"), buf)
        assert digest == _sha(buf.getvalue()) and size == len(buf.getvalue())
        outs.append((diff_id, digest))
        with tarfile.open(fileobj=io.BytesIO(buf.getvalue()), mode="r:gz") as tar:
            members = tar.getmembers()
    assert outs[0] == outs[1]
    names = [m.name for m in members]
    assert names == sorted(names) == ["opt", "opt/x", "opt/x/a.sh", "opt/x/b", "opt/x/b/x.txt", "opt/x/link"]
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, 0, "", "")}
    by = {m.name: m for m in members}
    assert by["opt/x/a.sh"].mode == 0o755 and by["opt/x/link"].issym() and by["opt/x/link"].linkname == "a.sh"


def test_the_layout_and_the_docker_archive_hold_the_same_image(tmp_path):
    layout = oci.Layout(tmp_path / "img")
    layout.add_layer({"/etc/hello": oci.Bytes(b"hi\n")}, "one file")
    desc = layout.finish({"config": {"Cmd": ["true"]}}, "amd64", "reefkit/t:1")
    index = json.loads((tmp_path / "img" / "index.json").read_text())
    assert json.loads((tmp_path / "img" / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    assert index["manifests"][0]["digest"] == desc["digest"]
    assert index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] == "reefkit/t:1"
    _, manifest, config = oci.read_layout(tmp_path / "img")
    blobs = tmp_path / "img" / "blobs" / "sha256"
    for d in [desc, manifest["config"], *manifest["layers"]]:  # content-addressed: every digest is its blob's
        assert _sha((blobs / d["digest"][7:]).read_bytes()) == d["digest"]
    assert config["rootfs"]["diff_ids"] and config["architecture"] == "amd64" and "created" not in config
    oci.docker_archive(tmp_path / "img", tmp_path / "img.tar", "reefkit/t:1")
    with tarfile.open(tmp_path / "img.tar") as tar:
        (entry,) = json.load(tar.extractfile("manifest.json"))
        assert entry["RepoTags"] == ["reefkit/t:1"]
        assert entry["Config"] == "blobs/sha256/" + manifest["config"]["digest"][7:]
        assert entry["Layers"] == ["blobs/sha256/" + l["digest"][7:] for l in manifest["layers"]]
        assert "index.json" in tar.getnames() and "oci-layout" in tar.getnames()
    a = (tmp_path / "img.tar").read_bytes()
    oci.docker_archive(tmp_path / "img", tmp_path / "again.tar", "reefkit/t:1")
    assert (tmp_path / "again.tar").read_bytes() == a


def test_an_image_records_its_provenance_only_inside_an_image(tmp_path, monkeypatch):
    from cr.results import record

    monkeypatch.delenv("REEFKIT_IMAGE", raising=False)
    assert "image" not in record.new("benchmark", [], {"name": "null"}, {}, None, record.now())
    info = tmp_path / "image.json"
    info.write_text(json.dumps({"solution": "solution:s@1.0.0", "lock_sha256": "c" * 64, "software": {"numpy": "2.0.0"}}))
    monkeypatch.setenv("REEFKIT_IMAGE", str(info))
    monkeypatch.setenv("REEFKIT_IMAGE_DIGEST", "sha256:" + "d" * 64)
    image = record.new("benchmark", [], {"name": "null"}, {}, None, record.now())["image"]
    assert image["digest"] == "sha256:" + "d" * 64 and image["lock_sha256"] == "c" * 64
    assert image["solution"] == "solution:s@1.0.0" and image["software"] == {"numpy": "2.0.0"}


def _one_error(r, *words):
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("Error: ") and lines[1].startswith("Hint: "), r.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_a_solution_without_a_lock_for_the_architecture_is_refused(run_cr, tmp_path):
    r = run_cr("export", "solution", SOLUTION, "--oci", str(tmp_path / "img"))
    _one_error(r, f"solution:{SOLUTION}@", "has no lock for amd64" if os.uname().machine == "x86_64" else "has no lock")
    assert "cr init solution " + SOLUTION in r.stderr
    assert not (tmp_path / "img").exists()


@pytest.mark.slow
def test_a_lock_of_another_architecture_does_not_make_an_image(run_cr, tmp_path):
    if os.uname().machine != "x86_64":
        pytest.skip("the test names amd64 as this machine's architecture")
    assert run_cr("resolve", f"solution:{SOLUTION}", timeout=300).returncode == 0
    r = run_cr("export", "solution", SOLUTION, "--arch", "arm64", "--docker-archive", str(tmp_path / "img.tar"))
    _one_error(r, "has no lock for arm64 (aarch64)", "there are locks for x86_64")
    assert not (tmp_path / "img.tar").exists() and list(tmp_path.iterdir()) == [tmp_path / "crhome"]


def test_an_existing_target_is_refused_and_left_as_it_was(run_cr, tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("mine")
    r = run_cr("export", "solution", SOLUTION, "--oci", str(full))
    _one_error(r, f"--oci {full} exists and is not empty")
    assert [p.name for p in full.iterdir()] == ["notes.txt"] and (full / "notes.txt").read_text() == "mine"
    tar = tmp_path / "img.tar"
    tar.write_bytes(b"old")
    r = run_cr("export", "solution", SOLUTION, "--docker-archive", str(tar))
    _one_error(r, f"--docker-archive {tar} exists")
    assert tar.read_bytes() == b"old"


# ---------------------------------------------------------------------------- the real image

def _base_root_or_skip() -> None:
    if os.geteuid() != 0:
        pytest.skip("building and running an image root needs root (mmdebstrap, unshare, chroot)")
    cached = Path("/var/tmp/reefkit-image-roots")
    if not shutil.which("mmdebstrap") and not any(cached.glob("*-amd64/.reefkit-root")):
        pytest.skip("mmdebstrap is not installed and no base root is cached (apt-get install mmdebstrap)")
    if os.uname().machine != "x86_64":
        pytest.skip("the test builds the amd64 image")
    probe = subprocess.run(["unshare", "--net", "--pid", "--fork", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"this machine cannot make namespaces: {probe.stderr.strip()}")


@pytest.mark.slow
def test_the_image_is_reproducible_and_benchmarks_without_network(run_cr, tmp_path):
    _base_root_or_skip()
    r = run_cr("init", "solution", SOLUTION, timeout=600)
    assert r.returncode == 0, r.stderr
    r = run_cr("export", "solution", SOLUTION, "--oci", str(tmp_path / "a"), "--json", timeout=900)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    r = run_cr("export", "solution", SOLUTION, "--oci", str(tmp_path / "b"), "--docker-archive", str(tmp_path / "b.tar"), "--json", timeout=900)
    assert r.returncode == 0, r.stderr
    again = json.loads(r.stdout)
    assert again["digest"] == summary["digest"]  # same inputs, same digest
    assert [l["digest"] for l in again["layers"]] == [l["digest"] for l in summary["layers"]]
    assert tarfile.is_tarfile(tmp_path / "b.tar")
    shutil.rmtree(tmp_path / "b")

    _, manifest, config = oci.read_layout(tmp_path / "a")
    assert config["config"]["Entrypoint"] + config["config"]["Cmd"] == ["cr", "benchmark", "solution", SOLUTION]
    assert len(manifest["layers"]) == 5
    root = tmp_path / "root"
    root.mkdir()
    oci.unpack(tmp_path / "a", root)
    info = json.loads((root / "etc" / "reefkit" / "image.json").read_text())
    assert info["software"]["onnxruntime"] and info["lock_sha256"] == summary["lock_sha256"]
    cmd = oci.sandbox_command(root, config, env={"REEFKIT_IMAGE_DIGEST": summary["digest"]})
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASS" in run.stdout and "VALID" in run.stdout
    records = [json.loads(p.read_text()) for p in (root / "var" / "lib" / "reefkit" / "results").glob("*/*.json")]
    assert {r["action"] for r in records} == {"benchmark", "validate"}
    for rec in records:
        assert rec["status"] == "ok"
        assert rec["image"]["digest"] == summary["digest"]
        assert rec["image"]["lock_sha256"] == summary["lock_sha256"]
        # the locked versions are the ones that ran inside
        ran = {s["name"]: s["version"] for s in rec["lock"]["software"]}
        assert {k: ran[k] for k in info["software"]} == info["software"]
        assert rec["runtime"]["executable"].startswith("/opt/reefkit/venv/")


@pytest.mark.slow
def test_podman_loads_and_runs_the_docker_archive(run_cr, tmp_path):
    _base_root_or_skip()
    if not shutil.which("podman"):
        pytest.skip("podman is not installed (apt-get install podman)")
    import tempfile

    runroot = tempfile.mkdtemp(prefix="crp-", dir="/tmp")  # podman wants a runroot under 50 characters
    store = ["--root", str(tmp_path / "storage"), "--runroot", runroot, "--storage-driver", "vfs",
             "--cgroup-manager", "cgroupfs", "--events-backend", "none"]
    probe = subprocess.run(["podman", *store, "run", "--rm", "--network=none", "--rootfs", "/", "true"],
                           capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        subprocess.run(["podman", *store, "rm", "--all", "--force"], capture_output=True, timeout=120)
        shutil.rmtree(runroot, ignore_errors=True)
        pytest.skip(f"podman cannot run containers on this machine: {probe.stderr.strip().splitlines()[-1]}")
    assert run_cr("init", "solution", SOLUTION, timeout=600).returncode == 0
    r = run_cr("export", "solution", SOLUTION, "--docker-archive", str(tmp_path / "img.tar"), "--json", timeout=900)
    assert r.returncode == 0, r.stderr
    digest = json.loads(r.stdout)["digest"]
    load = subprocess.run(["podman", *store, "load", "-i", str(tmp_path / "img.tar")], capture_output=True, text=True, timeout=600)
    assert load.returncode == 0, load.stderr
    run = subprocess.run(["podman", *store, "run", "--rm", "--network=none", "-e", f"REEFKIT_IMAGE_DIGEST={digest}",
                          f"reefkit/{SOLUTION}:1.0.0"], capture_output=True, text=True, timeout=600)
    subprocess.run(["podman", *store, "rmi", "--all", "--force"], capture_output=True)
    shutil.rmtree(runroot, ignore_errors=True)
    assert run.returncode == 0, run.stderr
    assert "PASS" in run.stdout


def test_a_solution_outside_the_builtin_repository_is_refused(run_cr, tmp_path):
    r = run_cr("init", "solution", "my-digits", "--model", "model:lenet-digits@1.0.0", "--backend", "onnxruntime", timeout=600)
    assert r.returncode == 0, r.stderr
    r = run_cr("resolve", "solution:my-digits", timeout=600)  # its lock, made on this machine
    assert r.returncode == 0, r.stderr
    r = run_cr("export", "solution", "my-digits", "--oci", str(tmp_path / "img"))
    _one_error(r, "solution:my-digits@", "outside reefkit's built-in repository")
    assert "cr pack solution" in r.stderr and not (tmp_path / "img").exists()


# ---------------------------------------------------------------------------- arm64 under QEMU

ARM_ROOT = Path(os.environ.get("ARM_ROOTS", "/var/tmp/reefkit-arm-roots")) / "arm64"
ARM_CR_HOME = ARM_ROOT / "root" / ".local" / "share" / "reefkit"   # the Arm CI job's CR_HOME
ARM_PYTHON = "/opt/reefkit/src/.venv/bin/python"                    # the job's venv (cr's deps, aarch64)
ARM_SRC = "/opt/reefkit/image-src"                                  # this checkout, copied in


def _arm64_or_skip() -> None:
    if os.environ.get("REEFKIT_ARM64_IMAGE_LATER") == "1":  # .ci/run: its Arm part runs this test after the suite
        pytest.skip("scripts/ci-arm.sh runs the arm64 image test after this suite, on the lock its arm64 job makes")
    if os.geteuid() != 0:
        pytest.skip("the arm64 image needs root (mount, chroot, binfmt_misc, unshare)")
    if os.uname().machine != "x86_64":
        pytest.skip("the test emulates arm64 on an x86_64 host")
    if not (ARM_ROOT / ".reefkit-root").exists() or not (ARM_ROOT / ARM_PYTHON.lstrip("/")).exists():
        pytest.skip(f"no Arm CI userland with cr installed at {ARM_ROOT} (sudo scripts/arm-root.sh arm64 build && sudo scripts/arm-root.sh arm64 job)")
    locks = ARM_CR_HOME / "locks" / "solution" / SOLUTION
    if not any(locks.glob("*/*.json")):
        pytest.skip(f"the arm64 userland has no lock of {SOLUTION} (sudo scripts/arm-root.sh arm64 job)")
    if not Path("/usr/libexec/qemu-binfmt/aarch64-binfmt-P").exists() and not shutil.which("qemu-aarch64-static"):
        pytest.skip("qemu-user-static is not installed (apt-get install qemu-user-static binfmt-support)")


@pytest.mark.slow
def test_the_arm64_image_benchmarks_under_qemu_without_network(tmp_path):
    """The arm64 image from the lock the Arm CI made inside its emulated userland: `cr export`
    runs there (under QEMU), where the lock's prefixes and reefkit's own aarch64 dependencies
    are; then the unpacked image runs `cr benchmark solution` with no network, the aarch64
    binaries run by QEMU through binfmt_misc (its F flag: nothing of QEMU goes into the image)."""
    _arm64_or_skip()
    arm = [str(ROOT / "scripts" / "arm-root.sh"), "arm64"]
    binfmt_state_before = (ARM_ROOT.parent / ".binfmt-state").exists()
    base = subprocess.run([str(ROOT / "scripts" / "image-root.sh"), "arm64"], capture_output=True, text=True, timeout=900)
    assert base.returncode == 0, base.stderr
    base_root = Path(base.stdout.strip().splitlines()[-1])
    base_in = f"/mnt/{base_root.name}"  # bound in under its own name, which the base layer's comment carries
    src = ARM_ROOT / ARM_SRC.lstrip("/")
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(subprocess.run(
            ["tar", "--null", "--no-recursion", "-T", "-", "-cf", "-"], cwd=ROOT, input=files, capture_output=True, check=True).stdout)) as tar:
        tar.extractall(src, filter="tar")
    bind = ARM_ROOT / base_in.lstrip("/")
    bind.mkdir(parents=True, exist_ok=True)
    out = "/tmp/reefkit-arm64-oci"
    shutil.rmtree(ARM_ROOT / out.lstrip("/"), ignore_errors=True)
    subprocess.run(["mount", "--bind", str(base_root), str(bind)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(bind)], check=True)
        export = subprocess.run([*arm, "run", "--", "sh", "-c",
                                 f"cd {ARM_SRC} && REEFKIT_IMAGE_ROOT={base_in} {ARM_PYTHON} -m cr export solution {SOLUTION} --oci {out} --arch arm64 --json"],
                                capture_output=True, text=True, timeout=1800)
    finally:
        subprocess.run(["umount", str(bind)], capture_output=True)  # if arm-root.sh's own unmount has not
        shutil.rmtree(src, ignore_errors=True)
    assert export.returncode == 0, export.stdout[-2000:] + export.stderr[-2000:]
    summary = json.loads(export.stdout[export.stdout.index("{"):])
    assert summary["arch"] == "arm64" and summary["software"]["onnxruntime"]
    assert summary["layers"][0]["comment"] == f"Debian base root ({base_root.name})"
    layout = tmp_path / "oci"
    shutil.move(str(ARM_ROOT / out.lstrip("/")), layout)

    _, manifest, config = oci.read_layout(layout)
    assert config["architecture"] == "arm64" and len(manifest["layers"]) == 5
    root = tmp_path / "root"
    root.mkdir()
    oci.unpack(layout, root)
    assert b"\xb7\x00" == (root / "usr" / "bin" / "python3").resolve().read_bytes()[18:20]  # e_machine: AArch64
    try:
        # export left binfmt on (arm-root.sh's mount); it stays so until binfmt-restore
        cmd = oci.sandbox_command(root, config, env={"REEFKIT_IMAGE_DIGEST": summary["digest"]})
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    finally:
        if not binfmt_state_before:
            subprocess.run([*arm, "binfmt-restore"], capture_output=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASS" in run.stdout and "VALID" in run.stdout
    records = [json.loads(p.read_text()) for p in (root / "var" / "lib" / "reefkit" / "results").glob("*/*.json")]
    assert {r["action"] for r in records} == {"benchmark", "validate"}
    for rec in records:
        assert rec["status"] == "ok"
        assert rec["image"]["digest"] == summary["digest"] and rec["image"]["lock_sha256"] == summary["lock_sha256"]
        assert rec["platform"]["arch"] == "aarch64" and rec["lock"]["platform"]["arch"] == "aarch64"
        ran = {s["name"]: s["version"] for s in rec["lock"]["software"]}
        assert {k: ran[k] for k in summary["software"]} == summary["software"]
        assert rec["runtime"]["executable"].startswith("/opt/reefkit/venv/")
