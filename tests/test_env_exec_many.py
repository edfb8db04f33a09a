"""`cr env exec TARGET [TARGET ...] -- CMD`: several targets' environments composed in order
(PATH, PYTHONPATH, ... merged, the first target's first), the same software at two versions
refused with one error naming both targets.

Two real recipe targets (software:tf2onnx and software:tensorflow-cpu, detected here), and
recipes of the test's own whose install scripts write a module into their prefix: a command
importing both modules runs only when both prefixes are on PYTHONPATH.
"""
from __future__ import annotations

import json
import os

import pytest

from conftest import make_component, make_repo, write_json


def _recipe(repo, name: str, versions: list[str]) -> None:
    write_json(repo / "software" / name / "1.0.0" / "meta.json", {
        "uid": os.urandom(8).hex(), "kind": "software", "name": name, "version": "1.0.0", "tags": [],
        "description": f"a module {name}_mod made by the test",
        "detect": [{"type": "python", "module": f"{name}_mod", "attribute": "__version__"}],
        "install": [{"method": "script", "versions": versions,
                     "script": f"printf '__version__ = \"%s\"\\n' \"$VERSION\" > \"$PREFIX/{name}_mod.py\""}],
        "env": {"PYTHONPATH": "{prefix}"},
    })


@pytest.fixture
def two(tmp_path, run_cr):
    repo = make_repo(tmp_path / "sw", "sw")
    _recipe(repo, "moda", ["1.0.0"])
    _recipe(repo, "modb", ["1.0.0"])
    _recipe(repo, "modv", ["1.0.0", "2.0.0"])
    make_component(repo, "model", "needs-v1", deps=["software:modv@==1.0.0"])
    make_component(repo, "model", "needs-v2", deps=["software:modv@==2.0.0"])
    assert run_cr("repo", "add", str(repo)).returncode == 0
    for name in ("moda", "modb"):
        done = run_cr("install", "software", name)
        assert done.returncode == 0, done.stderr
    return repo


def test_two_targets_compose_their_prefixes_in_order(two, run_cr):
    code = ("import os, moda_mod, modb_mod; print(moda_mod.__file__); print(modb_mod.__file__); "
            "print(os.environ['PYTHONPATH']); print(os.environ['CR_LOCK_ROOT'])")
    done = run_cr("env", "exec", "software:moda", "software:modb", "--", "python", "-c", code)
    assert done.returncode == 0, done.stderr
    a_file, b_file, pythonpath, root = done.stdout.strip().splitlines()[-4:]
    entries = pythonpath.split(os.pathsep)
    a_prefix, b_prefix = os.path.dirname(a_file), os.path.dirname(b_file)
    assert a_prefix != b_prefix and entries.index(a_prefix) < entries.index(b_prefix)
    assert root == "software:moda@1.0.0, software:modb@1.0.0"
    # one target alone does not give the other's module: the composition is what made it work
    alone = run_cr("env", "exec", "software:moda", "--", "python", "-c", "import modb_mod")
    assert alone.returncode == 1 and "ModuleNotFoundError" in alone.stderr
    # the old form, one target and a command that holds a "--" of its own
    old = run_cr("env", "exec", "software:moda", "python", "-c", "import sys; print(sys.argv[1:])", "--", "x")
    assert old.returncode == 0 and old.stdout.strip().splitlines()[-1] == "['--', 'x']"


def test_env_shell_composes_the_same_way(two, run_cr):
    import sys

    done = run_cr("env", "shell", "software:moda", "software:modb", env={"SHELL": sys.executable},
                  input="import moda_mod, modb_mod; print('both', moda_mod.__version__, modb_mod.__version__)\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "both 1.0.0 1.0.0"


def test_the_same_software_at_two_versions_is_one_error_naming_both(two, run_cr):
    done = run_cr("env", "exec", "model:needs-v1", "model:needs-v2", "--", "python", "-c", "pass")
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert done.returncode == 1 and len(errors) == 1, done.stderr
    assert "model:needs-v1@1.0.0 needs modv 1.0.0 and model:needs-v2@1.0.0 needs modv 2.0.0" in errors[0]
    assert any(ln.startswith("Hint: run them apart") for ln in done.stderr.splitlines())
    assert "Traceback" not in done.stderr


def test_no_command_or_no_target_is_a_usage_error(run_cr):
    assert run_cr("env", "exec", "software:python", "--").returncode == 2
    assert run_cr("env", "exec", "--", "--", "python").returncode == 2


@pytest.mark.slow
def test_tf2onnx_and_tensorflow_recipes_together_run_a_conversion(run_cr, tmp_path):
    code = ("import tensorflow as tf, tf2onnx; "
            "f = tf.function(lambda x: tf.nn.relu(x) * 2.0, input_signature=[tf.TensorSpec([1, 3], tf.float32)]); "
            "proto, _ = tf2onnx.convert.from_function(f, input_signature=f.input_signature); "
            "print(sorted({n.op_type for n in proto.graph.node}))")
    done = run_cr("env", "exec", "software:tf2onnx", "software:tensorflow-cpu", "--", "python", "-c", code, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "'Relu'" in done.stdout.strip().splitlines()[-1]
    lock_roots = run_cr("env", "exec", "software:tf2onnx", "software:tensorflow-cpu", "--", "python", "-c",
                        "import os; print(os.environ['CR_LOCK_ROOT'])")
    assert lock_roots.stdout.strip().splitlines()[-1] == "software:tf2onnx@1.0.0, software:tensorflow-cpu@1.0.0"
