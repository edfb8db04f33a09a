"""Trust by content (docs/security.md): a component from a repository you have not trusted is the
trusted one only when every file of it is, checked at use. A meta byte-identical to a shipped
one, beside a changed net.py, is not the shipped model: its net.py is not imported without
consent, and a search prefers the shipped copy."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import ROOT

MARK = "cr-trust-content-marker"
SHIPPED = ROOT / "repo" / "model" / "lenet-digits" / "1.0.0"
ARGS = ("benchmark", "model:lenet-digits@1.0.0", "--backend", "torch", "--variant", "state-dict", "--min-duration", "0",
        "--min-queries", "5", "--inputs", "synthetic")


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _remote(tmp_path, net_prefix: str = "", extra: dict | None = None):
    """A git repository holding lenet-digits with the shipped meta byte for byte; net.py with
    net_prefix in front; extra files {name: text} beside it."""
    remote = tmp_path / "remote"
    folder = remote / "model" / "lenet-digits" / "1.0.0"
    shutil.copytree(SHIPPED, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (remote / "cr-repo.json").write_text(json.dumps({"name": "lookalike", "uid": "9e8d7c6b5a493827", "version": "1.0.0"}))
    net = folder / "net.py"
    net.write_text(net_prefix + net.read_text())
    for name, text in (extra or {}).items():
        (folder / name).write_text(text)
    sol = remote / "solution" / "lookalike-sol" / "1.0.0"
    sol.mkdir(parents=True)
    (sol / "meta.json").write_text(json.dumps({
        "uid": "7c6b5a4938271605", "kind": "solution", "name": "lookalike-sol", "version": "1.0.0", "tags": [],
        "model": "model:lenet-digits@1.0.0", "backend": "torch", "pipeline": {"variant": "state-dict"},
        "actions": [{"action": "benchmark", "params": {"min_duration_s": 0, "min_queries": 5, "inputs": "synthetic"}}],
        "deps": []}))
    assert (folder / "meta.json").read_bytes() == (SHIPPED / "meta.json").read_bytes()
    _git(remote, "init", "-q")
    _git(remote, "add", "-A")
    _git(remote, "-c", "user.email=a@b.invalid", "-c", "user.name=a", "commit", "-qm", "lookalike")
    return remote


@pytest.fixture
def torch_here():
    return pytest.importorskip("torch")


def test_an_identical_meta_beside_a_changed_net_py_is_not_trusted(tmp_path, run_cr, torch_here):
    marker = tmp_path / MARK
    remote = _remote(tmp_path, f"open({str(marker)!r}, 'w').close()\n")
    pulled = run_cr("repo", "pull", remote.as_uri())
    assert pulled.returncode == 0, pulled.stderr
    # the search prefers the shipped copy, saying why
    shown = run_cr("show", "model:lenet-digits@1.0.0", "--json")
    assert json.loads(shown.stdout)["repo"] == "builtin", shown.stdout
    assert "differs from the one in repo 'builtin'" in shown.stderr, shown.stderr
    # a solution of the lookalike's repository uses its own copies first: its net.py is code,
    # refused before anything is imported
    done = run_cr("benchmark", "solution", "lookalike-sol")
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error: ")]
    assert done.returncode == 1 and len(errors) == 1, done.stdout + done.stderr
    assert "net.py" in errors[0] and "lookalike" in errors[0] and "Traceback" not in done.stderr, errors
    assert not marker.exists(), done.stderr
    # the shipped one runs
    ok = run_cr(*ARGS)
    assert ok.returncode == 0, ok.stderr
    assert not marker.exists()


def test_an_identical_copy_is_trusted_and_an_extra_file_makes_it_differ(tmp_path, run_cr):
    from cr.store.content import is_copy_of

    same = _remote(tmp_path / "a")
    assert is_copy_of(same / "model" / "lenet-digits" / "1.0.0" / "meta.json", SHIPPED / "meta.json")
    extra = _remote(tmp_path / "b", extra={"helper.py": "import os\n"})
    assert not is_copy_of(extra / "model" / "lenet-digits" / "1.0.0" / "meta.json", SHIPPED / "meta.json")
    planted = _remote(tmp_path / "c")
    (planted / "model" / "lenet-digits" / "1.0.0" / "__pycache__").mkdir()
    (planted / "model" / "lenet-digits" / "1.0.0" / "__pycache__" / "net.cpython-311.pyc").write_bytes(b"\0")
    assert not is_copy_of(planted / "model" / "lenet-digits" / "1.0.0" / "meta.json", SHIPPED / "meta.json")
    fewer = _remote(tmp_path / "d")
    (fewer / "model" / "lenet-digits" / "1.0.0" / "lenet-digits.onnx").unlink()  # a missing file runs nothing
    assert is_copy_of(fewer / "model" / "lenet-digits" / "1.0.0" / "meta.json", SHIPPED / "meta.json")


def test_an_archive_whose_solution_has_a_shipped_name_and_version_is_refused_naming_both(tmp_path, run_cr):
    shipped = json.loads((ROOT / "repo" / "solution" / "iris-logreg-onnxruntime" / "1.0.0" / "meta.json").read_text())
    repo = tmp_path / "author-repo"
    folder = repo / "solution" / "iris-logreg-onnxruntime" / "1.0.0"
    folder.mkdir(parents=True)
    (repo / "cr-repo.json").write_text(json.dumps({"name": "author", "uid": "1a2b3c4d5e6f7081", "version": "1.0.0"}))
    (folder / "meta.json").write_text(json.dumps({**shipped, "uid": "8f7e6d5c4b3a2910",
                                                  "description": "not the shipped one: its expectations are the author's",
                                                  "expected": {"top1": {"value": 0.01, "abs": 0.001}}}))
    author = {"CR_HOME": str(tmp_path / "author-home")}
    assert run_cr("repo", "add", str(repo), env=author).returncode == 0
    out = tmp_path / "out"
    out.mkdir()
    packed = run_cr("pack", "solution", "iris-logreg-onnxruntime@1.0.0", "-o", str(out), env=author)
    assert packed.returncode == 0, packed.stderr
    (archive,) = out.glob("*.cr.zip")
    import zipfile

    with zipfile.ZipFile(archive) as z:  # the author's own solution went into it
        metas = [json.loads(z.read(n)) for n in z.namelist() if n.endswith("meta.json") and "/solution/" in "/" + n]
    assert any(m.get("uid") == "8f7e6d5c4b3a2910" for m in metas), [m.get("uid") for m in metas]
    for command in (("init", "solution", str(archive)), ("reproduce", str(archive))):
        done = run_cr(*command, timeout=300)
        errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error: ")]
        assert done.returncode == 1 and len(errors) == 1, done.stdout + done.stderr
        assert "'builtin'" in errors[0] and "differs" in errors[0] and "outcome: PASS" not in done.stdout, errors


def test_a_lock_made_elsewhere_cannot_bring_exports(tmp_path, run_cr):
    """A lock is data; its exports are code when they name a PYTHONPATH folder (its
    sitecustomize.py runs in the child) or an LD_PRELOAD library: from a lock file whose
    exports this machine did not make, they are refused."""
    marker = tmp_path / MARK
    made = tmp_path / "here.json"
    assert run_cr("resolve", "model:iris-logreg", "-o", made).returncode == 0
    args = ("benchmark", "model", "iris-logreg", "--backend", "null", "--min-duration", "0", "--min-queries", "5")
    ok = run_cr(*args, "--lock", made)
    assert ok.returncode == 0, ok.stderr  # made here: it runs
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    lock = json.loads(made.read_text())
    numpy = next(s for s in lock["software"] if s["name"] == "numpy")
    numpy["exports"] = {"PYTHONPATH": [str(planted)]}
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(lock))
    done = run_cr(*args, "--lock", hostile)
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error: ")]
    assert done.returncode == 1 and len(errors) == 1 and "PYTHONPATH" in errors[0] and str(planted) in errors[0], done.stderr
    assert "cr resolve model:iris-logreg" in done.stderr and not marker.exists()


def _marker_library(folder, marker) -> str | None:
    """A shared library that creates marker when it is loaded (None without a C compiler)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    src = folder / "evil.c"
    src.write_text('#include <stdio.h>\n__attribute__((constructor)) static void ran(void) '
                   f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    lib = folder / "libevil.so"
    if subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], capture_output=True).returncode:
        return None
    return str(lib)


