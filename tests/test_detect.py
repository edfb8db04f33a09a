"""Detection: the real host (python, git, pip), captured outputs of tools this machine lacks
(fake executables printing what real ones print, spack-style), probes that hang, envs that
change or disappear, and `cr detect` as a user runs it.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import platform as pyplatform
import re
import subprocess
import sys
import time

import pytest

from cr.events import CollectingReporter, set_reporter
from cr.software import envs
from cr.software.detect import detect
from cr.software.host import canonical_interpreter

from helpers.recipes import fake_exe, recipe_repo


@pytest.fixture
def collect():
    rep = CollectingReporter()
    old = set_reporter(rep)
    yield rep
    set_reporter(old)


# -- the real host ---------------------------------------------------------------------

def test_detects_this_hosts_python_git_and_pip_at_their_versions():
    found = detect(["python", "git", "pip"])
    me = canonical_interpreter(sys.executable)
    pythons = [e for e in found if e.name == "python"]
    mine = [e for e in pythons if e.interpreter == me]
    assert mine and mine[0].version == pyplatform.python_version()
    assert mine[0].location == me
    git_out = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    git_version = re.search(r"(\d+\.\d+\.\d+)", git_out).group(1)
    git = [e for e in found if e.name == "git"]
    assert [e.version for e in git] == [git_version]
    assert git[0].location == os.path.realpath(subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip())
    pip = [e for e in found if e.name == "pip"]
    assert [e.version for e in pip] == [importlib.metadata.version("pip")]
    import pip as pip_module

    assert pip[0].location == os.path.dirname(pip_module.__file__)
    assert pip[0].interpreter == me
    assert pip[0].exports == {}  # importable by that interpreter already: no PYTHONPATH
    # registered, on this platform, origin detected
    from cr.platform import current

    registered = {(e.name, e.version) for e in envs.list_envs(platform=current().fingerprint)}
    assert {("git", git_version), ("pip", pip[0].version), ("python", mine[0].version)} <= registered
    assert all(e.origin == "detected" for e in found)


def test_redetecting_rewrites_nothing_and_keeps_ids():
    first = detect(["git", "pip"])
    mtimes = {e.id: (e.path / envs.ENV_FILE).stat().st_mtime_ns for e in first}
    second = detect(["git", "pip"])
    assert [e.id for e in second] == [e.id for e in first]
    assert {e.id: (e.path / envs.ENV_FILE).stat().st_mtime_ns for e in second} == mtimes


# -- captured outputs of real tools ------------------------------------------------------

CAPTURED = [
    # (recipe, executable, what the real tool prints, the version cr must read)
    ("gcc", "gcc", "12.2.0\n", "12.2.0"),
    ("cmake", "cmake", "cmake version 3.25.1\n\nCMake suite maintained and supported by Kitware (kitware.com/cmake).\n", "3.25.1"),
    ("git", "git", "git version 2.47.3\n", "2.47.3"),
    ("cuda", "nvcc", "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2024 NVIDIA Corporation\n"
     "Built on Thu_Mar_28_02:18:24_PDT_2024\nCuda compilation tools, release 12.4, V12.4.131\n"
     "Build cuda_12.4.r12.4/compiler.34097967_0\n", "12.4.131"),
    ("nvidia-driver", "nvidia-smi", "550.54.15\n", "550.54.15"),
]


@pytest.mark.parametrize("name,exe,output,version", CAPTURED, ids=[c[0] for c in CAPTURED])
def test_executable_probes_read_captured_real_outputs(tmp_path, monkeypatch, name, exe, output, version):
    bindir = tmp_path / "bin"
    path = fake_exe(bindir, exe, output)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    found = [e for e in detect([name]) if e.location == str(path)]
    assert [e.version for e in found] == [version]
    assert found[0].exports == {"PATH": [str(bindir)]}
    assert found[0].source == "system"


def test_library_probe_reads_the_version_from_the_file_name(tmp_path, monkeypatch):
    libdir = tmp_path / "trt" / "lib"
    libdir.mkdir(parents=True)
    (libdir / "libnvinfer.so.10.3.0").write_bytes(b"\x7fELF")
    (libdir / "libnvinfer.so.10").symlink_to("libnvinfer.so.10.3.0")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(libdir))
    found = [e for e in detect(["tensorrt"]) if e.location.startswith(str(libdir))]
    assert [(e.version, e.location) for e in found] == [("10.3.0", str(libdir / "libnvinfer.so.10.3.0"))]
    assert found[0].exports == {"LD_LIBRARY_PATH": [str(libdir)]}


def test_python_package_found_only_through_pythonpath_exports_it(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "crokpkg").mkdir(parents=True)
    (site / "crokpkg" / "__init__.py").write_text("__version__ = '0.4.2'\n")
    recipe_repo(tmp_path, {"name": "crokpkg", "detect": [{"type": "python", "module": "crokpkg", "attribute": "__version__"}]})
    assert detect(["crokpkg"]) == []  # not importable by the interpreter's defaults
    monkeypatch.setenv("PYTHONPATH", str(site))
    (env,) = detect(["crokpkg"])
    assert (env.version, env.location, env.exports) == ("0.4.2", str(site / "crokpkg"), {"PYTHONPATH": [str(site)]})


# -- probes that hang or fail ------------------------------------------------------------

def test_a_hanging_executable_probe_is_cut_and_the_scan_goes_on(tmp_path, monkeypatch, collect):
    bindir = tmp_path / "bin"
    fake_exe(bindir, "crsleeper", "crsleeper 1.0.0\n", sleep=60)
    fake_exe(bindir, "crquick", "crquick 2.1.0\n")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    recipe_repo(
        tmp_path,
        {"name": "sleepy", "detect": [{"type": "executable", "names": ["crsleeper"], "args": ["--version"], "regex": "crsleeper (\\S+)"}]},
        {"name": "quick", "detect": [{"type": "executable", "names": ["crquick"], "regex": "crquick (\\S+)"}]},
    )
    start = time.monotonic()
    found = detect(["sleepy", "quick", "git"], timeout=1.0)
    elapsed = time.monotonic() - start
    assert elapsed < 8, elapsed
    assert {e.name for e in found} == {"quick", "git"}
    assert any("sleepy" in w and "did not answer within 1 s" in w for w in collect.warnings), collect.warnings


def test_a_hanging_python_import_is_cut_and_later_python_probes_still_run(tmp_path, monkeypatch, collect):
    site = tmp_path / "site"
    site.mkdir()
    (site / "crhangmod.py").write_text("import time\ntime.sleep(60)\n__version__ = '1'\n")
    (site / "craftermod.py").write_text("__version__ = '3.2.1'\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    recipe_repo(
        tmp_path,
        {"name": "hangs", "detect": [{"type": "python", "module": "crhangmod", "attribute": "__version__", "timeout": 1}]},
        {"name": "after", "detect": [{"type": "python", "module": "craftermod", "attribute": "__version__"}]},
    )
    start = time.monotonic()
    found = detect(["hangs", "after", "pip"], timeout=5.0)
    assert time.monotonic() - start < 10
    assert {e.name: e.version for e in found} == {"after": "3.2.1", "pip": importlib.metadata.version("pip")}
    assert any("crhangmod" in w and "did not answer within 1 s" in w for w in collect.warnings), collect.warnings


def test_output_that_does_not_match_is_a_warning_not_an_error(tmp_path, monkeypatch, collect):
    bindir = tmp_path / "bin"
    fake_exe(bindir, "crodd", "something unexpected\n")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    recipe_repo(tmp_path, {"name": "odd", "detect": [{"type": "executable", "names": ["crodd"], "regex": "odd (\\d+\\.\\d+)"}]})
    assert detect(["odd"]) == []
    assert any("odd" in w and "something unexpected" in w for w in collect.warnings)


# -- envs that change or disappear ----------------------------------------------------------

def test_an_upgraded_tool_replaces_its_old_record_and_a_removed_one_is_dropped(tmp_path, monkeypatch, collect):
    bindir = tmp_path / "bin"
    tool = fake_exe(bindir, "crtool", "crtool 1.0.0\n")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    recipe_repo(tmp_path, {"name": "crtool", "detect": [{"type": "executable", "names": ["crtool"], "regex": "crtool (\\S+)"}]})
    assert [e.version for e in detect(["crtool"])] == ["1.0.0"]
    fake_exe(bindir, "crtool", "crtool 2.0.0\n")
    assert [e.version for e in detect(["crtool"])] == ["2.0.0"]
    assert [e.version for e in envs.list_envs("crtool")] == ["2.0.0"]
    tool.unlink()
    assert envs.list_envs("crtool") == []
    assert any("crtool 2.0.0" in w and "gone" in w for w in collect.warnings)
    assert not (envs.envs_dir() / "crtool").exists() or not any((envs.envs_dir() / "crtool").iterdir())


def test_unknown_software_is_an_error_naming_it():
    from cr.errors import NotFound

    with pytest.raises(NotFound, match="unknown software 'nosuch'"):
        detect(["nosuch"])


# -- the CLI -------------------------------------------------------------------------

def test_cli_detect_json_and_table(run_cr):
    done = run_cr("detect", "software", "git", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [d["name"] for d in data] == ["git"] and data[0]["origin"] == "detected"
    table = run_cr("detect", "git")
    assert table.returncode == 0
    header = table.stdout.splitlines()[0].split()
    assert header == ["NAME", "VERSION", "ORIGIN", "LOCATION"]
    assert data[0]["version"] in table.stdout


def test_cli_detect_unknown_is_one_error_line_and_a_hint(run_cr):
    done = run_cr("detect", "nosuch")
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith("Error: ") and "nosuch" in lines[0]
    assert lines[1].startswith("Hint: ")
    assert "Traceback" not in done.stderr


def test_cli_detect_of_every_shipped_recipe_is_fast(run_cr):
    """The target is 1 s of wall time on this machine; the bound leaves room for a busy CI."""
    run_cr("detect")  # the first run also builds the search index
    start = time.monotonic()
    done = run_cr("detect", "--json")
    elapsed = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    assert {"python", "git", "pip"} <= {d["name"] for d in json.loads(done.stdout)}
    assert elapsed < 3.0, f"cr detect took {elapsed:.2f} s"
