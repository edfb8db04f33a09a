"""The host side of pinned payloads (cr.runtime.pins holds the rule): `cr hash` records a
package-sourced model's sha256 and package version; `cr check` and `cr show` report each
pin's state in this environment.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import CRError
from ..runtime import pins
from ..runtime.model import pin_status
from ..store.meta import Problem


def rehash(target: str | Path) -> dict:
    """`cr hash`: every file of the component in meta 'files' (cr.store.authoring.rehash),
    then, for a model whose file comes from a registry package, that file's sha256 and the
    installed package version in meta 'source' ("pinned": {package, package_version, path,
    sha256} or None; "pin_changed": whether the meta changed for it). The package must be
    installed in the interpreter running cr (that is where the file is read)."""
    from ..fsutil import atomic_write_json
    from ..store.authoring import rehash as rehash_files
    from ..store.meta import load_json

    result = rehash_files(target)
    meta_path = Path(result["meta_path"])
    meta = load_json(meta_path)
    pinned, changed = pin_meta(meta, str(meta_path.parent), f"{meta.get('kind')}:{meta.get('name')}@{meta.get('version')}")
    if changed:
        atomic_write_json(meta_path, meta, durable=True)
    return {**result, "pinned": pinned, "pin_changed": changed}


def pin_meta(meta: dict, component_dir: str, ref: str) -> tuple[dict | None, bool]:
    """Record the installed file's sha256 and package version in meta['source'] (in place):
    (the pin, whether anything changed); (None, False) for a model without a source package.
    NotFound (naming the package and how to install it) when the package is not installed."""
    if pins.pin_of(meta) is None:
        return None, False
    from ..runtime.model import locate

    located = locate(meta, component_dir, ref, verify=False)
    digest = pins.file_sha256(located["path"], cached=False)
    source = meta["source"]
    before = (source.get("sha256"), source.get("package_version"))
    source["sha256"] = digest
    if located.get("package_version"):
        source["package_version"] = located["package_version"]
    else:
        source.pop("package_version", None)
    pin = {k: source.get(k) for k in ("package", "package_version", "path", "sha256")}
    return pin, before != (source.get("sha256"), source.get("package_version"))


def check_pins(meta_paths: list[str], problems: list[Problem], warnings: list[Problem]) -> list[dict]:
    """`cr check`: the pin state of every package-sourced model among meta_paths, re-hashed
    (the check is the audit: the cache is not read). A mismatch is a problem; an unpinned
    file a warning, as is the pinned file under another package version (the pin's
    version is stale); a package not installed here is reported, not judged (it may be
    installed in a lock's prefix or on another machine)."""
    from ..store.meta import load_json

    out = []
    for meta_path in sorted(set(meta_paths)):
        try:
            meta = load_json(Path(meta_path))
        except CRError:
            continue
        ref = f"model:{meta.get('name')}@{meta.get('version')}"
        state = pin_status(meta, str(Path(meta_path).parent), ref, cached=False)
        if state is None:
            continue
        out.append({"file": meta_path, "ref": ref, **state})
        if state["state"] == pins.MISMATCH:
            problems.append(Problem(meta_path, "/source/sha256", state["message"]))
        elif state["state"] == pins.UNPINNED:
            warnings.append(Problem(meta_path, "/source", state["message"]))
        elif state["message"]:  # verified by sha256 under another package version: the pin's version is stale
            warnings.append(Problem(meta_path, "/source/package_version", state["message"] + f"; cr hash {ref} records it"))
    return out


def show_pin(info: dict, verify: bool) -> dict | None:
    """`cr show`: the pin state of a shown model (info from cr.store.catalog.show)."""
    meta = info.get("meta") or {}
    if meta.get("kind") != "model":
        return None
    return pin_status(meta, str(info.get("path")), info.get("ref", "the model"), hash_file=verify)


def archive_pins(info: dict) -> None:
    """`cr unpack`: add "pin_here" (the pin state in this interpreter) to each excluded
    entry of an unpacked archive's info that records a pin. A mismatch is a warning here,
    not a refusal: the package may be installed into a lock's prefix by cr init, which
    checks it again (cr.run.solution.check_payload) and refuses a file that differs."""
    from ..store.meta import load_json

    target = Path(info["target"])
    for entry in info.get("excluded") or ():
        if not (isinstance(entry, dict) and entry.get("sha256") and isinstance(entry.get("ref"), str)):
            continue
        kind_name, _, version = entry["ref"].partition("@")
        kind, _, name = kind_name.partition(":")
        meta_path = target / kind / name / version / "meta.json"
        try:
            meta = load_json(meta_path)
        except CRError:
            continue
        entry["pin_here"] = pin_status(meta, str(meta_path.parent), entry["ref"])
