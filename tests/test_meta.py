"""meta.json loading and validation: precise errors, never an exception on bad input."""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cr.errors import InvalidMeta
from cr.store.meta import SCHEMA_DIR, Problem, load_json, validate, validate_repo_meta
from cr.store.refs import KINDS

SHA = "0123456789abcdef" * 4
SHA2 = "fedcba9876543210" * 4

VALID = {
    "campaign": {
        "uid": "c0ffee0000000001",
        "kind": "campaign",
        "name": "digits-sweep",
        "version": "1.0.0",
        "solutions": ["solution:lenet-digits-onnxruntime", {"tags": ["digits", "-slow"]}],
        "matrix": {"threads": [1, 2], "batch_size": [1, 8], "backend_options": [{}]},
        "include": [{"threads": 4, "batch_size": 1}],
        "exclude": [{"threads": 2, "batch_size": 8}],
        "platforms": {"pi": {"requires": ["raspberry-pi-4"]}, "x86": {"marker": "platform_machine == 'x86_64'"}},
        "repeat": 2,
        "actions": ["benchmark"],
        "params": {"benchmark": {"min_duration_s": 0}},
    },
    "model": {
        "uid": "a3f4c2d18e6b7091",
        "kind": "model",
        "name": "lenet-digits",
        "version": "1.2.0rc1",
        "tags": ["onnx", "classification", "int8+fp32"],
        "description": "LeNet on 8x8 digits",
        "license": "MIT",
        "authors": ["A. Person"],
        "homepage": "https://example.org",
        "format": "onnx",
        "file": "model.onnx",
        "task": "classification",
        "inputs": [{"name": "x", "shape": [None, 1, 8, "n"], "dtype": "float32", "layout": "NCHW"}],
        "outputs": [{"name": "y", "shape": [1, 10], "dtype": "float32"}],
        "preprocess": [{"op": "resize", "size": [8, 8], "interpolation": "bilinear"}, {"op": "to_float"}],
        "postprocess": [{"op": "argmax"}],
        "labels": "labels.txt",
        "expected": {"accuracy": {"value": 0.97, "abs": 0.01}, "top5": {"value": 1, "rel": 0}},
        "provenance": {"trained_by": "script.py"},
        "source": {"package": "onnxruntime", "path": "x/y.onnx", "redistributable": True, "sha256": SHA},
        "deps": [
            "software:onnxruntime@>=1.17",
            "software:numpy; platform_machine == \"x86_64\"",
            {"ref": "software:tflite@2.0", "marker": "platform_machine == \"armv7l\"", "optional": True, "reason": "edge"},
        ],
        "files": {"model.onnx": SHA, "labels.txt": SHA2, "sub/dir/extra.bin": SHA},
    },
    "dataset": {
        "uid": "6be0f1c27d9a4835",
        "kind": "dataset",
        "name": "iris",
        "version": "1.0.0",
        "tags": [],
        "format": "loader",
        "samples": 150,
        "splits": {"train": 100, "test": 50},
        "labels": ["setosa", "versicolor", "virginica"],
        "source": {"package": "scikit-learn", "loader": "sklearn.datasets:load_iris"},
        "files": {},
    },
    "solution": {
        "uid": "90e7b3a15c2d4f68",
        "kind": "solution",
        "name": "iris-logreg-onnxruntime",
        "version": "2!1.0.post3",
        "model": "model:iris-logreg@1.0.0",
        "dataset": "dataset:iris@>=1,<2",
        "backend": "onnxruntime",
        "backend_options": {"intra_op_threads": 1},
        "pipeline": {"anything": ["goes", 1]},
        "actions": [{"action": "benchmark", "params": {"scenario": "offline"}}, {"action": "validate"}],
        "platform": {"marker": "platform_machine == \"aarch64\"", "requires": ["gpu"]},
        "expected": {"accuracy": {"value": 0.9}},
        "deps": [],
    },
    "platform": {
        "uid": "c7a2e49d0b3f1856",
        "kind": "platform",
        "name": "raspberry-pi-4-model-b",
        "version": "1.0.0",
        "os": "linux",
        "distribution": "debian 12",
        "kernel": "6.1",
        "arch": "aarch64",
        "cpu": {"model": "Cortex-A72", "cores": 4, "threads": 4, "flags": ["neon"], "max_mhz": 1800.5},
        "memory_bytes": 4 << 30,
        "accelerators": [{"vendor": "nvidia", "name": "H200", "memory_bytes": 1, "driver": "550", "cuda": "12.4", "compute_capability": "9.0"}],
        "board": "Raspberry Pi 4 Model B",
        "python": "3.11.2",
        "libc": "glibc 2.36",
        "fingerprint": "abc",
    },
    "action": {
        "uid": "4e9d2b7a1c0f3586",
        "kind": "action",
        "name": "benchmark",
        "version": "0.1.0",
        "entry": "cr.runtime.actions.benchmark:main",
        "applies_to": ["model", "solution"],
        "parameters": {"type": "object", "properties": {"seed": {"type": "integer"}}},
        "defaults": {"seed": 0},
    },
    "software": {
        "uid": "8a61f0d3b5c2e479",
        "kind": "software",
        "name": "python",
        "version": "1.0.0",
        "detect": [
            {"type": "executable", "names": ["python3"], "args": ["--version"], "regex": r"Python (\d+\.\d+\.\d+\S*)"},
            {"type": "python", "module": "numpy", "attribute": "__version__", "distribution": "numpy", "marker": "python_version >= \"3.9\""},
            {"type": "library", "globs": ["/usr/lib/libfoo.so*"]},
        ],
        "install": [
            {"method": "apt", "packages": ["python3"], "marker": "sys_platform == \"linux\""},
            {"method": "pip", "packages": ["numpy"], "versions": ["1.26.4"]},
            {"method": "download", "url": "https://example.org/x.tgz", "sha256": SHA},
            {"method": "script", "script": "build.sh"},
        ],
        "env": {"PATH": "{prefix}/bin"},
    },
}


