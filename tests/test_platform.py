"""Platform detection: captured real machines as fixtures, this host live, the CLI.

tests/fixtures/platforms/<name>/ holds files captured from devices this machine is not
(a Raspberry Pi, a Jetson, an H100 server, an Android phone); README.md there describes
the layout. Tools are faked only by scripts on PATH fed with those captured outputs.
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import platform as stdlib_platform
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.markers import Marker, default_environment

from cr.errors import Conflict, NotFound
from cr.events import CollectingReporter, set_reporter
from cr.platform import Platform, capture, current, detect
from cr.platform import parse
from cr.store.meta import validate

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "platforms"
H100 = FIXTURES / "x86-h100"

# fixture -> what a person reading the captured files would say about that machine
EXPECTED = {
    "rpi4-64": dict(
        os="linux", distribution="debian", distribution_version="12", arch="aarch64", cpu_model="Cortex-A72",
        cores=4, threads=4, max_mhz=1800, memory_gib=7.6, board="Raspberry Pi 4 Model B", board_revision="1.4",
        soc="bcm2711", accelerators=[], python="3.11.2", libc=("glibc", "2.36"),
        kernel="6.6.51+rpt-rpi-v8", caps={"raspberry-pi", "raspberry-pi-4", "neon", "aarch64", "linux"},
        no_caps={"nvidia-gpu", "cuda", "avx2", "android", "jetson"},
    ),
    "rpi4-32": dict(
        os="linux", distribution="raspbian", distribution_version="11", arch="armv7l", cpu_model="Cortex-A72",
        cores=4, threads=4, max_mhz=1800, memory_gib=3.7, board="Raspberry Pi 4 Model B", board_revision="1.4",
        soc="bcm2711", accelerators=[], python="3.9.2", libc=("glibc", "2.31"),
        kernel="6.1.21-v7l+", caps={"raspberry-pi", "raspberry-pi-4", "neon", "armv7l"},
        no_caps={"nvidia-gpu", "cuda", "aarch64", "dotprod"},
    ),
    "jetson-agx-orin": dict(
        os="linux", distribution="ubuntu", distribution_version="20.04", arch="aarch64", cpu_model="Cortex-A78AE",
        cores=12, threads=12, max_mhz=2201.6, memory_gib=61.4, board="NVIDIA Jetson AGX Orin Developer Kit",
        board_revision=None, soc="tegra234", accelerators=["Orin"], python="3.8.10", libc=("glibc", "2.31"),
        kernel="5.10.120-tegra", caps={"jetson", "nvidia-gpu", "cuda", "neon", "fp16", "dotprod"},
        no_caps={"raspberry-pi", "avx2", "android"},
    ),
    "x86-h100": dict(
        os="linux", distribution="ubuntu", distribution_version="22.04", arch="x86_64",
        cpu_model="Intel(R) Xeon(R) Platinum 8480+", cores=112, threads=224, max_mhz=3800, memory_gib=2015.5,
        board="Supermicro SYS-821GE-TNHR", board_revision=None, soc=None, accelerators=["NVIDIA H100 80GB HBM3"] * 8,
        python="3.10.12", libc=("glibc", "2.35"), kernel="5.15.0-105-generic",
        caps={"nvidia-gpu", "cuda", "gpu", "avx2", "avx512f", "avx512_vnni", "amx_tile", "x86_64"},
        no_caps={"jetson", "neon", "raspberry-pi"},
    ),
    "x86-laptop": dict(
        os="linux", distribution="ubuntu", distribution_version="24.04", arch="x86_64",
        cpu_model="12th Gen Intel(R) Core(TM) i7-1265U", cores=10, threads=12, max_mhz=4800, memory_gib=31.0,
        board="Dell Inc. Latitude 7430", board_revision=None, soc=None, accelerators=[], python="3.12.3",
        libc=("glibc", "2.39"), kernel="6.8.0-45-generic", caps={"avx2", "avx_vnni", "fma", "x86_64"},
        no_caps={"avx512f", "nvidia-gpu", "cuda", "gpu", "neon"},
    ),
    "android-termux": dict(
        os="android", distribution=None, distribution_version=None, arch="aarch64",
        cpu_model="Cortex-A55 + Cortex-A78 + Cortex-X1", cores=8, threads=8, max_mhz=2850, memory_gib=7.4,
        board="Google Pixel 7", board_revision=None, soc="GS201", accelerators=[], python="3.12.9",
        libc=("bionic", None), kernel="5.10.198-android13-4-00050-g12f3388846c3-ab11920634",
        caps={"android", "termux", "neon", "dotprod", "aarch64"}, no_caps={"linux", "nvidia-gpu", "raspberry-pi"},
    ),
}


@pytest.fixture
def warnings():
    """Probe failures are reported as warnings: every test here expects none."""
    collecting = CollectingReporter()
    old = set_reporter(collecting)
    yield collecting.warnings
    set_reporter(old)


def as_component(data: dict, name: str = "this-host") -> dict:
    return {"uid": secrets.token_hex(8), "kind": "platform", "name": name, "version": "1.0.0", **data}


# -- captured machines -----------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_detects_what_the_machine_is(name, warnings):
    exp = EXPECTED[name]
    p = detect(FIXTURES / name)
    assert (p.os, p.distribution, p.distribution_version) == (exp["os"], exp["distribution"], exp["distribution_version"])
    assert p.arch == exp["arch"]
    assert p.kernel == exp["kernel"]
    assert p.cpu.model == exp["cpu_model"]
    assert (p.cpu.cores, p.cpu.threads) == (exp["cores"], exp["threads"])
    assert p.cpu.max_mhz == exp["max_mhz"]
    assert round(p.memory_bytes / 2**30, 1) == exp["memory_gib"]
    assert (p.board, p.board_revision, p.soc) == (exp["board"], exp["board_revision"], exp["soc"])
    assert [a.name for a in p.accelerators] == exp["accelerators"]
    assert p.python == exp["python"] and p.python_implementation == "CPython"
    assert (p.libc, p.libc_version) == exp["libc"]
    markers = p.markers()
    assert markers["platform_machine"] == exp["arch"]
    assert markers["python_full_version"] == exp["python"]
    assert markers["platform_release"] == exp["kernel"]
    caps = p.capabilities()
    assert exp["caps"] <= caps, exp["caps"] - caps
    assert not exp["no_caps"] & caps, exp["no_caps"] & caps
    assert warnings == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_arch_from_cpuinfo_alone(name, tmp_path):
    """A capture without uname output still knows its architecture, from the CPU itself."""
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cpuinfo").write_bytes((FIXTURES / name / "proc" / "cpuinfo").read_bytes())
    p = detect(tmp_path)
    assert (p.arch, p.os, p.cpu.model) == (EXPECTED[name]["arch"], "linux", EXPECTED[name]["cpu_model"])


def test_h100_accelerator_details():
    gpus = detect(H100).accelerators
    assert len(gpus) == 8
    assert {(g.vendor, g.memory_bytes, g.driver, g.cuda, g.compute_capability) for g in gpus} == {
        ("nvidia", 81559 * 2**20, "535.183.01", "12.2", "9.0")
    }


def test_jetson_and_android_details():
    jetson = detect(FIXTURES / "jetson-agx-orin")
    assert (jetson.jetson.l4t, jetson.jetson.jetpack) == ("35.4.1", "5.1.2")
    orin = jetson.accelerators[0]
    assert (orin.vendor, orin.cuda, orin.compute_capability) == ("nvidia", "11.4", "8.7")
    phone = detect(FIXTURES / "android-termux")
    assert dataclasses.asdict(phone.android) == {
        "version": "14", "sdk": 34, "manufacturer": "Google", "model": "Pixel 7", "termux": True,
    }
    assert phone.jetson is None and jetson.android is None


def test_cpu_flags_keep_the_kernels_names():
    assert "avx512f" in detect(H100).cpu.flags
    pi = detect(FIXTURES / "rpi4-32").cpu.flags
    assert pi[:3] == ["half", "thumb", "fastmult"] and "neon" in pi  # arm32 prints a trailing space
    assert "vmx" in detect(FIXTURES / "x86-laptop").cpu.flags  # 'vmx flags' line not mistaken for flags


@pytest.mark.parametrize("name", sorted(EXPECTED) + ["garbled"])
def test_fixture_dict_is_a_valid_platform_component(name):
    data = detect(FIXTURES / name).to_dict()
    assert validate(as_component(data)) == []
    assert re.fullmatch(r"[0-9a-f]{16}", data["fingerprint"])
    assert data["capabilities"] == sorted(detect(FIXTURES / name).capabilities())


def test_fingerprints_are_stable_and_tell_machines_apart():
    names = sorted(EXPECTED) + ["garbled"]
    first = {n: detect(FIXTURES / n).fingerprint for n in names}
    again = {n: detect(FIXTURES / n).fingerprint for n in names}
    assert first == again
    assert len(set(first.values())) == len(names)
    assert all(re.fullmatch(r"[0-9a-f]{16}", f) for f in first.values())


def test_fingerprint_ignores_what_varies_between_runs():
    p = detect(FIXTURES / "rpi4-64")
    varied = dataclasses.replace(
        p, memory_bytes=1, kernel="6.6.99+rpt-rpi-v8", kernel_version="#2 SMP", python="3.11.9",
        cpu=dataclasses.replace(p.cpu, max_mhz=600, flags=["fp"]), board_revision="1.5", distribution_name="x",
    )
    assert varied.fingerprint == p.fingerprint
    for change in ({"arch": "armv7l"}, {"python": "3.12.1"}, {"board": "Raspberry Pi 5"}, {"libc_version": "2.41"},
                   {"distribution_version": "13"}, {"cpu": dataclasses.replace(p.cpu, cores=2)}):
        assert dataclasses.replace(p, **change).fingerprint != p.fingerprint, change


def test_to_dict_round_trips_through_from_dict():
    for name in sorted(EXPECTED):
        p = detect(FIXTURES / name)
        back = Platform.from_dict(as_component(p.to_dict()))
        assert back == p
        assert back.to_dict() == p.to_dict()


def test_markers_evaluate_as_pep508_on_that_platform():
    pi32 = detect(FIXTURES / "rpi4-32").markers()
    assert Marker('platform_machine == "armv7l" and python_version < "3.10"').evaluate(pi32)
    assert not Marker('platform_machine == "x86_64"').evaluate(pi32)
    h100 = detect(H100).markers()
    assert Marker('sys_platform == "linux" and platform_system == "Linux" and os_name == "posix"').evaluate(h100)
    assert Marker('python_version == "3.10" and implementation_name == "cpython"').evaluate(h100)
    assert set(h100) == set(default_environment())


def test_android_markers_follow_pep_738():
    phone = detect(FIXTURES / "android-termux")
    assert (phone.markers()["sys_platform"], phone.markers()["platform_system"]) == ("linux", "Linux")
    newer = dataclasses.replace(phone, python="3.13.1").markers()
    assert (newer["sys_platform"], newer["platform_system"]) == ("android", "Android")


# -- broken input ----------------------------------------------------------------------

def test_garbled_fixture_detects_without_exceptions(warnings):
    p = detect(FIXTURES / "garbled")
    assert warnings == []
    assert p.accelerators == [] and p.jetson is None and p.android is None
    assert p.memory_bytes is None and p.board is None and p.distribution is None
    assert p.python is None and p.libc is None and p.cpu.model is None and p.cpu.max_mhz is None
    assert p.cpu.vendor is None  # 'Genu\xff\xfeineIntel' is garbled, not a vendor
    data = p.to_dict()
    assert "accelerators" not in data and "memory_bytes" not in data and "python" not in data
    # unknown values stay unknown: a marker about them is false, not answered from this host
    assert not Marker('python_version >= "3.0"').evaluate(p.markers())


def test_empty_root_gives_an_empty_platform(tmp_path, warnings):
    p = detect(tmp_path)
    assert warnings == []
    assert p.os is None and p.arch is None and p.cpu.cores is None and p.accelerators == []
    assert p.to_dict() == {"fingerprint": p.fingerprint, "capabilities": []}
    assert validate(as_component(p.to_dict())) == []


def test_unreadable_shapes_are_absent_not_errors(tmp_path, warnings):
    (tmp_path / "proc" / "cpuinfo").mkdir(parents=True)  # a directory where a file belongs
    os.mkfifo(tmp_path / "proc" / "meminfo")  # a FIFO would block a naive read forever
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").symlink_to("/etc/os-release")  # escapes the root
    (tmp_path / "commands").mkdir()
    (tmp_path / "commands" / "nvidia-smi-query.txt").write_bytes(random.Random(0).randbytes(4096))  # seeded: never flaky
    (tmp_path / "commands" / "getprop.txt").write_bytes(b"\x00" * 100)
    started = time.monotonic()
    p = detect(tmp_path)
    assert time.monotonic() - started < 5
    assert warnings == []
    assert p.cpu.model is None and p.memory_bytes is None and p.accelerators == [] and p.android is None
    assert p.distribution is None  # this host's os-release was not read through the link


def test_symlinks_inside_the_root_are_followed(tmp_path):
    (tmp_path / "usr" / "lib").mkdir(parents=True)
    (tmp_path / "usr" / "lib" / "os-release").write_text('ID=alpine\nVERSION_ID=3.20.3\nPRETTY_NAME="Alpine Linux v3.20"\n')
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").symlink_to("../usr/lib/os-release")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "ld-musl-aarch64.so.1").write_bytes(b"")
    p = detect(tmp_path)
    assert (p.distribution, p.distribution_version, p.os) == ("alpine", "3.20.3", "linux")
    assert (p.libc, p.libc_version) == ("musl", None)


def test_a_failing_probe_is_a_warning_and_the_rest_is_detected(monkeypatch, warnings):
    def broken(text):
        raise RuntimeError("boom")

    monkeypatch.setattr(parse, "mem_total_bytes", broken)
    p = detect(H100)
    assert p.memory_bytes is None
    assert len(p.accelerators) == 8 and p.cpu.cores == 112 and p.python == "3.10.12"
    assert warnings == ["platform detection: the memory probe failed (RuntimeError: boom); its facts are left out"]


def test_missing_root_is_a_user_error(tmp_path):
    with pytest.raises(NotFound) as err:
        detect(tmp_path / "nope")
    assert err.value.hint
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotFound, match="not a directory"):
        detect(tmp_path / "file")


_text = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(list(":[]\n\t,=\"'#-0123456789.")), max_size=400)


@settings(max_examples=150, deadline=None)
@given(_text)
def test_parsers_never_raise(text):
    parse.cpuinfo(text)
    parse.os_release(text)
    parse.mem_total_bytes(text)
    parse.cpu_list_count(text)
    parse.khz_to_mhz(text)
    parse.dt_strings(text)
    parse.split_board_revision(text)
    parse.nvidia_query(text, 4)
    parse.nvidia_query(text, 3)
    parse.nvidia_smi_header(text)
    parse.tegra_release(text)
    parse.cuda_toolkit_version(text, text)
    parse.getprop(text)
    parse.uname_a(text)
    parse.python_version(text)
    parse.ldd_version(text)
    parse.libc_from_file_names(text.split())


@pytest.mark.parametrize("line, expected", [
    ("Linux raspberrypi 6.1.21-v8+ #1642 SMP PREEMPT Mon Apr  3 17:24:16 BST 2023 aarch64 GNU/Linux",
     {"system": "Linux", "release": "6.1.21-v8+", "machine": "aarch64",
      "version": "#1642 SMP PREEMPT Mon Apr 3 17:24:16 BST 2023"}),
    ("Linux gpu01 5.15.0-105-generic #115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024 x86_64 x86_64 x86_64 GNU/Linux",
     {"system": "Linux", "release": "5.15.0-105-generic", "machine": "x86_64",
      "version": "#115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024"}),
    ("Linux localhost 5.10.198-android13-4 #1 SMP PREEMPT Mon Jun 3 20:42:55 UTC 2024 aarch64 Android",
     {"system": "Linux", "release": "5.10.198-android13-4", "machine": "aarch64",
      "version": "#1 SMP PREEMPT Mon Jun 3 20:42:55 UTC 2024"}),
    ("Linux", {}),
])
def test_uname_a(line, expected):
    assert parse.uname_a(line) == expected


@pytest.mark.parametrize("text, expected", [
    ("ldd (GNU libc) 2.39\nCopyright (C) 2024 Free Software Foundation, Inc.\n", {"libc": "glibc", "version": "2.39"}),
    ("musl libc (x86_64)\nVersion 1.2.5\nDynamic Program Loader\nUsage: ldd [options] [--] pathname\n",
     {"libc": "musl", "version": "1.2.5"}),
    ("bash: ldd: command not found\n", {}),
])
def test_ldd_version(text, expected):
    assert parse.ldd_version(text) == expected


def test_python_version_output():
    assert parse.python_version("Python 3.9.18 (9c4f8ef1, Mar 19 2024, 10:38:52)\n[PyPy 7.3.15 with GCC 10.2.1]\n") == {
        "version": "3.9.18", "implementation": "PyPy", "implementation_version": "7.3.15",
    }


# -- this host ------------------------------------------------------------------------

def test_live_host_detection(warnings):
    p = detect()
    assert warnings == []
    assert p.arch == stdlib_platform.machine()
    assert p.python == stdlib_platform.python_version()
    assert p.markers() == default_environment()  # detected data gives what packaging computes here
    assert p.cpu.threads and p.cpu.threads >= 1
    assert re.fullmatch(r"[0-9a-f]{16}", p.fingerprint)
    assert detect().fingerprint == p.fingerprint
    if sys.platform.startswith("linux"):
        assert p.os == "linux" and p.memory_bytes > 0 and p.kernel == os.uname().release
    assert validate(as_component(p.to_dict())) == []


def test_current_is_cached_per_process():
    assert current() is current()
    assert current().fingerprint == detect().fingerprint


def test_live_detection_is_fast(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi, whatever this machine has
    detect()
    best = min(_timed(detect) for _ in range(5))
    assert best < 0.1, f"host detection took {best * 1000:.0f} ms"


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _fake_tool(folder: Path, name: str, script: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / name
    tool.write_text("#!/bin/sh\n" + script)
    tool.chmod(0o755)
    return tool


@pytest.mark.skipif(sys.platform == "win32", reason="shell script tools")
def test_a_hanging_tool_is_cut_by_the_timeout(tmp_path, monkeypatch, warnings):
    pid_file = tmp_path / "child.pid"
    _fake_tool(tmp_path / "bin", "nvidia-smi", f"sleep 30 &\necho $! > {pid_file}\nwait\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    started = time.monotonic()
    p = detect(timeout=0.5)
    elapsed = time.monotonic() - started
    assert elapsed < 3, f"detection took {elapsed:.1f} s with a 0.5 s timeout"
    assert p.accelerators == [] and "nvidia-gpu" not in p.capabilities()
    assert warnings == []
    # the tool's own children went with it (its whole process group is killed)
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 2
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(child)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(sys.platform == "win32", reason="shell script tools")
def test_nvidia_smi_on_path_is_read(tmp_path, monkeypatch):
    """This host has no GPU: a stand-in nvidia-smi prints what the H100 server printed."""
    _fake_tool(tmp_path / "bin", "nvidia-smi", (
        'case "$1" in\n'
        f'  --query-gpu=*) cat "{H100}/commands/nvidia-smi-query.txt" ;;\n'
        f'  *) cat "{H100}/commands/nvidia-smi.txt" ;;\n'
        "esac\n"
    ))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    p = detect()
    assert [a.name for a in p.accelerators] == ["NVIDIA H100 80GB HBM3"] * 8
    assert {a.cuda for a in p.accelerators} == {"12.2"}
    assert {"nvidia-gpu", "cuda", "gpu"} <= p.capabilities()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert detect().fingerprint != p.fingerprint  # the GPUs are part of the identity


@pytest.mark.skipif(sys.platform == "win32", reason="shell script tools")
def test_drivers_without_compute_cap_are_asked_again(tmp_path, monkeypatch):
    _fake_tool(tmp_path / "bin", "nvidia-smi", (
        'case "$1" in\n'
        '  *compute_cap*) echo \'Field "compute_cap" is not a valid field to query.\'; exit 2 ;;\n'
        "  --query-gpu=*) echo 'Tesla T4, 15360, 470.199.02' ;;\n"
        "  *) echo '| NVIDIA-SMI 470.199.02   Driver Version: 470.199.02   CUDA Version: 11.4     |' ;;\n"
        "esac\n"
    ))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    [t4] = detect().accelerators
    assert (t4.name, t4.memory_bytes, t4.driver, t4.cuda, t4.compute_capability) == (
        "Tesla T4", 15360 * 2**20, "470.199.02", "11.4", None,
    )


def test_capture_reads_back_as_the_same_machine(tmp_path):
    here = capture(tmp_path / "cap")
    assert (tmp_path / "cap" / "commands" / "uname-m.txt").is_file()
    back = detect(tmp_path / "cap")
    assert back.to_dict() == here.to_dict()
    assert back.fingerprint == detect().fingerprint
    with pytest.raises(Conflict):
        capture(tmp_path / "cap")


def test_capture_zeroes_the_pi_serial(tmp_path, monkeypatch):
    from cr.platform import sources

    real = sources.read_text
    pi = FIXTURES / "rpi4-64"
    monkeypatch.setattr(sources, "read_text", lambda path, *a: real(pi / str(path).lstrip("/")) if str(path).startswith("/proc/") else real(path, *a))
    capture(tmp_path / "cap")
    text = (tmp_path / "cap" / "proc" / "cpuinfo").read_text()
    assert "Serial\t\t: 0000000000000000" in text and "7b3a0d54" not in text
    assert detect(tmp_path / "cap").board == "Raspberry Pi 4 Model B"


# -- the CLI ---------------------------------------------------------------------------

def test_cli_json_validates_as_a_platform_component(run_cr):
    for root in (None, H100, FIXTURES / "android-termux"):
        done = run_cr("platform", "--json", *(["--root", root] if root else []))
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert validate(as_component(data)) == [], data
        if root:
            assert data == detect(root).to_dict()


def test_cli_human_summary(run_cr):
    done = run_cr("platform", "--root", H100)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for text in ("Ubuntu 22.04.4 LTS", "x86_64", "Intel(R) Xeon(R) Platinum 8480+ (112 cores, 224 threads",
                 "2015.5 GiB", "8x NVIDIA H100 80GB HBM3 (79.6 GiB, driver 535.183.01, CUDA 12.2, cc 9.0)",
                 "Supermicro SYS-821GE-TNHR", "CPython 3.10.12", "glibc 2.35", detect(H100).fingerprint):
        assert text in out, (text, out)
    pi = run_cr("platform", "--root", FIXTURES / "rpi4-32").stdout
    assert "Raspberry Pi 4 Model B (rev 1.4)" in pi and "armv7l" in pi


def test_cli_markers(run_cr):
    done = run_cr("platform", "--markers", "--root", FIXTURES / "rpi4-32")
    assert json.loads(done.stdout)["platform_machine"] == "armv7l"


@pytest.mark.parametrize("args, code", [
    (["platform", "--root", "missing-dir"], 1),
    (["platform", "--json", "--root", "missing-dir"], 1),
    (["platform", "--root", ".", "--capture", "x"], 2),
])
def test_cli_errors(run_cr, tmp_path, args, code):
    done = run_cr(*args, cwd=tmp_path)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    if code == 1:
        assert done.stderr.startswith("Error: platform root missing-dir does not exist\nHint: ")
        assert done.stdout == ""


from conftest import HEAVY, IMPORT_PROBE as _PROBE


@pytest.mark.parametrize("argv", [["platform"], ["platform", "--json"]], ids=["human", "json"])
def test_cli_imports_no_framework(argv, tmp_path, cr_home):
    decoys = tmp_path / "decoys"
    for name in HEAVY:  # importable stand-ins, so an import is seen even where one is missing
        (decoys / name).mkdir(parents=True)
        (decoys / name / "__init__.py").write_text("")
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(out), json.dumps(argv)], capture_output=True, text=True, timeout=60,
        env={**os.environ, "CR_HOME": str(cr_home), "PYTHONPATH": str(decoys)},
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["code"] == 0
    top = {m.split(".")[0] for m in result["modules"]}
    assert "cr" in top and not top & set(HEAVY), sorted(top & set(HEAVY))
