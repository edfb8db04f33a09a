"""The architecture's contracts: the lock is what installation installs, the typed job between
host and child, backend registration checks, solutions built from backend requirements, the
`cr` facade, and the one place results are stored."""
from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cr import api
from cr.errors import CRError
from cr.events import CollectingReporter, set_reporter
from cr.runtime import registry
from cr.runtime.job import JOB_FORMAT, Job, JobError
from cr.software import envs
from conftest import make_component, make_repo, write_json
from helpers.recipes import recipe_repo

FAST = {"min_duration_s": 0, "min_queries": 5, "warmup_queries": 0}


@pytest.fixture
def collect():
    rep = CollectingReporter()
    old = set_reporter(rep)
    yield rep
    set_reporter(old)


# -- 1. the lock is the input of installation -----------------------------------------

def _marker_recipe(letter: str) -> dict:
    """Software 'marker' 1.0.0, installed by a script writing letter into $PREFIX/marker.txt."""
    return {"name": "marker", "install": [{"method": "script", "versions": ["1.0.0"],
                                          "script": f'printf {letter} > "$PREFIX/marker.txt"'}]}


@pytest.fixture
def marker_repo(tmp_path):
    """(recipe repo, component ref): model:uses-marker depends on software:marker (not present here)."""
    recipes = recipe_repo(tmp_path, _marker_recipe("A"))
    comps = make_repo(tmp_path / "comps", "comps")
    make_component(comps, "model", "uses-marker", deps=["software:marker@>=1"])
    api.repo_add(comps)
    return recipes, "model:uses-marker"


def _edit_recipe(recipes: Path, letter: str) -> None:
    path = recipes / "marker" / "recipe.json"
    write_json(path, {**json.loads(path.read_text()), **_marker_recipe(letter)})


def _marker_of(env: dict) -> str:
    return (Path(env["prefix"]) / "marker.txt").read_text()


def test_install_from_a_lock_file_builds_what_the_lock_recorded_after_the_recipe_changed(marker_repo, tmp_path, collect):
    recipes, ref = marker_repo
    lock_file = tmp_path / "uses-marker.lock.json"
    locked = api.lock(ref, output=lock_file)
    (entry,) = [s for s in locked["software"] if s["name"] == "marker"]
    assert entry["origin"] == "installable" and entry["source"] == "script" and "printf A" in entry["install"]["script"]
    assert locked["missing"] == ["marker"] and lock_file.is_file()

    _edit_recipe(recipes, "B")  # the recipe changes between resolution and installation
    # nothing trusted offers the recorded script any more: it runs only with consent
    from cr.store.trust import Untrusted

    with pytest.raises(Untrusted) as refused:
        api.install_missing(lock_file)
    assert "printf A" in refused.value.message and envs.list_envs("marker") == []
    collect.warnings.clear()
    result = api.install_missing(lock_file, trust=True)

    (env,) = result["installed"]
    assert env["name"] == "marker" and env["version"] == "1.0.0"
    assert _marker_of(env) == "A"  # the lock wins, not the recipe's new script
    warnings = [w for w in collect.warnings if "marker" in w]
    assert len(warnings) == 1, collect.warnings
    assert "no longer offers what the lock recorded" in warnings[0]
    assert "cr resolve" in warnings[0] and "Resolve again" in warnings[0]
    assert [e.id for e in envs.list_envs("marker")] == [env["id"]]  # registered
    assert result["lock"]["status"] == "ready" and result["lock"]["missing"] == []


def test_install_from_a_ref_takes_the_recipes_current_choice(marker_repo, collect):
    recipes, ref = marker_repo
    assert api.lock(ref)["missing"] == ["marker"]  # resolved (and cached) while the recipe says A
    _edit_recipe(recipes, "B")
    result = api.install_missing(ref)  # a ref is resolved again: the edited recipe counts
    (env,) = result["installed"]
    assert _marker_of(env) == "B"
    assert not [w for w in collect.warnings if "no longer offers" in w]


@pytest.mark.parametrize("damage", [
    pytest.param({"source": "", "install": {}}, id="no-method-recorded"),
    pytest.param({"install": None}, id="install-removed"),
])
def test_a_lock_entry_without_an_install_method_says_to_resolve_again(marker_repo, damage):
    _, ref = marker_repo
    the_lock = api.lock(ref)
    for sw in the_lock["software"]:
        if sw["name"] == "marker":
            sw.update(damage)
    with pytest.raises(CRError) as err:
        api.install_missing(the_lock)
    assert "marker" in err.value.message and "no install method" in err.value.message
    assert "resolve again" in err.value.hint and "cr resolve" in err.value.hint
    assert envs.list_envs("marker") == []


