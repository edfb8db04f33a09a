"""The content hash of a component: what identity, shadowing and locks compare (never a uid alone)."""
from __future__ import annotations

import json


def component_sha256(meta: dict) -> str:
    """Hash of a component's canonical meta; the meta lists its files' sha256, so this covers them."""
    import hashlib  # here: a search that finds no duplicates hashes nothing (and skips its import)

    text = json.dumps(meta, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
