"""Emulated userlands (QEMU user-mode): detected as such, never passed off as the real board.

Fixtures (tests/fixtures/platforms/):
- qemu-rpi4-64: `cr platform --capture` run inside an arm64 Debian root under
  qemu-aarch64-static on an x86_64 host, with the Raspberry Pi 4 persona of
  scripts/arm-root.sh (the rpi4-64 cpuinfo, meminfo and device tree bound in).
- qemu-rpi4-32: the same in an armhf root under qemu-arm, with the rpi4-32 persona.
- qemu-aarch64-on-x86: the same without the persona: QEMU passes the host's x86
  /proc/cpuinfo through, while uname -m answers aarch64.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cr.results.summary import platform_description
from helpers.dashboard import browser, page  # noqa: F401  (fixtures: Debian Chromium, skipped without it)
from cr.platform import Platform, detect, parse
from cr.software.recipe import Recipe
from cr.store.meta import load_json, validate

from conftest import ROOT

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "platforms"
SCRIPT = ROOT / "scripts" / "arm-root.sh"
X86_CAPS = {"avx", "avx2", "fma", "f16c", "sse4_2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16"}


def test_persona_root_is_a_raspberry_pi_marked_emulated():
    p = detect(FIXTURES / "qemu-rpi4-64")
    assert (p.arch, p.emulated, p.host_arch) == ("aarch64", "qemu-user", "x86_64")
    assert (p.board, p.soc, p.cpu.model) == ("Raspberry Pi 4 Model B", "bcm2711", "Cortex-A72")
    caps = p.capabilities()
    assert {"aarch64", "raspberry-pi-4", "neon", "emulated"} <= caps
    assert not caps & X86_CAPS
    assert p.markers()["platform_machine"] == "aarch64"  # wheels are chosen for the emulated machine


def test_armhf_persona_root_is_a_32bit_pi_marked_emulated():
    p = detect(FIXTURES / "qemu-rpi4-32")
    assert (p.arch, p.emulated, p.host_arch, p.board) == ("armv7l", "qemu-user", "x86_64", "Raspberry Pi 4 Model B")
    assert p.markers()["platform_machine"] == "armv7l"
    assert "emulated" in p.capabilities() and not p.capabilities() & X86_CAPS
    assert p.fingerprint not in (detect(FIXTURES / "rpi4-32").fingerprint, detect(FIXTURES / "qemu-rpi4-64").fingerprint)


def test_host_cpuinfo_seen_from_an_aarch64_uname_gives_no_x86_facts():
    p = detect(FIXTURES / "qemu-aarch64-on-x86")
    assert (p.arch, p.emulated, p.host_arch) == ("aarch64", "qemu-user", "x86_64")
    # the AMD EPYC in /proc/cpuinfo is the host's: neither its name nor its flags are the platform's
    assert (p.cpu.model, p.cpu.vendor, p.cpu.flags) == (None, None, [])
    assert p.capabilities() == {"aarch64", "linux", "emulated"}


def test_cpuinfo_arch_mismatch_alone_is_enough(tmp_path):
    """No kernel arch file and no maps: an x86 cpuinfo under an aarch64 uname still says emulated."""
    shutil.copytree(FIXTURES / "qemu-aarch64-on-x86", tmp_path / "r")
    (tmp_path / "r" / "proc" / "sys" / "kernel" / "arch").unlink()
    (tmp_path / "r" / "proc" / "thread-self" / "maps").unlink()
    p = detect(tmp_path / "r")
    assert (p.emulated, p.host_arch, p.cpu.flags) == ("qemu-user", "x86_64", [])


def test_qemu_mapping_alone_is_enough(tmp_path):
    """The persona hides the cpuinfo mismatch and an old kernel has no /proc/sys/kernel/arch:
    the QEMU binary mapped into the process still tells."""
    shutil.copytree(FIXTURES / "qemu-rpi4-64", tmp_path / "r")
    (tmp_path / "r" / "proc" / "sys" / "kernel" / "arch").unlink()
    p = detect(tmp_path / "r")
    assert (p.emulated, p.host_arch, p.board) == ("qemu-user", None, "Raspberry Pi 4 Model B")


@pytest.mark.parametrize("name", ["rpi4-64", "rpi4-32", "jetson-agx-orin", "x86-h100", "x86-laptop", "android-termux", "garbled"])
def test_real_machines_are_not_emulated(name):
    p = detect(FIXTURES / name)
    assert p.emulated is None and p.host_arch is None
    assert "emulated" not in p.capabilities()


def test_32bit_userland_on_a_64bit_arm_kernel_is_native(tmp_path):
    """Raspberry Pi OS 32-bit on the 64-bit kernel: armv7l userland, aarch64 kernel: not emulation."""
    shutil.copytree(FIXTURES / "rpi4-32", tmp_path / "r")
    (tmp_path / "r" / "proc" / "sys" / "kernel" / "arch").write_text("aarch64\n")
    assert detect(tmp_path / "r").emulated is None


def test_emulated_pi_has_its_own_fingerprint_and_real_ones_keep_theirs():
    real = detect(FIXTURES / "rpi4-64")
    emulated = detect(FIXTURES / "qemu-rpi4-64")
    assert emulated.fingerprint != real.fingerprint
    # the same facts without the emulation marks: the fingerprint a real machine would have
    plain = Platform.from_dict({**emulated.to_dict(), "emulated": None, "host_arch": None})
    assert plain.fingerprint != emulated.fingerprint
    assert "emulated" not in real.stable_facts()  # real platforms' fingerprints are unchanged by the field


def test_emulated_platform_round_trips_and_validates():
    data = detect(FIXTURES / "qemu-rpi4-64").to_dict()
    assert data["emulated"] == "qemu-user" and "emulated" in data["capabilities"]
    component = {"uid": "0123456789abcdef", "kind": "platform", "name": "emulated-pi", "version": "1.0.0", **data}
    assert validate(component) == []
    assert Platform.from_dict(data).fingerprint == data["fingerprint"]


def test_cli_says_emulated(run_cr):
    done = run_cr("platform", "--root", str(FIXTURES / "qemu-rpi4-64"))
    assert done.returncode == 0, done.stderr
    assert "aarch64 (emulated: qemu-user on x86_64)" in done.stdout
    data = json.loads(run_cr("platform", "--root", str(FIXTURES / "qemu-rpi4-64"), "--json").stdout)
    assert (data["emulated"], data["host_arch"]) == ("qemu-user", "x86_64")


def test_dashboard_label_never_passes_an_emulated_pi_for_a_real_one():
    real = detect(FIXTURES / "rpi4-64").to_dict()
    emulated = detect(FIXTURES / "qemu-rpi4-64").to_dict()
    assert platform_description(real) == "Raspberry Pi 4 Model B (linux/aarch64, 4 cores)"
    assert platform_description(emulated) == "Raspberry Pi 4 Model B (linux/aarch64, 2 cores) [emulated: qemu-user aarch64 on x86_64]"


@pytest.mark.parametrize("path,expected", [
    ("/usr/bin/qemu-aarch64-static", "qemu-aarch64"),
    ("/usr/bin/qemu-arm-static", "qemu-arm"),
    ("/usr/bin/qemu-arm", "qemu-arm"),
    ("/usr/libexec/qemu-binfmt/aarch64-binfmt-P", "qemu-aarch64"),
    ("/usr/lib/x86_64-linux-gnu/libc.so.6", None),
    ("/home/u/qemu-notes/libfoo.so", None),
    ("[heap]", None),
])
def test_qemu_interpreter_from_maps(path, expected):
    line = f"7faa42600000-7faa42828000 r--p 00000000 fe:00 2171959                    {path}\n"
    assert parse.qemu_interpreter("00400000-00916000 r--p 00000000 fe:00 1  /usr/bin/python3.11\n" + line) == expected


def test_qemu_interpreter_garbled_input():
    for text in (None, "", "\x00\xff garbage", "only three fields here"):
        assert parse.qemu_interpreter(text) is None


@pytest.mark.parametrize("arch,family", [
    ("x86_64", "x86"), ("i686", "x86"), ("amd64", "x86"), ("aarch64", "arm64"), ("arm64", "arm64"),
    ("armv7l", "arm"), ("armv6l", "arm"), ("riscv64", "riscv64"), ("", None), (None, None),
])
def test_arch_family(arch, family):
    assert parse.arch_family(arch) == family


def test_proc_sys_files_are_read_on_the_host():
    """/proc/sys refuses a single read larger than kmalloc allows; read_text reads in pieces."""
    from cr.platform.sources import read_text

    if not os.path.exists("/proc/sys/kernel/ostype"):
        pytest.skip("no /proc/sys here")
    assert read_text("/proc/sys/kernel/ostype").strip() == os.uname().sysname


# -- recipes for 32-bit Arm (Raspberry Pi OS 32-bit, Debian armhf) -------------------------

def _markers(machine: str, python: str) -> dict:
    p = Platform(os="linux", arch=machine, kernel="6.1.0", kernel_version="#1", python=python, python_implementation="CPython",
                 python_implementation_version=python)
    return p.markers()


def _recipe(name: str) -> Recipe:
    path = ROOT / "recipes" / name / "recipe.json"
    return Recipe.from_meta(load_json(path), str(path))


def test_tflite_runtime_on_armv7l_is_2_14_without_pip_dependencies():
    litert = _recipe("ai-edge-litert")
    pi = _markers("armv7l", "3.11.2")
    assert litert.installable_versions(pi)[0] == "2.14.0"  # the only armv7l wheel for CPython 3.11
    method = litert.method_for("2.14.0", pi)
    assert method.packages_for("2.14.0") == ["tflite-runtime==2.14.0"]
    assert method.spec["no_deps"] is True  # numpy comes from the lock, not a second copy from pip
    assert "software:numpy@>=1.21" in [str(d) for d in litert.meta["deps"]]
    x86 = litert.method_for(litert.installable_versions(_markers("x86_64", "3.11.2"))[0], _markers("x86_64", "3.11.2"))
    assert x86.packages_for("2.3.0") == ["ai-edge-litert==2.3.0"] and not x86.spec.get("no_deps")


@pytest.mark.parametrize("name,package", [("numpy", "python3-numpy"), ("scikit-learn", "python3-sklearn")])
def test_numpy_and_sklearn_come_from_debian_on_armv7l(name, package):
    r = _recipe(name)
    pi = r.methods_for(_markers("armv7l", "3.11.2"))
    assert [(m.method, m.packages_for(m.versions[0])) for m in pi] == [("apt", [package])]
    assert "1.24.2" in pi[0].versions or "1.2.1" in pi[0].versions  # Debian bookworm's
    for machine in ("x86_64", "aarch64"):  # PyPI wheels everywhere else, never apt
        assert {m.method for m in r.methods_for(_markers(machine, "3.11.2"))} == {"pip"}


# -- scripts/arm-root.sh ----------------------------------------------------------------

def _script(*args, env=None, **kw):
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})}, **kw)


def test_script_usage_and_bad_arguments():
    assert SCRIPT.exists() and os.access(SCRIPT, os.X_OK)
    done = _script("--help")
    assert done.returncode == 0 and "build" in done.stdout and "binfmt-restore" in done.stdout
    bad = _script("riscv64", "build")
    assert bad.returncode == 1
    assert bad.stderr.splitlines() == ["Error: unknown architecture 'riscv64'", "Hint: give arm64 or armhf"]
    bad = _script("arm64", "frobnicate")
    assert bad.returncode == 1 and bad.stderr.startswith("Error: unknown command 'frobnicate'")


def test_script_refuses_roots_inside_a_checkout(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("building a root needs root")
    done = _script("arm64", "build", env={"ARM_ROOTS": str(ROOT / "arm-roots-here")})
    assert done.returncode == 1 and "inside a git checkout" in done.stderr
    assert not (ROOT / "arm-roots-here").exists()


@pytest.mark.parametrize("roots_name", ["roots", "my roots", "tab\troots", "back\\slash", "all of\tthem\\"])
def test_delete_is_refused_while_something_is_mounted_in_the_root(tmp_path, roots_name):
    """A root with /dev bound in: rm -rf would delete the host's device nodes. Tried with a
    bind mount of a harmless folder in /dev's place, under folder names that the kernel
    escapes in /proc/self/mountinfo (space, tab, backslash): the mount is seen all the same."""
    if os.geteuid() != 0 or not shutil.which("mount") or not shutil.which("umount"):
        pytest.skip("mounting needs root and mount(8)")
    roots = tmp_path / roots_name
    harmless = tmp_path / "harmless"
    harmless.mkdir()
    (harmless / "precious").write_text("keep me")
    (roots / "arm64" / "dev").mkdir(parents=True)
    (roots / ".arm64.made-by-arm-root").write_text("")  # what build writes before it starts
    if subprocess.run(["mount", "--bind", str(harmless), str(roots / "arm64" / "dev")], capture_output=True).returncode != 0:
        pytest.skip("bind mounts are not allowed here")
    try:
        done = _script("arm64", "delete", env={"ARM_ROOTS": str(roots)})
        assert done.returncode == 1
        assert done.stderr.startswith(f"Error: {roots}/arm64 still has mounts: {roots}/arm64/dev")
        assert "umount" in done.stderr.splitlines()[1]
        assert (harmless / "precious").read_text() == "keep me"
        # umount then delete: the bound folder survives, the root goes
        assert _script("arm64", "umount", env={"ARM_ROOTS": str(roots)}).returncode == 0
        assert _script("arm64", "umount", env={"ARM_ROOTS": str(roots)}).returncode == 0  # idempotent
        assert _script("arm64", "delete", env={"ARM_ROOTS": str(roots)}).returncode == 0
        assert not (roots / "arm64").exists()
        assert (harmless / "precious").read_text() == "keep me"
    finally:
        subprocess.run(["umount", str(roots / "arm64" / "dev")], capture_output=True)


def test_build_and_delete_never_remove_a_folder_the_script_did_not_make(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("building a root needs root")
    roots = tmp_path / "roots with\ta tab"
    (roots / "arm64").mkdir(parents=True)
    (roots / "arm64" / "precious").write_text("keep me")
    for command in ("build", "delete"):
        done = _script("arm64", command, env={"ARM_ROOTS": str(roots)})
        assert done.returncode == 1 and "was not made by" in done.stderr.splitlines()[0], done.stderr
        assert (roots / "arm64" / "precious").read_text() == "keep me"


def test_the_project_copy_takes_every_file_whatever_the_length_of_the_name_list(tmp_path):
    """copy_project's tar reads its names from one list: xargs split a list past 128 KiB into
    several archives, and the reader stopped at the first one's end."""
    text = SCRIPT.read_text()
    assert "xargs" not in text and "tar --null --no-recursion -T - -cf -" in text
    src, dest = tmp_path / "src", tmp_path / "dest"
    names = [f"{'n' * 200}-{i:05d}" for i in range(1200)]  # 240 KB of names
    src.mkdir()
    dest.mkdir()
    for n in names:
        (src / n).write_text(n)
    listing = b"".join(n.encode() + b"\0" for n in names)
    tar = subprocess.run(f"cd '{src}' && tar --null --no-recursion -T - -cf - | tar -xf - -C '{dest}'", shell=True,
                         input=listing, capture_output=True, timeout=60)
    assert tar.returncode == 0, tar.stderr
    assert sorted(p.name for p in dest.iterdir()) == names