def test_a_lock_entry_with_a_source_but_an_empty_install_record_says_to_resolve_again(marker_repo):
    _, ref = marker_repo
    the_lock = api.lock(ref)
    for sw in the_lock["software"]:
        if sw["name"] == "marker":
            sw["install"] = {}  # source stays "script"
    with pytest.raises(CRError) as err:
        api.install_missing(the_lock)
    assert "resolve again" in (err.value.hint or "") and "without script" in err.value.message
    assert envs.list_envs("marker") == []


# -- 2. the typed job --------------------------------------------------------------------

ENTRY = "cr.runtime.actions.benchmark:main"


def test_job_from_dict_refuses_another_format_naming_both():
    with pytest.raises(JobError) as err:
        Job.from_dict({"format": 99, "entry": ENTRY})
    assert re.search(rf"\b99\b.*\({JOB_FORMAT}\)", err.value.message), err.value.message
    assert Job.from_dict({"entry": ENTRY}).format == JOB_FORMAT  # a job written by hand may leave it out


def test_job_from_dict_refuses_unknown_fields_naming_them():
    with pytest.raises(JobError) as err:
        Job.from_dict({"format": JOB_FORMAT, "entry": ENTRY, "bogus": 1, "zzz_extra": 2})
    assert "bogus" in err.value.message and "zzz_extra" in err.value.message
    assert "entry" in err.value.hint and "params" in err.value.hint  # says what a job has


@pytest.mark.parametrize("entry", ["not an entry", "no_colon_here", None, 7])
def test_job_from_dict_refuses_an_entry_that_is_not_module_function(entry):
    with pytest.raises(JobError, match=r"entry .*not module:function"):
        Job.from_dict({"format": JOB_FORMAT, "entry": entry})


def test_job_from_dict_refuses_a_field_of_the_wrong_type():
    with pytest.raises(JobError, match=r"job field model is a list, not an object"):
        Job.from_dict({"format": JOB_FORMAT, "entry": ENTRY, "model": []})


def test_job_round_trips_through_to_dict_and_from_dict():
    job = Job(entry=ENTRY, action="benchmark", params={"min_queries": 5, "scenario": "offline"},
              model={"ref": "model:x@1.0.0", "meta": {"format": "onnx"}, "dir": "/m"},
              dataset={"ref": "dataset:d@1.0.0", "meta": {}, "dir": "/d", "split": "test"},
              backend={"name": "null", "entry": "cr.runtime.backends.null:NullBackend", "origin": "x", "options": {}},
              runs={"null": [1, 2]}, log_dir="/l", out_dir="/o", out_file="/o/f")
    data = job.to_dict()
    assert data["format"] == JOB_FORMAT
    again = Job.from_dict(json.loads(json.dumps(data)))  # through JSON, as job.json carries it
    assert again == job and again.to_dict() == data


def test_the_child_turns_a_job_of_another_format_into_a_failed_result(tmp_path):
    from cr.runtime.child import execute

    result = execute({"format": 99, "entry": ENTRY, "action": "benchmark"}, str(tmp_path))
    assert result["status"] == "failed"
    assert result["error"]["type"] == "JobError"
    assert re.search(rf"\b99\b.*\({JOB_FORMAT}\)", result["error"]["message"])


