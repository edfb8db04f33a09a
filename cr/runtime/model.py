"""Where a model's file is: meta ``file`` in the component directory, or ``source``
{package, path} inside an installed package of the interpreter running this code.

The package is found without importing it (importlib.util.find_spec of a top-level name
does not execute the package; a distribution name such as scikit-learn is mapped to its
import names through importlib.metadata), so a heavy framework is never loaded to find a
file.
"""
from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from ..errors import CRError, NotFound
from . import pins


def package_dirs(package: str, paths: list[str] | None = None) -> list[Path]:
    """Where an installed package's files are: in this interpreter, or (paths: directories
    such as a lock's PYTHONPATH prefixes) there first."""
    dirs = []
    top, _, rest = package.partition(".")
    try:
        if paths:
            from importlib.machinery import PathFinder

            spec = PathFinder.find_spec(top, paths) or importlib.util.find_spec(top)
        else:
            spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        dirs += [Path(p).joinpath(*rest.split(".")) if rest else Path(p) for p in spec.submodule_search_locations]
    if not dirs:
        from importlib import metadata

        found = list(metadata.distributions(name=package, path=paths)) if paths else []
        try:
            dist = found[0] if found else metadata.distribution(package)
        except metadata.PackageNotFoundError:
            return []
        names = (dist.read_text("top_level.txt") or "").split()
        if not names:  # wheels built without top_level.txt (scikit-image): the folders it installs
            names = sorted({f.parts[0] for f in dist.files or () if len(f.parts) > 1
                            and not f.parts[0].endswith((".dist-info", ".data", ".libs")) and f.parts[0] != ".."})
        for name in names:
            path = Path(str(dist.locate_file(name)))
            if path.is_dir():
                dirs.append(path)
    return dirs


def package_version(package: str, paths: list[str] | None = None) -> str | None:
    from importlib import metadata

    found = list(metadata.distributions(name=package, path=paths)) if paths else []
    if found:
        return found[0].version
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def locate(meta: dict, component_dir: str | None, ref: str = "the model", paths: list[str] | None = None,
           verify: bool = True) -> dict:
    """{"path", "package", "package_version"} of the model's file; NotFound naming what is missing.

    A file from a registry package is checked against its pin (cr.runtime.pins): then
    "sha256" (the file's) and "pin" (the pin state) are added, and a file that is not the
    pinned one raises PinMismatch. verify=False only finds the file (cr show --no-verify).
    paths: more directories to look for a source package in first (the host looking into a
    lock's prefixes, where a package installed for the model lives)."""
    if meta.get("file"):
        if component_dir is None:
            raise NotFound(f"{ref} names file {meta['file']!r} but its directory is unknown")
        path = Path(component_dir) / meta["file"]
        if not path.is_file():
            raise NotFound(f"{ref}: its file {path} does not exist", hint="restore the file, or fix 'file' in the meta")
        return {"path": str(path), "package": None, "package_version": None}
    source = meta.get("source") or {}
    if source.get("file") and component_dir is not None:
        return locate({"file": source["file"]}, component_dir, ref, paths)
    package, inner = source.get("package"), source.get("path")
    if package and inner:
        dirs = package_dirs(package, paths)
        if not dirs:
            raise NotFound(
                f"{ref} comes from the package {package}, which is not installed in this environment",
                hint=f"its model meta should name it in deps (software:{package}), so that cr resolves and installs it "
                     f"with the model (cr install software {package})",
            )
        for d in dirs:
            path = d / inner
            if path.is_file():
                found = {"path": str(path), "package": package, "package_version": package_version(package, paths)}
                if verify:
                    pin = pins.verify(meta, found, ref)
                    found.update(sha256=pin.get("sha256"), pin=pin.get("state"))
                return found
        raise NotFound(f"{ref}: the package {package} has no file {inner} (looked in {', '.join(map(str, dirs))})",
                       hint="the installed version may not ship it; check source.path in the meta")
    if meta.get("format") is None and not meta.get("source"):
        return {"path": None, "package": None, "package_version": None}  # e.g. a synthetic model for the null backend
    raise CRError(f"{ref} names neither a file nor a source package", hint="add 'file' or 'source': {package, path} to its meta")


def pin_status(meta: dict, component_dir: str | None = None, ref: str = "the model", hash_file: bool = True,
           cached: bool = True, paths: list[str] | None = None) -> dict | None:
    """The pin state (cr.runtime.pins) of a package-sourced model in this environment, never raising for a
    mismatch (cr check, cr show, archives): {state, package, path, package_version,
    pinned_sha256, installed_version, sha256, message}; None for a model that is not
    package-sourced. hash_file=False reports "pinned" without reading the file."""
    pin = pins.pin_of(meta)
    if pin is None:
        return None
    out = {"state": None, "package": pin["package"], "path": pin["path"], "package_version": pin["package_version"],
           "pinned_sha256": pin["sha256"], "installed_version": None, "sha256": None, "message": None}
    try:
        located = locate(meta, component_dir, ref, paths, verify=False)
    except CRError as exc:
        out.update(state=pins.NOT_INSTALLED, message=exc.message)
        return out
    out["installed_version"] = located.get("package_version")
    if not hash_file:
        out["state"] = pins.PINNED if (pin["sha256"] or pin["package_version"]) else pins.UNPINNED
        return out
    out["sha256"] = pins.file_sha256(located["path"], cached=cached)
    state, differs = pins.judge(pin, out["installed_version"], out["sha256"])
    out["state"] = state
    if state == pins.MISMATCH:
        out["message"] = pins.mismatch_message(ref, located["path"], pin, out["installed_version"], out["sha256"], differs)
    elif state == pins.VERIFIED and pin["package_version"] and out["installed_version"] != pin["package_version"]:
        out["message"] = (f"package {pin['package']} {out['installed_version']} installed, {pin['package_version']} pinned: "
                          "the same file (sha256 verified)")
    elif state == pins.UNPINNED:
        out["message"] = f"{ref}'s file from package {pin['package']} is not pinned (cr hash REF records its sha256)"
    return out


def sha256(path: str | None) -> str | None:
    if not path:
        return None
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