def kind_properties(kind: str) -> set[str]:
    common = json.loads((SCHEMA_DIR / "common.json").read_text())
    own = json.loads((SCHEMA_DIR / f"{kind}.json").read_text())
    return set(common["properties"]) | set(own.get("properties", {}))


def meta(kind_: str, **changes) -> dict:
    """A copy of VALID[kind_] with fields replaced (or removed with DELETE); x__a means x-a."""
    m = copy.deepcopy(VALID[kind_])
    for key, value in changes.items():
        key = key.replace("__", "-")
        if value is DELETE:
            m.pop(key, None)
        else:
            m[key] = value
    return m


DELETE = object()


def only(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, [str(p) for p in problems]
    return problems[0]


# -- valid metas ----------------------------------------------------------------------------

def test_every_kind_has_a_valid_example():
    assert set(VALID) == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_valid_meta_passes(kind):
    assert validate(VALID[kind], "m.json") == []
    assert validate(VALID[kind], "m.json", kind=kind) == []


@pytest.mark.parametrize("kind", KINDS)
def test_minimal_meta_passes(kind):
    m = {"uid": "0123456789abcdef", "kind": kind, "name": "x", "version": "0"}
    if kind == "action":
        m["entry"] = "mod.sub:func"
    assert validate(m) == []


@pytest.mark.parametrize("kind", KINDS)
def test_x_prefixed_fields_are_allowed(kind):
    m = meta(kind)
    m["x-mine"] = {"deep": [1, {"a": None}]}
    m["x-"] = 1
    m["x-Other_Thing"] = "text"
    assert validate(m) == []


def test_shipped_metas_are_valid():
    root = Path(__file__).resolve().parent.parent
    metas = [p for folder in ("repo", "actions") for p in (root / folder).rglob("meta.json")]
    metas += list((root / "recipes").rglob("recipe.json"))
    assert metas
    for p in metas:
        data = load_json(p)
        kind = "software" if p.name == "recipe.json" else None
        assert validate(data, str(p), kind=kind) == [], p


# -- load_json: invalid JSON names file, line and column ------------------------------------------

@pytest.mark.parametrize(
    "text, where",
    [
        ('{\n  "uid": "0123456789abcdef",\n}\n', "line 3 column 1"),
        ('{"name": "x}', "line 1 column 10"),
        ("", "line 1 column 1"),
        ('{\n\n    "a": 1\n    "b": 2}', "line 4 column 5"),
        ("{'a': 1}", "line 1 column 2"),
    ],
)
def test_invalid_json_names_file_line_and_column(tmp_path, text, where):
    path = tmp_path / "model" / "meta.json"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidMeta) as exc:
        load_json(path)
    message = str(exc.value)
    assert message.startswith(f"{path}: invalid JSON at {where}:"), message
    assert exc.value.hint


@pytest.mark.parametrize("text, found", [("[1, 2]", "list"), ('"x"', "str"), ("3", "int"), ("null", "NoneType")])
def test_json_that_is_not_an_object(tmp_path, text, found):
    path = tmp_path / "meta.json"
    path.write_text(text)
    with pytest.raises(InvalidMeta) as exc:
        load_json(path)
    assert str(exc.value) == f"{path}: /: expected a JSON object, found {found}"


