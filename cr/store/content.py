"""The content hash of a component: what identity, shadowing and locks compare (never a uid alone)."""
from __future__ import annotations

import hashlib
import json


def component_sha256(meta: dict) -> str:
    """Hash of a component's canonical meta; the meta lists its files' sha256, so this covers them."""
    text = json.dumps(meta, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