# -- the dashboard ------------------------------------------------------------------------

def test_dashboard_shows_emulated_and_real_pi_apart(tmp_path, page):
    """The same solution on a real Pi and on an emulated one: two rows, two platforms; the
    emulated one carries a tag and its label says so."""
    from cr.dashboard import build, sample
    from cr.events import CollectingReporter, set_reporter

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from helpers.dashboard import _load_js, _open, _rows, write

    import random

    rng = random.Random(3)
    folder = tmp_path / "results"
    real, emulated = detect(FIXTURES / "rpi4-64").to_dict(), detect(FIXTURES / "qemu-rpi4-64").to_dict()
    for n, (platform, median) in enumerate(((real, 400_000), (emulated, 1_300_000))):
        rec = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", platform, sample.latencies(median, 300, rng),
                                      uid=f"e{n:015x}", started=f"2026-12-01T10:0{n}:00.000Z")
        write(rec, folder / f"{n}.json")
    old = set_reporter(CollectingReporter())
    try:
        build(folder, tmp_path / "dash")
    finally:
        set_reporter(old)
    rows = _rows(_load_js(tmp_path / "dash" / "data" / "index.js", "CR_DATA_INDEX"))
    assert sorted(r["platform_label"] for r in rows) == [
        "Raspberry Pi 4 Model B (linux/aarch64, 2 cores) [emulated: qemu-user aarch64 on x86_64]",  # the host's cores
        "Raspberry Pi 4 Model B (linux/aarch64, 4 cores)"]
    assert len({r["platform"] for r in rows}) == 2
    _open(page, (tmp_path / "dash",), "#/leaderboard")
    page.wait_for_selector("#leaderboard tbody tr[data-row]")
    cells = page.locator("#leaderboard td[data-col=platform_label]").all_text_contents()
    assert sorted(c.strip() for c in cells) == ["Raspberry Pi 4 Model B (linux/aarch64, 2 cores) emulated",
                                                "Raspberry Pi 4 Model B (linux/aarch64, 4 cores)"]
    assert page.locator("#leaderboard [data-part=emulated]").count() == 1
    assert not page.problems