def test_not_utf8(tmp_path):
    path = tmp_path / "meta.json"
    path.write_bytes(b'{"description": "caf\xe9"}')
    with pytest.raises(InvalidMeta) as exc:
        load_json(path)
    assert str(path) in str(exc.value) and "UTF-8" in str(exc.value)


def test_missing_file(tmp_path):
    with pytest.raises(InvalidMeta) as exc:
        load_json(tmp_path / "nope.json")
    assert str(tmp_path / "nope.json") in str(exc.value)
    assert "not found" in str(exc.value)


def test_directory_instead_of_file(tmp_path):
    (tmp_path / "meta.json").mkdir()
    with pytest.raises(InvalidMeta) as exc:
        load_json(tmp_path / "meta.json")
    assert str(tmp_path / "meta.json") in str(exc.value)


def test_load_json_returns_the_object(tmp_path):
    path = tmp_path / "meta.json"
    path.write_text(json.dumps(VALID["model"]), encoding="utf-8")
    assert load_json(path) == VALID["model"]


# -- schema violations: pointer + expected/found ------------------------------------------------------

@pytest.mark.parametrize(
    "kind, changes, pointer, message",
    [
        ("model", {"uid": 123}, "/uid", "expected string, found 123"),
        ("model", {"uid": "ABCDEF0123456789"}, "/uid", 'expected a string matching ^[0-9a-f]{16}$, found "ABCDEF0123456789"'),
        ("dataset", {"uid": "0123"}, "/uid", 'expected a string matching ^[0-9a-f]{16}$, found "0123"'),
        ("model", {"version": "1.x"}, "/version", 'expected a PEP 440 version (e.g. 1.0.0), found "1.x"'),
        ("action", {"version": "latest"}, "/version", 'expected a PEP 440 version (e.g. 1.0.0), found "latest"'),
        ("model", {"version": 1.0}, "/version", "expected string, found 1.0"),
        ("model", {"name": "LeNet"}, "/name", "found \"LeNet\""),
        ("model", {"tags": "onnx"}, "/tags", 'expected array, found "onnx"'),
        ("model", {"description": None}, "/description", "expected string, found null"),
        ("model", {"format": "My Format"}, "/format", 'lowercase letters and digits, words joined by \'-\', at most 64 characters (e.g. onnx, torch-state-dict), found "My Format"'),
        ("dataset", {"samples": -1}, "/samples", "expected a number >= 0, found -1"),
        ("dataset", {"samples": "150"}, "/samples", 'expected integer, found "150"'),
        ("platform", {"cpu": {"cores": 0}}, "/cpu/cores", "expected a number >= 1, found 0"),
        ("model", {"expected": {"acc": {"value": 1, "abs": -0.5}}}, "/expected/acc/abs", "expected a number >= 0, found -0.5"),
        ("platform", {"cpu": {"cores": "4"}}, "/cpu/cores", 'expected integer, found "4"'),
        ("solution", {"model": "model:Bad"}, "/model", 'expected a component reference kind:name[@spec], found "model:Bad"'),
        ("solution", {"dataset": "iris"}, "/dataset", 'found "iris"'),
        ("solution", {"platform": {"marker": "os ==="}}, "/platform/marker", 'expected a PEP 508 marker'),
        ("action", {"entry": "not an entry"}, "/entry", 'found "not an entry"'),
        ("action", {"applies_to": ["model", "robot"]}, "/applies_to/1", 'found "robot"'),
        ("software", {"detect": [{"type": "executable", "regex": "("}]}, "/detect/0/regex", 'expected a valid regular expression, found "("'),
        ("software", {"install": [{"method": "download", "sha256": "xyz"}]}, "/install/0/sha256", 'found "xyz"'),
        ("software", {"env": {"PATH": ["a"]}}, "/env/PATH", "expected string, found list"),
    ],
)
def test_schema_violation(kind, changes, pointer, message):
    p = only(validate(meta(kind, **changes), "dir/meta.json"))
    assert p.file == "dir/meta.json"
    assert p.pointer == pointer
    assert message in p.message
    assert p.message.startswith("expected ") or "missing" in p.message, p.message
    assert str(p) == f"dir/meta.json: {pointer}: {p.message}"


def test_tags_items_pointer():
    p = only(validate(meta("model", tags=["ok", "Bad Tag"])))
    assert p.pointer == "/tags/1"
    assert 'found "Bad Tag"' in p.message


def test_duplicate_tags():
    p = only(validate(meta("model", tags=["a", "b", "a"])))
    assert p.pointer == "/tags"
    assert p.message == 'expected unique items, found "a" more than once'


