"""The content hash of a component: what identity, shadowing and locks compare (never a uid alone)."""
from __future__ import annotations

import json


def component_sha256(meta: dict) -> str:
    """Hash of a component's canonical meta; the meta lists its files' sha256, so this covers them."""
    import hashlib  # here: a search that finds no duplicates hashes nothing (and skips its import)

    text = json.dumps(meta, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


MAX_TREE_FILES = 20_000  # a component folder with more files is never called a copy of another


def tree_files(folder, allow_bytecode: bool = True) -> dict[str, str] | None:
    """{relative path: "sha256:<hex>" | "link:<target>" | "other"} of every file under folder.
    None when it cannot be read in full, holds more than MAX_TREE_FILES files, or
    (allow_bytecode=False) holds Python bytecode.

    Identity by content for what executes: two copies of a component whose metas are
    identical are the same only when their files are, since a meta's `files` lists only some
    of them (a changed net.py beside an identical meta must not pass as the trusted one).
    Python bytecode (__pycache__) is left out on the trusted side, where pip writes it when it
    installs reefkit's own data, and makes an untrusted copy different (allow_bytecode=False):
    cr never writes bytecode into a component, and the interpreter would run a planted .pyc
    instead of the .py beside it."""
    import hashlib
    import os

    out: dict[str, str] = {}
    root = os.fspath(folder)
    try:
        for here, dirs, files in os.walk(root, followlinks=False):
            if "__pycache__" in dirs:
                if not allow_bytecode:
                    return None
                dirs.remove("__pycache__")
            rel_dir = os.path.relpath(here, root)
            for name in files + [d for d in dirs if os.path.islink(os.path.join(here, d))]:
                if name.endswith((".pyc", ".pyo")) and not allow_bytecode:
                    return None
                path = os.path.join(here, name)
                rel = os.path.normpath(os.path.join(rel_dir, name))
                if os.path.islink(path):
                    out[rel] = "link:" + os.readlink(path)
                elif os.path.isfile(path):
                    digest = hashlib.sha256()
                    with open(path, "rb") as f:
                        for chunk in iter(lambda: f.read(1 << 20), b""):
                            digest.update(chunk)
                    out[rel] = "sha256:" + digest.hexdigest()
                else:
                    out[rel] = "other"
                if len(out) > MAX_TREE_FILES:
                    return None
    except OSError:
        return None
    return out


def is_copy_of(copy_meta, original_meta) -> bool:
    """Every file beside the meta file copy_meta is beside original_meta with the same bytes
    (the metas themselves are compared canonically by the caller: a recipe.json and an
    archive's meta.json may hold the same meta). A copy may lack files: an archive leaves out
    weights it may not redistribute, and a missing file runs nothing."""
    import os

    mine = tree_files(os.path.dirname(os.fspath(copy_meta)), allow_bytecode=False)
    if mine is None:
        return False
    theirs = tree_files(os.path.dirname(os.fspath(original_meta)))
    if theirs is None:
        return False
    mine.pop(os.path.basename(os.fspath(copy_meta)), None)
    theirs.pop(os.path.basename(os.fspath(original_meta)), None)
    return all(theirs.get(rel) == what for rel, what in mine.items())
