"""A warm `cr init solution NAME` answers from its ready stamp (cli/fastinit.py,
cr/resolve/initstamp.py) without importing click, the index, the resolver or a framework,
prints what the full path prints, and takes the full path again as soon as anything its
decision read has changed: the solution's meta, a registered software, the lock."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cr.resolve.initstamp import RACY_NS

NAME = "fast-digits"
# what the full path imports and the ready stamp must not need
HEAVY = ("click", "numpy", "dask", "resolvelib", "cr.resolve.resolver", "cr.resolve.lock", "cr.store.index", "cr.run")


def init(cr_home: Path, *args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """`cr init solution NAME ARGS` as a user runs it (console-script name, bytecode cached),
    and the modules it imported."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONWARNINGS", "PYTHONDONTWRITEBYTECODE")}
    env.update(CR_HOME=str(cr_home), PYTHONPROFILEIMPORTTIME="1")
    proc = subprocess.run([sys.executable, "-m", "cr", "init", "solution", NAME, *args],
                          capture_output=True, text=True, env=env, timeout=300)
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)", proc.stderr, re.M))
    proc.stderr = "".join(l + "\n" for l in proc.stderr.splitlines() if not l.startswith("import time:"))
    return proc, imported


def took_full_path(imported: set[str]) -> bool:
    return "click" in imported


@pytest.fixture
def ready(cr_home, run_cr):
    """A local solution, initialised, and a second init (older than the racy window) that
    found nothing to do and left its ready stamp."""
    made = run_cr("init", "solution", NAME, "--model", "model:lenet-digits@1.0.0", "--backend", "onnxruntime")
    assert made.returncode == 0, made.stderr
    first, _ = init(cr_home)
    assert first.returncode == 0, first.stderr
    time.sleep(RACY_NS / 1e9 + 0.2)
    second, imported = init(cr_home)
    assert second.returncode == 0 and took_full_path(imported), second.stderr
    meta = next((cr_home / "local" / "solution" / NAME).glob("*/meta.json"))
    lock = Path(json.loads(init(cr_home, "--json")[0].stdout)["lock"])
    return {"meta": meta, "lock": lock, "text": second.stdout}


def without_seconds(text: str) -> str:
    return re.sub(r"is ready \(\d+\.\d\d s\)", "is ready (S s)", text)


def test_warm_init_skips_heavy_imports_and_prints_what_the_full_path_prints(cr_home, ready):
    fast, imported = init(cr_home)
    assert fast.returncode == 0, fast.stderr
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))
    assert without_seconds(fast.stdout) == without_seconds(ready["text"])
    assert "lock: " + str(ready["lock"]) in fast.stdout
    # --json: the same report the full path gives (its own 'seconds')
    fast_json, imported = init(cr_home, "--json")
    assert not took_full_path(imported)
    os.utime(ready["lock"])  # forces the full path once
    slow_json, imported = init(cr_home, "--json")
    assert took_full_path(imported)
    a, b = json.loads(fast_json.stdout), json.loads(slow_json.stdout)
    assert list(a) == list(b)
    a.pop("seconds"), b.pop("seconds")
    assert a == b


def test_edited_solution_meta_takes_the_full_path(cr_home, ready):
    meta = json.loads(ready["meta"].read_text())
    meta["description"] = "edited after init"
    ready["meta"].write_text(json.dumps(meta, indent=2))
    proc, imported = init(cr_home)
    assert proc.returncode == 0, proc.stderr
    assert took_full_path(imported)


def test_edit_that_keeps_size_and_mtime_takes_the_full_path(cr_home, ready):
    before = ready["meta"].stat()
    text = ready["meta"].read_text()
    ready["meta"].write_text(text.replace("onnxruntime", "ONNXRUNTIME", 1) if "onnxruntime" in text else text)
    os.utime(ready["meta"], ns=(before.st_atime_ns, before.st_mtime_ns))  # ctime still moves
    proc, imported = init(cr_home)
    assert took_full_path(imported)


def test_removed_software_takes_the_full_path(cr_home, ready):
    import shutil

    shutil.rmtree(cr_home / "envs" / "onnxruntime")  # the registered software env is gone
    proc, imported = init(cr_home)
    assert proc.returncode == 0, proc.stderr
    assert took_full_path(imported)
    assert (cr_home / "envs" / "onnxruntime").is_dir()  # the full path detected it again


def test_changed_lock_takes_the_full_path_and_shows_what_the_lock_says(cr_home, ready):
    lock = json.loads(ready["lock"].read_text())
    python = next(s for s in lock["software"] if s["name"] == "python")
    python["version"] = "3.0.0"  # the cache key still matches: the full path reuses this lock as it is
    ready["lock"].write_text(json.dumps(lock, indent=2))
    proc, imported = init(cr_home)
    assert proc.returncode == 0, proc.stderr
    assert took_full_path(imported)
    assert re.search(r"^python\s+3\.0\.0\s", proc.stdout, re.M), proc.stdout


def test_options_it_does_not_know_take_the_full_path(cr_home, ready):
    proc, imported = init(cr_home, "--trust")
    assert proc.returncode == 0, proc.stderr
    assert took_full_path(imported)


def test_a_newer_version_of_the_solution_takes_the_full_path(cr_home, ready, run_cr):
    made = run_cr("init", "solution", NAME, "--model", "model:lenet-digits@1.0.0", "--backend", "onnxruntime",
                  "--version", "1.1.0")
    assert made.returncode == 0, made.stderr
    proc, imported = init(cr_home)
    assert proc.returncode == 0, proc.stderr
    assert took_full_path(imported)
    assert f"solution:{NAME}@1.1.0 is ready" in proc.stdout