def test_nested_tensor_pointer():
    bad = copy.deepcopy(VALID["model"]["inputs"])
    bad[0]["dtype"] = "float8"
    p = only(validate(meta("model", inputs=bad)))
    assert p.pointer == "/inputs/0/dtype"
    assert p.message.startswith("expected one of ") and p.message.endswith('found "float8"')
    assert '"float32"' in p.message


def test_unknown_field():
    p = only(validate(meta("model", colour="blue")))
    assert p.pointer == ""
    assert "'colour'" in p.message
    assert "x-" in p.message  # tells the user how to add their own fields
    assert str(p).startswith("meta.json: /: ")


def test_unknown_field_from_another_kind():
    # 'entry' is an action field; a model may not carry it
    p = only(validate(meta("model", entry="a:b")))
    assert "'entry'" in p.message


def test_unknown_fields_listed_together_but_not_x_fields():
    m = meta("dataset", colour=1, size=2)
    m["x-ok"] = 3
    p = only(validate(m))
    assert "'colour'" in p.message and "'size'" in p.message and "x-ok" not in p.message


@pytest.mark.parametrize("field", ["uid", "kind", "name", "version"])
def test_missing_required(field):
    m = meta("model", **{field: DELETE})
    problems = validate(m, kind="model")
    assert any(p.pointer == "" and p.message == f"missing required field {field!r}" for p in problems), problems


def test_missing_action_entry():
    p = only(validate(meta("action", entry=DELETE)))
    assert p.message == "missing required field 'entry'"


@pytest.mark.parametrize("bad", ["../x", "/abs", "a/../b", "..", "a/..", "C:x", "c:/x", "a\\b", ""])
def test_bad_relative_paths_in_files(bad):
    p = only(validate(meta("model", files={"ok.bin": SHA, bad: SHA})))
    assert p.pointer == "/files"
    assert p.message.startswith("expected a relative path inside the component")
    assert p.message.endswith(f"found {json.dumps(bad)}")


@pytest.mark.parametrize("good", ["a", "a/b/c.bin", "..a", "a..b/c", ".hidden", "a b"])
def test_good_relative_paths_in_files(good):
    assert validate(meta("model", files={good: SHA})) == []


@pytest.mark.parametrize("bad", ["../labels.txt", "/etc/passwd"])
def test_bad_relative_path_in_model_file_and_source(bad):
    p = only(validate(meta("model", file=bad)))
    assert p.pointer == "/file" and json.dumps(bad) in p.message
    p = only(validate(meta("dataset", source={"file": bad})))
    assert p.pointer == "/source/file" and "relative path" in p.message


@pytest.mark.parametrize("bad", ["nothex", SHA.upper(), SHA[:-1], SHA + "0", "g" * 64])
def test_bad_sha256_in_files(bad):
    p = only(validate(meta("model", files={"sub/model.onnx": bad})))
    assert p.pointer == "/files/sub~1model.onnx"
    assert p.message == f"expected a string matching ^[0-9a-f]{{64}}$, found {json.dumps(bad)}"


def test_sha256_not_a_string():
    p = only(validate(meta("model", files={"a": 5})))
    assert p.pointer == "/files/a"
    assert p.message == "expected string, found 5"


def test_files_not_an_object():
    p = only(validate(meta("model", files=["a"])))
    assert p.pointer == "/files"
    assert p.message == "expected object, found list"


def test_pointer_escapes_tilde_and_slash():
    p = only(validate(meta("model", files={"a~b/c": "bad"})))
    assert p.pointer == "/files/a~0b~1c"


@pytest.mark.parametrize(
    "dep, pointer, text",
    [
        ("model:Bad", "/deps/0", 'found "model:Bad"'),
        ("lenet", "/deps/0", 'found "lenet"'),
        ("software:x; os ===", "/deps/0", "requirement"),
        (5, "/deps/0", "found 5"),
        ({"ref": "model:x", "marker": "bogus ==="}, "/deps/0/marker", "PEP 508 marker"),
        ({"ref": "model:Bad"}, "/deps/0/ref", 'found "model:Bad"'),
        ({"marker": "os_name == \"posix\""}, "/deps/0", "missing required field 'ref'"),
        ({"ref": "model:x", "extra": 1}, "/deps/0", "'extra'"),
        ({"ref": "model:x", "optional": "yes"}, "/deps/0/optional", 'expected boolean, found "yes"'),
    ],
)
def test_bad_deps(dep, pointer, text):
    p = only(validate(meta("model", deps=["software:ok@>=1", dep])))
    assert p.pointer == pointer.replace("/0", "/1", 1)
    assert text in p.message


