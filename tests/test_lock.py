"""cr resolve, locks, cr install of a solution, cr env exec: through the real CLI and the API,
with real detection and a real pip install of a tiny package (six)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cr import api
from cr.errors import CRError
from cr.resolve.compose import compose
from cr.software import envs
from conftest import make_component, make_repo, write_json
from helpers.recipes import recipe_repo
from helpers.install import SIX

FIXTURES = Path(__file__).parent / "fixtures" / "platforms"
# six is installed in the test interpreter too (a dependency of the frameworks): this recipe's
# probe never finds it there, so the resolver must plan (and cr must perform) its install.
SIX_UNDETECTED = {**SIX, "detect": [{"type": "python", "module": "cr_test_no_such_module", "distribution": "cr-test-no-such-dist"}]}


@pytest.fixture
def solution_repo(tmp_path):
    """A registered repo with solution:needs-six (six via a test recipe, plus python)."""
    recipe_repo(tmp_path, SIX_UNDETECTED)
    repo = make_repo(tmp_path / "sols", "sols")
    make_component(repo, "model", "tiny", deps=["software:python@>=3.9"])
    make_component(repo, "solution", "needs-six", model="model:tiny@1.0.0", deps=["software:six@>=1.16"])
    api.repo_add(repo)
    return repo


def test_resolve_locks_components_software_and_platform(solution_repo, run_cr):
    done = run_cr("resolve", "solution:needs-six", "--json")
    assert done.returncode == 0, done.stderr
    lock = json.loads(done.stdout)
    assert lock["root"] == "solution:needs-six@1.0.0"
    assert [c["ref"] for c in lock["components"]] == ["solution:needs-six@1.0.0", "model:tiny@1.0.0"]
    assert all(len(c["sha256"]) == 64 and len(c["uid"]) == 16 for c in lock["components"])
    assert len(lock["platform"]["fingerprint"]) == 16
    by_name = {s["name"]: s for s in lock["software"]}
    py = ".".join(map(str, sys.version_info[:3]))
    assert by_name["python"]["version"] == py and by_name["python"]["origin"] == "detected"
    assert by_name["six"]["origin"] == "installable" and by_name["six"]["version"] == "1.17.0"
    assert by_name["six"]["install"]["packages"] == ["six==1.17.0"]
    assert lock["status"] == "needs-install" and lock["missing"] == ["six"]
    assert Path(lock["path"]).is_file()


def test_missing_software_blocks_exec_with_the_command_to_fix_it(solution_repo, run_cr):
    done = run_cr("env", "exec", "solution:needs-six", "--", sys.executable, "-c", "pass")
    assert done.returncode == 1
    assert "Error: solution:needs-six@1.0.0 needs software that is not installed here: six" in done.stderr
    assert "Hint: install it first: cr install software six" in done.stderr
    assert "Traceback" not in done.stderr


def test_install_solution_then_exec_imports_the_locked_prefix(solution_repo, run_cr, tmp_path):
    inst = run_cr("install", "solution:needs-six", "--json")
    assert inst.returncode == 0, inst.stderr
    result = json.loads(inst.stdout)
    assert [e["name"] for e in result["installed"]] == ["six"]
    assert result["lock"]["status"] == "ready" and result["lock"]["missing"] == []
    prefix = result["installed"][0]["prefix"]
    code = "import six, os; print(six.__file__); print(os.environ['CR_LOCK_ROOT'])"
    done = run_cr("env", "exec", "solution:needs-six", "--", sys.executable, "-c", code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    six_file, root = done.stdout.split()
    assert six_file.startswith(prefix) and root == "solution:needs-six@1.0.0"
    # A second install finds nothing to do.
    again = run_cr("install", "solution:needs-six")
    assert again.returncode == 0 and "already here" in again.stderr
    # The exit code of the command is passed through.
    failing = run_cr("env", "exec", "solution:needs-six", "--", sys.executable, "-c", "raise SystemExit(7)")
    assert failing.returncode == 7


def test_an_unchanged_lock_is_reused_and_any_change_invalidates_it(solution_repo):
    first = api.lock("solution:needs-six")
    assert first["cached"] is False
    second = api.lock("solution:needs-six")
    assert second["cached"] is True and second["software"] == first["software"]
    meta_path = solution_repo / "solution" / "needs-six" / "1.0.0" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["description"] = "changed"
    write_json(meta_path, meta)
    third = api.lock("solution:needs-six")
    assert third["cached"] is False
    assert third["components"][0]["sha256"] != first["components"][0]["sha256"]


def test_a_removed_prefix_makes_the_lock_stale(solution_repo):
    api.install_missing("solution:needs-six")
    ready = api.lock("solution:needs-six")
    assert ready["status"] == "ready"
    six_env = envs.list_envs("six")[0]
    import shutil

    shutil.rmtree(six_env.prefix)
    again = api.lock("solution:needs-six")
    assert again["cached"] is False and again["missing"] == ["six"]


def test_lock_file_written_with_output_and_usable_for_exec(solution_repo, run_cr, tmp_path):
    api.install_missing("solution:needs-six")
    out = tmp_path / "my.lock.json"
    done = run_cr("resolve", "solution", "needs-six", "-o", out)
    assert done.returncode == 0, done.stderr
    lock = json.loads(out.read_text())
    assert lock["format"] == 1 and lock["status"] == "ready"
    run = run_cr("env", "exec", out, "--", sys.executable, "-c", "import six")
    assert run.returncode == 0, run.stderr


def test_compose_prepends_exports_in_lock_order_and_keeps_the_parent():
    lock = {
        "root": "solution:x@1", "interpreter": "/usr/bin/python3", "missing": [],
        "software": [
            {"name": "a", "exports": {"PYTHONPATH": ["/p/a"], "PATH": ["/p/a/bin"], "A_HOME": "/p/a"}},
            {"name": "b", "exports": {"PYTHONPATH": ["/p/b", "/p/a"], "LD_LIBRARY_PATH": ["/p/b/lib"]}},
        ],
    }
    env = compose(lock, base={"PATH": "/usr/bin:/bin", "PYTHONPATH": "/mine", "HOME": "/root"})
    assert env["PYTHONPATH"] == "/p/a:/p/b:/mine"
    assert env["PATH"] == "/p/a/bin:/usr/bin:/bin"
    assert env["LD_LIBRARY_PATH"] == "/p/b/lib"
    assert env["A_HOME"] == "/p/a" and env["HOME"] == "/root"
    assert env["CR_PYTHON"] == "/usr/bin/python3"


def test_compose_refuses_a_lock_with_missing_software():
    with pytest.raises(CRError, match="not installed here: six"):
        compose({"root": "solution:x@1", "interpreter": "py", "missing": ["six"], "software": []})


# -- planning for other machines: the shipped recipes on captured platforms --------------

@pytest.fixture
def frameworks(tmp_path):
    repo = make_repo(tmp_path / "fw", "fw")
    make_component(repo, "solution", "frameworks", deps=[
        "software:onnxruntime@>=1.17", "software:torch@>=2.0", "software:ai-edge-litert",
    ])
    api.repo_add(repo)


def _plan(fixture: str) -> dict:
    lock = api.lock("solution:frameworks", platform_root=FIXTURES / fixture)
    return {s["name"]: s for s in lock["software"]}


def test_plan_for_an_h100_server_uses_the_gpu_build_of_onnxruntime(frameworks):
    plan = _plan("x86-h100")
    assert plan["onnxruntime"]["install"]["packages"][0].startswith("onnxruntime-gpu==")
    assert plan["torch"]["version"] == "2.13.0"
    assert plan["python"]["version"] == "3.10.12" and plan["python"]["origin"] == "detected"


def test_plan_for_a_64_bit_pi_uses_cpu_wheels(frameworks):
    plan = _plan("rpi4-64")
    assert plan["onnxruntime"]["install"]["packages"][0].startswith("onnxruntime==")
    assert plan["torch"]["install"]["index_url"].endswith("/whl/cpu")
    assert plan["ai-edge-litert"]["install"]["packages"][0].startswith("ai-edge-litert==")


def test_plan_for_a_32_bit_pi_explains_the_onnxruntime_conflict(frameworks, run_cr):
    done = run_cr("resolve", "solution:frameworks", "--platform-root", FIXTURES / "rpi4-32")
    assert done.returncode == 1
    assert "solution:frameworks@1.0.0 needs onnxruntime>=1.17" in done.stderr
    assert "recipe onnxruntime offers no version on armv7l" in done.stderr
    assert "Traceback" not in done.stderr


def test_plan_for_a_32_bit_pi_without_onnxruntime_uses_tflite_runtime(tmp_path):
    repo = make_repo(tmp_path / "pi", "pi")
    make_component(repo, "solution", "pi-tflite", deps=["software:ai-edge-litert"])
    api.repo_add(repo)
    lock = api.lock("solution:pi-tflite", platform_root=FIXTURES / "rpi4-32")
    (litert,) = [s for s in lock["software"] if s["name"] == "ai-edge-litert"]
    assert litert["install"]["packages"][0].startswith("tflite-runtime==")
    assert lock["planned_for"]["arch"] == "armv7l"


def test_a_prefix_leaves_out_what_the_lock_provides(tmp_path, cr_home):
    """python-dateutil needs six; six is its own locked software, so the dateutil prefix must
    not carry a second copy that would shadow the locked one on PYTHONPATH."""
    from cr.software.install import install

    dateutil = {
        "name": "dateutil",
        "deps": ["software:six@>=1.5"],
        "detect": [{"type": "python", "module": "dateutil", "distribution": "python-dateutil"}],
        "install": [{"method": "pip", "packages": ["python-dateutil=={version}"], "versions": ["2.9.0.post0"]}],
    }
    recipe_repo(tmp_path, SIX, dateutil)
    env = install("dateutil")
    prefix = Path(env.prefix)
    assert (prefix / "dateutil").is_dir()
    assert not (prefix / "six.py").exists() and not list(prefix.glob("six-*.dist-info"))
    assert [p["name"] for p in env.packages] == ["python-dateutil"]