def test_a_delegate_library_named_by_an_archive_solution_is_code_needing_consent(tmp_path, run_cr):
    pytest.importorskip("ai_edge_litert")
    marker = tmp_path / MARK
    library = _marker_library(tmp_path, marker)
    if library is None:
        pytest.skip("no C compiler to build the library")
    repo = tmp_path / "author-repo"
    folder = repo / "solution" / "deleg-sol" / "1.0.0"
    folder.mkdir(parents=True)
    (repo / "cr-repo.json").write_text(json.dumps({"name": "author", "uid": "2b3c4d5e6f708192", "version": "1.0.0"}))
    (folder / "meta.json").write_text(json.dumps({
        "uid": "3c4d5e6f70819203", "kind": "solution", "name": "deleg-sol", "version": "1.0.0", "tags": [],
        "model": "model:lenet-digits@1.0.0", "backend": "tflite", "pipeline": {"variant": "tflite"},
        "backend_options": {"delegates": [{"library": library}]},
        "actions": [{"action": "benchmark", "params": {"min_duration_s": 0, "min_queries": 5, "inputs": "synthetic"}}],
        "deps": []}))
    author = {"CR_HOME": str(tmp_path / "author-home")}
    assert run_cr("repo", "add", str(repo), env=author).returncode == 0
    out = tmp_path / "out"
    out.mkdir()
    assert run_cr("pack", "solution", "deleg-sol", "-o", out, env=author).returncode == 0
    (archive,) = out.glob("*.cr.zip")
    done = run_cr("reproduce", archive, timeout=300)
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error: ")]
    assert done.returncode == 1 and len(errors) == 1, done.stdout + done.stderr
    assert "native code (tflite option delegates)" in errors[0] and "libevil.so" in errors[0], errors
    assert not marker.exists()
    bench = run_cr("benchmark", "solution", "deleg-sol", timeout=300)  # unpacked now, still untrusted
    assert bench.returncode == 1 and "native code" in bench.stderr and not marker.exists(), bench.stderr
    # the same options given by the user (-O) are the user's own choice: the library loads
    mine = run_cr("benchmark", "model", "lenet-digits", "--backend", "tflite", "--variant", "tflite", "--min-duration", "0",
                  "--min-queries", "5", "-O", f'delegates=[{{"library": "{library}"}}]', timeout=300)
    assert marker.exists(), mine.stderr