def test_the_real_child_process_reports_a_job_of_another_format_as_failed(tmp_path):
    from cr.run.launch import CR_PACKAGE_DIR
    from cr.runtime.child import BOOTSTRAP

    job_file, result_file = tmp_path / "job.json", tmp_path / "result.json"
    job_file.write_text(json.dumps({"format": 99, "entry": ENTRY, "action": "benchmark"}))
    done = subprocess.run([sys.executable, "-c", BOOTSTRAP, CR_PACKAGE_DIR, str(job_file), str(result_file)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    result = json.loads(result_file.read_text())
    assert result["status"] == "failed"
    assert "job format 99" in result["error"]["message"] and f"({JOB_FORMAT})" in result["error"]["message"]


def test_run_job_checks_a_dict_on_the_host_before_starting_a_child():
    from cr.run.launch import run_job

    with pytest.raises(JobError, match=r"job format 99"):
        run_job({"format": 99, "entry": ENTRY, "action": "benchmark"})


# -- 3. a bad action entry ---------------------------------------------------------------

def test_an_unimportable_entry_is_a_failed_result_naming_entry_and_action(tmp_path):
    from cr.runtime.child import execute

    result = execute({"format": JOB_FORMAT, "entry": "no_such_module_xyz:main", "action": "benchmark"}, str(tmp_path))
    assert result["status"] == "failed"
    msg = result["error"]["message"]
    assert "no_such_module_xyz:main" in msg and "action:benchmark" in msg
    assert "cr show action:benchmark" in result["error"]["hint"]


def test_an_entry_naming_a_missing_function_fails_in_the_real_child():
    from cr.run.launch import run_job

    result, latencies = run_job({"entry": "os.path:no_such_function_xyz", "action": "benchmark"}, timeout=60)
    assert result["status"] == "failed" and latencies is None
    msg = result["error"]["message"]
    assert "os.path:no_such_function_xyz" in msg and "action:benchmark" in msg and "no attribute" in msg


@pytest.mark.parametrize("entry", ["not an entry", "", None, "module_only", ":fn"])
def test_host_side_check_entry_names_the_meta_path_and_entry(entry):
    from cr.run.actions import check_entry

    with pytest.raises(CRError) as err:
        check_entry({"ref": "action:x", "meta_path": "/p/meta.json", "meta": {"entry": entry}})
    assert err.value.message.startswith("/p/meta.json: /entry:")
    assert repr(entry) in err.value.message


def test_host_side_check_entry_accepts_module_function():
    from cr.run.actions import check_entry

    assert check_entry({"ref": "action:x", "meta_path": "/p/meta.json", "meta": {"entry": "my_pkg.fit:main"}}) == "my_pkg.fit:main"


# -- 4. the backend registry -------------------------------------------------------------

PLUGIN = '''
class Good:
    FORMATS = ("onnx",)
    REQUIRES = ("software:onnx",)
    def load(self, model_path, meta, options): pass
    def inputs(self): return []
    def run(self, batch): return {}
    def close(self): pass

class NoBatch(Good):
    def run(self): return {}

class ShortLoad(Good):
    def load(self, model_path): pass

class StrRequires(Good):
    REQUIRES = "numpy"
'''
PLUGIN_MODULE = "crtest_arch_backends"


def _plugins(tmp_path: Path, monkeypatch, **names: str) -> Path:
    """Write the plugin module, put it on sys.path and register name=module:attr via CR_BACKENDS."""
    root = tmp_path / "plugins"
    root.mkdir(exist_ok=True)
    (root / f"{PLUGIN_MODULE}.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    monkeypatch.setenv(registry.ENV_VAR, ",".join(f"{n}={v}" for n, v in names.items()))
    return root


@pytest.mark.parametrize("attr, method, expected_call", [
    ("NoBatch", "run", "run(self, batch)"),
    ("ShortLoad", "load", "load(self, model_path, meta, options)"),
])
def test_a_backend_method_with_the_wrong_parameters_is_refused_at_load(tmp_path, monkeypatch, attr, method, expected_call):
    _plugins(tmp_path, monkeypatch, broken=f"{PLUGIN_MODULE}:{attr}")
    with pytest.raises(registry.BackendError) as err:
        registry.load_class(registry.find("broken"))
    msg = err.value.message
    assert f"entry point broken = '{PLUGIN_MODULE}:{attr}'" in msg and "CR_BACKENDS" in msg
    assert f"{attr}.{method}(" in msg and f"cannot be called as {expected_call}" in msg


def test_requires_that_is_a_string_is_refused(tmp_path, monkeypatch):
    _plugins(tmp_path, monkeypatch, strreq=f"{PLUGIN_MODULE}:StrRequires")
    with pytest.raises(registry.BackendError) as err:
        registry.load_class(registry.find("strreq"))
    assert "entry point strreq" in err.value.message and "REQUIRES = 'numpy'" in err.value.message
    assert "tuple" in err.value.hint


def test_a_valid_plugin_loads_and_declares_its_requirements(tmp_path, monkeypatch):
    _plugins(tmp_path, monkeypatch, goodbe=f"{PLUGIN_MODULE}:Good")
    assert registry.load_class(registry.find("goodbe")).__name__ == "Good"
    assert registry.requirements(registry.find("goodbe")) == ("software:onnx",)


def test_requirements_of_shipped_and_unimportable_backends(monkeypatch):
    assert registry.requirements(registry.find("onnxruntime")) == ("software:onnxruntime@>=1.17",)
    monkeypatch.setenv(registry.ENV_VAR, "ghost=crtest_no_such_module_xyz:Backend")
    assert registry.requirements(registry.find("ghost")) == ()


@pytest.mark.parametrize("fmt, backend", [("tflite", "tflite"), ("trt-plan", "tensorrt"), ("onnx", "onnxruntime")])
def test_native_backend_of_a_format(fmt, backend):
    entry = registry.native_backend(fmt)
    assert entry is not None and entry.name == backend


def test_no_native_backend_for_an_unknown_format():
    assert registry.native_backend("no-such-format") is None


# -- 5. solutions ------------------------------------------------------------------------

def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def test_init_solution_deps_are_the_runtime_then_the_backend_then_the_model(run_cr):
    done = run_cr("init", "solution", "my-digits", "--model", "model:lenet-digits@1.0.0", "--backend", "tflite", "--json")
    assert done.returncode == 0, done.stderr
    meta = json.loads(done.stdout)["meta"]
    assert meta["deps"] == ["software:numpy@>=1.23", "software:ai-edge-litert"]  # lenet-digits declares no deps
    assert meta["backend"] == "tflite" and meta["model"] == "model:lenet-digits@1.0.0"
    on_disk = json.loads(Path(json.loads(done.stdout)["path"]).read_text())
    assert on_disk["deps"] == meta["deps"]


def test_solution_deps_keep_the_models_own_without_duplicates(tmp_path):
    repo = make_repo(tmp_path / "models", "models")
    make_component(repo, "model", "needs-six", deps=["software:numpy@>=1.23", "software:six@>=1.16", "software:ai-edge-litert"])
    api.repo_add(repo)
    created = api.create_solution("six-on-tflite", model="model:needs-six@1.0.0", backend="tflite")
    deps = created["meta"]["deps"]
    assert deps == ["software:numpy@>=1.23", "software:ai-edge-litert", "software:six@>=1.16"]
    assert len(deps) == len(set(deps))


def test_a_third_party_backends_requires_go_into_the_solution(tmp_path, monkeypatch, run_cr):
    root = _plugins(tmp_path, monkeypatch, goodbe=f"{PLUGIN_MODULE}:Good")
    done = run_cr("init", "solution", "on-goodbe", "--model", "model:lenet-digits@1.0.0", "--backend", "goodbe", "--json",
                  env={"PYTHONPATH": str(root), registry.ENV_VAR: f"goodbe={PLUGIN_MODULE}:Good"})
    assert done.returncode == 0, done.stderr
    meta = json.loads(done.stdout)["meta"]
    assert meta["deps"] == ["software:numpy@>=1.23", "software:onnx"]
    assert meta["backend"] == "goodbe"


def test_a_create_refused_by_the_schema_leaves_no_component_behind_api(cr_home):
    api.create_solution("first", model="model:lenet-digits@1.0.0", backend="tflite")  # the local repo exists now
    local = cr_home / "local"
    before = _tree(local)
    with pytest.raises(CRError) as err:
        api.create_solution("refused", model="model:lenet-digits@1.0.0", backend="tflite", backend_options="notanobject")
    assert "/backend_options" in err.value.message
    assert _tree(local) == before
    assert not list(local.rglob("refused"))
    with pytest.raises(CRError):
        api.show("solution:refused")


def test_a_create_refused_by_the_schema_leaves_no_component_behind_cli(tmp_path, monkeypatch, run_cr, cr_home):
    # A backend name no solution could name ("bad.be": the solution schema's pattern) is refused
    # by the registry, with the same pattern, before anything is written.
    root = _plugins(tmp_path, monkeypatch)
    env = {"PYTHONPATH": str(root), registry.ENV_VAR: f"bad.be={PLUGIN_MODULE}:Good"}
    first = run_cr("init", "solution", "first", "--model", "model:lenet-digits@1.0.0", "--backend", "tflite", env=env)
    assert first.returncode == 0, first.stderr
    local = cr_home / "local"
    before = _tree(local)
    done = run_cr("init", "solution", "refused", "--model", "model:lenet-digits@1.0.0", "--backend", "bad.be", env=env)
    assert done.returncode == 1
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and "'bad.be'" in errors[0] and "not valid" in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    assert _tree(local) == before
    assert not list(local.rglob("refused"))


def test_a_create_with_a_scenario_the_benchmark_refuses_leaves_no_component_behind(cr_home):
    api.create_solution("first", model="model:lenet-digits@1.0.0", backend="tflite")
    local = cr_home / "local"
    before = _tree(local)
    with pytest.raises(CRError) as err:
        api.create_solution("typo", model="model:lenet-digits@1.0.0", backend="tflite", scenario="offlline")
    assert "scenario" in err.value.message and "offlline" in err.value.message
    assert _tree(local) == before


# -- 6. backend names in help texts -----------------------------------------------------

def test_benchmark_help_lists_the_registered_backends(tmp_path, monkeypatch, run_cr):
    extra = {registry.ENV_VAR: f"crtestextra={PLUGIN_MODULE}:Good"}  # listed without being imported
    monkeypatch.setenv(registry.ENV_VAR, extra[registry.ENV_VAR])
    names = registry.available()
    assert "crtestextra" in names and {"null", "onnxruntime", "tflite"} <= set(names)
    done = run_cr("benchmark", "--help", env=extra)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for name in names:
        assert re.search(rf"\b{re.escape(name)}[,.]", text), (name, text)


def test_help_works_with_a_malformed_cr_backends(run_cr):
    bad = {registry.ENV_VAR: "oops-no-equals"}
    top = run_cr("--help", env=bad)
    assert top.returncode == 0 and "Usage:" in top.stdout and "Traceback" not in top.stderr
    sub = run_cr("benchmark", "--help", env=bad)
    assert sub.returncode == 0 and "--backend" in sub.stdout and "Traceback" not in sub.stderr


# -- 7. the facade -----------------------------------------------------------------------

def _submodules_of_cr() -> set[str]:
    import pkgutil

    import cr

    return {m.name for m in pkgutil.iter_modules(cr.__path__)}


# cr.resolve is both an API name (cr.store.catalog.resolve) and a subpackage: see the xfail below.
SHADOWED = {"resolve"}


def test_every_api_name_is_the_owners_object():
    import cr

    assert cr._API_NAMES == set(api.__all__) - SHADOWED
    assert set(api.__all__) - SHADOWED <= set(cr.__all__)
    assert set(api.__all__) & _submodules_of_cr() <= SHADOWED  # no new name shadowed by a subpackage
    for name in api.__all__:
        module, _, attr = api._EXPORTS[name].partition(":")
        owner = getattr(importlib.import_module(module), attr)
        assert getattr(api, name) is owner, name
        if name in SHADOWED:
            continue
        assert getattr(cr, name) is owner, name
        defined_in = getattr(owner, "__module__", module)
        assert defined_in == module or defined_in.startswith(module + "."), (name, defined_in)


def test_cr_resolve_ref_is_the_catalog_function_after_the_resolve_package_is_imported():
    import cr
    import cr.resolve.plan  # noqa: F401  (what cr.lock() does on first use)
    import cr.store.catalog

    assert cr.resolve_ref is cr.store.catalog.resolve
    assert cr.resolve is sys.modules["cr.resolve"]  # on the package, the name is the subpackage
    assert "resolve" not in cr._API_NAMES and api.resolve is cr.store.catalog.resolve


def test_facade_spot_checks():
    import cr
    import cr.resolve.plan
    import cr.results.store
    import cr.run.actions
    import cr.run.solution
    import cr.store.catalog

    assert cr.find is cr.store.catalog.find
    assert cr.benchmark is cr.run.actions.benchmark
    assert cr.run_action is cr.run.actions.run_action
    assert cr.install_missing is cr.resolve.plan.install_missing
    assert cr.lock is cr.resolve.plan.lock
    assert cr.create_solution is cr.run.solution.create
    assert cr.result_store is cr.results.store.default_store
    with pytest.raises(AttributeError):
        cr.no_such_api_name_xyz  # noqa: B018


def test_a_fresh_import_of_cr_resolves_facade_names_lazily():
    code = textwrap.dedent("""
        import sys, cr
        before = "cr.store.catalog" in sys.modules
        from cr import find
        import cr.store.catalog
        print(before, find is cr.store.catalog.find)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


# -- 8. results are stored in one place -------------------------------------------------

def test_run_action_stores_exactly_one_result_unless_told_not_to():
    from cr.results.store import default_store
    from cr.run.actions import run_action

    unstored = run_action("benchmark", "model:lenet-digits", backend="null", params=FAST, store=False)
    assert unstored["status"] == "ok", unstored.get("error")
    assert default_store().list() == []

    record = run_action("benchmark", "model:lenet-digits", backend="null", params=FAST)
    assert record["status"] == "ok", record.get("error")
    rows = default_store().list()
    assert len(rows) == 1
    assert rows[0]["uid"] == record["uid"] and rows[0]["uid"] != unstored["uid"]