def test_tolerance_must_be_number():
    p = only(validate(meta("model", expected={"accuracy": {"value": "high"}})))
    assert p.pointer == "/expected/accuracy/value"
    assert p.message == 'expected number, found "high"'


def test_all_problems_are_reported_sorted_by_pointer():
    m = meta("model", uid="X", version="nope", tags=["A"], colour=1)
    problems = validate(m)
    assert [p.pointer for p in problems] == ["", "/tags/0", "/uid", "/version"]
    assert problems == sorted(problems, key=lambda p: (p.pointer, p.message))


def test_kind_unknown():
    p = only(validate(meta("model", kind="robot")))
    assert p.pointer == "/kind"
    assert p.message.startswith("expected one of model, dataset") and p.message.endswith('found "robot"')


def test_kind_missing_without_a_given_kind():
    p = only(validate(meta("model", kind=DELETE)))
    assert p.pointer == "/kind"
    assert p.message.endswith("found null")


def test_given_kind_must_agree():
    problems = validate(meta("dataset"), kind="model")
    assert problems
    assert "/kind" in {p.pointer for p in problems}
    assert any(p.pointer == "/kind" and 'found "dataset"' in p.message for p in problems)


def test_given_kind_fills_in_missing_kind():
    # layout 'name' repos (recipes/) know the kind; the meta may still carry it
    m = meta("software", kind=DELETE)
    assert any("missing required field 'kind'" in p.message for p in validate(m, kind="software"))
    assert validate(meta("software"), kind="software") == []


@pytest.mark.parametrize("value, found", [([], "list"), ("x", "str"), (None, "NoneType"), (3, "int")])
def test_not_an_object(value, found):
    p = only(validate(value, "f.json"))
    assert (p.file, p.pointer) == ("f.json", "")
    assert p.message == f"expected a JSON object, found {found}"


def test_found_values_are_shortened():
    p = only(validate(meta("model", uid="a" * 500)))
    assert len(p.message) < 200
    assert p.message.endswith('..."') or p.message.endswith("...")


# -- cr-repo.json ----------------------------------------------------------------------------------

def test_repo_meta():
    good = {"name": "my-repo", "uid": "0123456789abcdef", "version": "1.0.0"}
    assert validate_repo_meta(good) == []
    assert validate_repo_meta({**good, "layout": "name", "kind": "software", "meta_file": "recipe.json", "x-a": 1}) == []
    p = only(validate_repo_meta({**good, "layout": "name"}))
    assert "'kind'" in p.message
    p = only(validate_repo_meta({**good, "name": "My Repo"}))
    assert p.pointer == "/name"
    p = only(validate_repo_meta({**good, "layout": "flat"}))
    assert p.pointer == "/layout" and 'found "flat"' in p.message
    p = only(validate_repo_meta([], "cr-repo.json"))
    assert p.message == "expected a JSON object, found list"


# -- never raises ----------------------------------------------------------------------------------

def test_pathological_regex_is_a_problem_not_a_crash():
    for regex in ("a{99999999999}", "(" * 5000 + ")" * 5000):
        problems = validate(meta("software", detect=[{"type": "executable", "regex": regex}]))
        assert [p.pointer for p in problems] == ["/detect/0/regex"]


