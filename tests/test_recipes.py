"""The shipped recipes (recipes/<name>/recipe.json): valid, their markers parse, and what they
offer on real platforms (x86_64 and aarch64 Linux, a Raspberry Pi on armv7l, a Mac, a CUDA host).

Platforms are PEP 508 marker sets, as cr.platform produces them; nothing is installed here.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement as PipRequirement
from packaging.version import Version

from cr.software.recipe import Recipe, parse_requirement
from cr.store.meta import load_json, validate

from conftest import ROOT

RECIPES = sorted((ROOT / "recipes").glob("*/recipe.json"))
REQUIRED = {
    "python", "pip", "gcc", "cmake", "git", "numpy", "onnx", "onnxruntime", "torch", "onnxscript",
    "tensorflow-cpu", "ai-edge-litert", "tensorrt", "cuda", "scikit-learn", "mlcommons-loadgen",
}


def _markers(machine: str, system: str = "linux", python: str = "3.11.7") -> dict:
    sys_platform = {"linux": "linux", "darwin": "darwin", "windows": "win32"}[system]
    return {
        "implementation_name": "cpython", "implementation_version": python, "os_name": "posix" if system != "windows" else "nt",
        "platform_machine": machine, "platform_python_implementation": "CPython", "platform_release": "6.1.0",
        "platform_system": {"linux": "Linux", "darwin": "Darwin", "windows": "Windows"}[system], "platform_version": "#1 SMP",
        "python_full_version": python, "python_version": ".".join(python.split(".")[:2]), "sys_platform": sys_platform,
    }


X86 = _markers("x86_64")
AARCH64 = _markers("aarch64")
PI_ARMV7 = _markers("armv7l", python="3.9.2")
MAC = _markers("arm64", "darwin", "3.12.4")
CPU_CAPS = frozenset({"linux", "x86_64", "avx2"})
GPU_CAPS = frozenset({"linux", "x86_64", "avx2", "gpu", "nvidia-gpu", "cuda"})


def recipe(name: str) -> Recipe:
    path = ROOT / "recipes" / name / "recipe.json"
    return Recipe.from_meta(load_json(path), str(path))


def test_every_required_software_has_a_recipe():
    assert REQUIRED <= {p.parent.name for p in RECIPES}


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.parent.name)
def test_recipe_validates_and_its_markers_and_versions_parse(path: Path):
    meta = load_json(path)
    assert validate(meta, str(path), kind="software") == []
    assert meta["name"] == path.parent.name
    for entry in meta.get("detect", []) + meta.get("install", []):
        if "marker" in entry:
            Marker(entry["marker"])  # raises on a bad marker
    for m in meta.get("install", []):
        assert m["versions"], m
        for v in m["versions"]:
            Version(v)
        if m["method"] == "pip":
            for pkg in m["packages"]:
                # every pip requirement pins the exact version chosen: never an unpinned
                # package (a bare torch pulls GBs of CUDA)
                assert "=={version}" in pkg, (path, pkg)
                PipRequirement(pkg.replace("{version}", m["versions"][0]))
    for dep in meta.get("deps", []):
        assert parse_requirement(dep).kind == "software"
    for probe in meta.get("detect", []):
        if "regex" in probe:
            re.compile(probe["regex"])
    r = Recipe.from_meta(meta, str(path))
    for markers in (X86, AARCH64, PI_ARMV7, MAC):
        r.installable_versions(markers, GPU_CAPS)
        r.probes_for(markers, GPU_CAPS)


def test_shipped_recipes_index_without_errors(cr_home):
    import cr.api as api

    index = api.open_index()
    try:
        bad = [(p, e) for repo, p, e in index.invalid() if repo == "builtin-recipes"]
        names = {c.name for c in index.components(kind="software")}
    finally:
        index.close()
    assert bad == []
    assert REQUIRED <= names


def test_torch_is_always_a_cpu_build_pinned_to_2_13_0_here():
    torch = recipe("torch")
    method = torch.method_for("2.13.0", X86, CPU_CAPS)
    assert method.packages_for("2.13.0") == ["torch==2.13.0+cpu"]
    assert torch.installable_versions(X86, CPU_CAPS)[0] == "2.13.0"
    # aarch64: PyPI's torch is the CUDA build, so the CPU index is the only index used
    arm = torch.method_for("2.13.0", AARCH64, CPU_CAPS)
    assert arm.spec["index_url"].endswith("/whl/cpu")
    # even on a CUDA host, the recipe never offers a CUDA build
    assert torch.method_for("2.13.0", X86, GPU_CAPS).packages_for("2.13.0") == ["torch==2.13.0+cpu"]


def test_onnxruntime_gpu_only_where_cuda_and_an_nvidia_gpu_are_present():
    ort = recipe("onnxruntime")
    assert [m.packages_for("1.22.1") for m in ort.methods_for(X86, CPU_CAPS)][0] == ["onnxruntime==1.22.1"]
    gpu = ort.methods_for(X86, GPU_CAPS)[0]
    assert gpu.packages_for("1.23.2") == ["onnxruntime-gpu==1.23.2"]
    assert set(gpu.requires) == {"nvidia-gpu", "cuda"}
    assert "onnxruntime-gpu==1.31.1" in ort.method_for(ort.installable_versions(X86, GPU_CAPS)[0], X86, GPU_CAPS).packages_for("1.31.1")
    assert ort.methods_for(PI_ARMV7, CPU_CAPS) == []  # no official armv7l wheels: explained by the resolver


def test_litert_is_tflite_runtime_on_armv7l():
    litert = recipe("ai-edge-litert")
    pi = litert.methods_for(PI_ARMV7, frozenset({"linux", "raspberry-pi"}))
    assert [m.packages_for("2.13.0") for m in pi] == [["tflite-runtime==2.13.0"]]
    assert litert.methods_for(X86, CPU_CAPS)[0].packages_for("2.3.0") == ["ai-edge-litert==2.3.0"]


def test_tensorrt_and_cuda_install_only_on_nvidia_hosts():
    for name in ("tensorrt", "cuda"):
        r = recipe(name)
        assert r.methods_for(X86, CPU_CAPS) == [], name
        assert r.methods_for(X86, GPU_CAPS), name
    trt = recipe("tensorrt")
    assert {p["type"] for p in trt.detect} == {"python", "library"}


def test_numpy_versions_follow_the_python_version():
    numpy = recipe("numpy")
    assert numpy.installable_versions(_markers("x86_64", python="3.9.18"), CPU_CAPS)[0] == "2.0.2"
    assert numpy.installable_versions(X86, CPU_CAPS)[0] == "2.4.6"
    assert "1.26.4" not in numpy.installable_versions(_markers("x86_64", python="3.13.1"), CPU_CAPS)


def test_tensorflow_cpu_package_per_platform():
    tf = recipe("tensorflow-cpu")
    assert tf.methods_for(X86, CPU_CAPS)[0].packages_for("2.21.0") == ["tensorflow-cpu==2.21.0"]
    assert tf.methods_for(AARCH64, CPU_CAPS)[0].packages_for("2.21.0") == ["tensorflow==2.21.0"]
    assert tf.methods_for(PI_ARMV7, CPU_CAPS) == []


def test_requirements_between_recipes_name_shipped_software():
    shipped = {p.parent.name for p in RECIPES}
    for path in RECIPES:
        for dep in json.loads(path.read_text())["deps"]:
            assert parse_requirement(dep).name in shipped, (path, dep)