def test_deeply_nested_regex_is_refused_whatever_the_recursion_limit():
    """A library in the same process may raise the limit (importing onnx2tf sets 2**31-1):
    the verdict must not depend on whether re.compile then happens to recurse that deep."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000_000)
    try:
        problems = validate(meta("software", detect=[{"type": "executable", "regex": "(" * 5000 + ")" * 5000}]))
    finally:
        sys.setrecursionlimit(old)
    assert [p.pointer for p in problems] == ["/detect/0/regex"]
    assert validate(meta("software", detect=[{"type": "executable", "regex": "(" * 100 + "x" + ")" * 100}])) == []


def test_pathological_marker_and_refs_are_problems_not_crashes():
    m = meta("model", deps=[
        "software:x; " + "(" * 3000,
        "software:x@" + "1" * 5000,
        "software:x@>=" + "1" * 5000,
        {"ref": "model:x", "marker": "\x00"},
    ])
    problems = validate(m)
    assert {p.pointer for p in problems} == {"/deps/0", "/deps/1", "/deps/2", "/deps/3/marker"}


def test_version_with_huge_number_is_a_problem_not_a_crash():
    # Python refuses int() of more than 4300 digits; that must not escape validate()
    p = only(validate(meta("model", version="1." + "9" * 5000)))
    assert p.pointer == "/version"


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20),
    st.sampled_from(["model", "1.0.0", "0123456789abcdef", "model:x@>=1", "../x", SHA, "x-a", "a{9}"]),
)
json_keys = st.one_of(
    st.text(max_size=10),
    st.sampled_from(sorted(set().union(*(kind_properties(k) for k in KINDS)) | {"x-", "x-ext", "ref", "op", "value", "type"})),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(json_keys, children, max_size=5),
    max_leaves=25,
)


def assert_problem_list(result, file):
    assert isinstance(result, list)
    for p in result:
        assert isinstance(p, Problem)
        assert p.file == file
        assert isinstance(p.pointer, str) and (p.pointer == "" or p.pointer.startswith("/"))
        assert isinstance(p.message, str) and p.message
        str(p)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.sampled_from((None,) + KINDS))
def test_validate_never_raises_on_any_json(value, kind):
    assert_problem_list(validate(value, "any.json", kind=kind), "any.json")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(KINDS), st.dictionaries(json_keys, json_values, max_size=6))
def test_validate_never_raises_on_any_object_claiming_a_kind(kind, extra):
    value = {**extra, "kind": kind}
    assert_problem_list(validate(value, "obj.json"), "obj.json")


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


@st.composite
def mutated_metas(draw):
    """A valid meta of some kind with 1-4 top-level keys set to random JSON, deleted, or changed deep inside."""
    kind = draw(st.sampled_from(KINDS))
    m = copy.deepcopy(VALID[kind])
    keys = st.one_of(st.sampled_from(sorted(kind_properties(kind) | set(m))), json_keys, st.text(max_size=6).map(lambda s: "x-" + s))
    touched: set[str] = set()
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["set", "delete", "deep"]))
        if action == "deep" and any(isinstance(v, (dict, list)) and v for v in m.values()):
            top = draw(st.sampled_from(sorted(k for k, v in m.items() if isinstance(v, (dict, list)) and v)))
            node = m[top]
            while True:
                slot = draw(st.sampled_from(sorted(node)) if isinstance(node, dict) else st.integers(0, len(node) - 1))
                child = node[slot]
                if isinstance(child, (dict, list)) and child and draw(st.booleans()):
                    node = child
                    continue
                node[slot] = draw(json_values)
                break
            touched.add(top)
        elif action == "delete" and m:
            key = draw(st.sampled_from(sorted(m)))
            del m[key]
            touched.add(key)
        else:
            key = draw(keys)
            m[key] = draw(json_values)
            touched.add(key)
    return kind, m, touched


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_metas())
def test_mutated_meta_problems_are_where_the_mutation_is(case):
    kind, m, touched = case
    problems = validate(m, "mut.json")
    assert_problem_list(problems, "mut.json")
    assert problems == sorted(problems, key=lambda p: (p.pointer, p.message))
    if "kind" not in touched:
        # the untouched rest of a valid meta never produces a problem
        allowed = {"/" + _escape(k) for k in touched}
        for p in problems:
            assert p.pointer == "" or "/" + p.pointer.split("/")[1] in allowed, (str(p), touched)
    if all(k.startswith("x-") for k in touched) and all(k in m for k in touched):
        assert problems == []


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(KINDS), st.dictionaries(st.text(max_size=8).map(lambda s: "x-" + s), json_values, max_size=4))
def test_any_x_fields_keep_a_valid_meta_valid(kind, extra):
    assert validate({**VALID[kind], **extra}) == []


# -- the fast validator agrees with jsonschema ------------------------------------------------

from cr.store import fastvalid  # noqa: E402
from cr.store import meta as meta_module  # noqa: E402

SCHEMA_KINDS = KINDS + ("repo",)
FORMAT_EXAMPLES = {  # format: (conforming, not conforming)
    "pep440-version": (["1.0.0", "2!1.0.post3", "1.2.0rc1", "v1", "0", "1.0.0+local.7"], ["one", "1..2", ""]),
    "component-ref": (["model:x", "dataset:iris@>=1,<2", "software:numpy@1.26", "x"], ["model:Bad", "robot:x", "model:x@newest"]),
    "requirement": (["software:numpy", "software:onnx@>=1; platform_machine == \"x86_64\"", "model:x@1.0"],
                    ["software:x; bogus ==", "nokind", "software:x;"]),
    "pep508-marker": (["platform_machine == \"aarch64\"", "python_version >= \"3.9\""], ["os_name", "", "sys_platform == 'linux' and"]),
    "relative-path": (["model.onnx", "sub/dir/x.bin", "a/..b"], ["../x", "/abs", "a\\b", "C:x", "", "a/../b"]),
    "regex": ([r"Python (\d+)", "", "[a-z]+"], ["(", "a{2,1}"]),
    "model-format": (["onnx", "trt-plan", "npy-matrix", "x" * 64], ["Onnx", "a--b", "-a", "onnx\n", "x" * 65, ""]),
}


def _resolve(ref: str, root: dict) -> tuple[dict, dict]:
    doc, _, fragment = ref.partition("#")
    target = meta_module._documents()[doc] if doc else root
    new_root = target
    for part in fragment.strip("/").split("/") if fragment.strip("/") else []:
        target = target[part]
    return target, new_root


def _rarely(good, bad):
    """good, and once in a while bad: a near miss somewhere deep in an otherwise valid meta."""
    # (a value inside the range: hypothesis draws the bounds far more often than the rest)
    return st.integers(0, 40).flatmap(lambda i: bad if i == 17 else good)


_STRATEGIES: dict = {}  # by id() of schema and root: only ever the long-lived dicts of _SCHEMAS
_SCHEMAS = {kind: meta_module._schema(kind) for kind in SCHEMA_KINDS}


def from_schema(schema, root, depth=0):
    """Instances valid for schema, except for a rare near miss here and there."""
    key = (id(schema), id(root), depth)
    if key not in _STRATEGIES:
        _STRATEGIES[key] = _from_schema(schema, root, depth)
    return _STRATEGIES[key]


def _from_schema(schema, root, depth):
    if schema is True or schema == {} or depth > 6 or set(schema) <= fastvalid.ANNOTATIONS:
        return json_values
    if schema is False:
        return st.nothing()
    if "$ref" in schema:
        target, target_root = _resolve(schema["$ref"], root)
        return from_schema(target, target_root, depth + 1)
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return st.one_of([from_schema(sub, root, depth + 1) for sub in schema[key]])
    if "enum" in schema:
        return _rarely(st.sampled_from(schema["enum"]), st.sampled_from([None, 1, "Model", schema["enum"][0] + " "]))
    if "const" in schema:
        return _rarely(st.just(schema["const"]), st.sampled_from(["other", None]))
    types = schema.get("type")
    types = [types] if isinstance(types, str) else types or []
    if not types and "properties" in schema or "additionalProperties" in schema:
        types = ["object"]
    if not types and "format" in schema:
        types = ["string"]
    options = []
    for t in types:
        if t == "string":
            if "pattern" in schema:
                options.append(_rarely(st.from_regex(schema["pattern"], fullmatch=True), st.text(max_size=8) | st.just(1)))
            elif "format" in schema:
                good, bad = FORMAT_EXAMPLES[schema["format"]]
                options.append(_rarely(st.sampled_from(good), st.sampled_from(bad + [None, 7])))
            else:
                options.append(_rarely(st.text(max_size=8), json_scalars))
        elif t in ("integer", "number"):
            low = schema.get("minimum", schema.get("exclusiveMinimum"))
            strict = "exclusiveMinimum" in schema
            lowest = None if low is None else low + (1 if strict else 0)
            ints = st.integers(min_value=lowest, max_value=10**6)
            if t == "integer":
                good = ints | st.sampled_from([v for v in (3.0, 2**53) if lowest is None or v >= lowest])
            else:
                good = ints | st.floats(min_value=low, max_value=1e6, exclude_min=strict, allow_nan=False)
            bad = st.sampled_from([True, False, "1", 0.5, None] + ([low - 1, low] if low is not None else []))
            options.append(_rarely(good, bad))
        elif t == "boolean":
            options.append(_rarely(st.booleans(), st.sampled_from([0, 1, "true"])))
        elif t == "null":
            options.append(st.none())
        elif t == "array":
            items = from_schema(schema.get("items", {}), root, depth + 1)
            low = schema.get("minItems", 0)
            if schema.get("uniqueItems"):
                lists = st.lists(items, min_size=low, max_size=4, unique_by=lambda x: json.dumps(x, sort_keys=True))
            else:
                lists = st.lists(items, min_size=low, max_size=4)
            options.append(_rarely(lists, st.just([]) if low else json_values))
        elif t == "object":
            options.append(_objects(schema, root, depth))
    if not options:
        return json_values
    return st.one_of(options)


def _objects(schema, root, depth):
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    extra = schema.get("additionalProperties", True)
    names = schema.get("propertyNames")
    key_strategy = from_schema(names, root, depth + 1).filter(lambda k: isinstance(k, str)) if names else json_keys

    @st.composite
    def build(draw):
        out = {}
        for name, sub in props.items():
            if name in required or draw(st.integers(0, 2)) == 0:
                if name not in required or draw(st.integers(0, 60)) != 23:  # rarely a required one is missing
                    out[name] = draw(from_schema(sub, root, depth + 1))
        if "^x-" in schema.get("patternProperties", {}) and draw(st.integers(0, 4)) == 0:
            out["x-" + draw(st.text(max_size=4))] = draw(json_values)
        if extra is not False:
            for _ in range(draw(st.integers(0, 2))):
                key = draw(key_strategy)
                if key not in props:
                    out[key] = draw(from_schema(extra, root, depth + 1) if extra is not True else json_values)
        elif draw(st.integers(0, 40)) == 17:
            out[draw(json_keys)] = draw(json_values)  # rarely an unknown field
        return out

    return _rarely(build(), json_scalars)


def jsonschema_says_valid(kind: str, instance) -> bool:
    return next(iter(meta_module._validator(kind).iter_errors(instance)), None) is None


@st.composite
def generated_metas(draw):
    kind = draw(st.sampled_from(SCHEMA_KINDS))
    schema = _SCHEMAS[kind]
    m = draw(from_schema(schema, schema))
    if isinstance(m, dict) and draw(st.integers(0, 3)) == 0:  # mutate a few places, deep or not
        for _ in range(draw(st.integers(1, 3))):
            node = m
            while isinstance(node, (dict, list)) and node and draw(st.booleans()):
                slot = draw(st.sampled_from(sorted(node)) if isinstance(node, dict) else st.integers(0, len(node) - 1))
                if isinstance(node[slot], (dict, list)) and node[slot]:
                    node = node[slot]
                    continue
                node[slot] = draw(json_values)
                break
            else:
                if isinstance(node, dict) and node:
                    del node[draw(st.sampled_from(sorted(node)))]
    return kind, m


def test_every_shipped_schema_has_a_fast_validator():
    for kind in SCHEMA_KINDS:
        assert meta_module._fast_validator(kind) is not None, kind


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(generated_metas())
def test_fast_validator_agrees_with_jsonschema_on_generated_metas(case):
    kind, m = case
    assert meta_module._fast_validator(kind).is_valid(m) == jsonschema_says_valid(kind, m), (kind, m)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_metas())
def test_fast_validator_agrees_with_jsonschema_on_mutated_metas(case):
    kind, m, _ = case
    assert meta_module._fast_validator(kind).is_valid(m) == jsonschema_says_valid(kind, m), (kind, m)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SCHEMA_KINDS), json_values)
def test_fast_validator_agrees_with_jsonschema_on_any_json(kind, value):
    assert meta_module._fast_validator(kind).is_valid(value) == jsonschema_says_valid(kind, value)


@pytest.mark.parametrize("kind", KINDS)
def test_fast_validator_accepts_the_examples_and_shipped_metas(kind):
    assert meta_module._fast_validator(kind).is_valid(VALID[kind])
    for path in Path(SCHEMA_DIR).parents[2].glob(f"*/{kind}/*/*/meta.json"):
        assert meta_module._fast_validator(kind).is_valid(json.loads(path.read_text())), path


@pytest.mark.parametrize("a, b, same", [
    (1, True, False), (0, False, False), (1, 1.0, True), ([1, [True]], [1.0, [True]], True),
    ({"a": 1}, {"a": True}, False), ("1", 1, False), (None, None, True), ([], {}, False),
])
def test_equality_follows_json_schema(a, b, same):
    assert fastvalid.equal(a, b) is same
    assert fastvalid.unique([a, b]) is not same


def test_unknown_keywords_are_left_to_jsonschema():
    for schema in ({"type": "string", "maxLength": 3}, {"$ref": "#/$defs/nothing"}, {"type": "strnig"},
                   {"$ref": "other.json#/x"}, {"properties": {"a": {"not": {}}}}):
        with pytest.raises(fastvalid.Unsupported):
            fastvalid.Validator(schema, {}, {})


def test_validate_imports_jsonschema_only_for_invalid_metas(tmp_path):
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from cr.store.meta import validate, validate_repo_meta\n"
        f"valid = json.loads({json.dumps(json.dumps(VALID))})\n"
        "assert all(validate(m) == [] for m in valid.values())\n"
        "assert validate_repo_meta({'name': 'r', 'uid': '0123456789abcdef', 'version': '1.0.0'}) == []\n"
        "assert 'jsonschema' not in sys.modules\n"
        "bad = dict(valid['model'], uid='NOT-HEX')\n"
        "assert [p.pointer for p in validate(bad)] == ['/uid']\n"
        "assert 'jsonschema' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
