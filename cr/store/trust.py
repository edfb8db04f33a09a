"""The trust boundary: what may execute or fetch, depending on where it came from.

Data from anywhere may be read. What executes or fetches takes effect only from a trusted
repository, or when it is identical (same content hash) to something from a trusted one:

    recipes         install methods (pip packages and indexes, apt, download URLs,
                    scripts) and executable detect probes
    models          Python architecture files (a torch state dict's net.py)
    datasets        loaders (``source.loader``: a Python function called by cr)
    actions         entries (``module:function`` called by the runtime)

Trusted repositories (cr.store.repository.Repo.is_trusted): the shipped ones, the user's
local repo, directories the user registered (cr repo add), and any repository the user
marked trusted (cr repo trust NAME, or --trust on cr init / cr reproduce / cr install /
cr repo pull, which list exactly what would run first). Pulled git repositories and
unpacked archives are not trusted until then. docs/security.md is the user's page.

Shadowing is judged by content: a component from an untrusted repository never replaces
a trusted one of the same kind/name/version whose content differs (prefer_trusted), and
identical copies are no news.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import CRError
from .content import component_sha256, is_copy_of


class Untrusted(CRError):
    """Something that would execute or fetch comes from a repository the user has not trusted."""

    def __init__(self, message: str, hint: str | None = None, items=(), repos=()):
        super().__init__(message, hint)
        self.items = list(items)
        self.repos = sorted(set(repos))


@dataclass(frozen=True)
class Item:
    """One thing that would execute or fetch: where it comes from and exactly what it is."""

    repo: str
    component: str  # its ref, e.g. software:numpy@1.0.0
    what: str       # "install script", "pip packages", "download", "executable probe", "python file", ...
    detail: str     # the command, URL, packages or file path
    sha256: str = ""
    argv: tuple = ()  # the exact command it would run, where it is one

    def line(self) -> str:
        """One line for a terminal: the exact argv where there is one, every control, escape or
        bidi character escaped (cr.textsafe), so the listing cannot be redrawn by what it lists."""
        import shlex

        from ..textsafe import shown

        detail = shlex.join(self.argv) if self.argv else self.detail
        text = f"{shown(self.component)} (repo {shown(self.repo)}): {shown(self.what)}: {shown(detail)}"
        return text + (f" [sha256 {shown(self.sha256)}]" if self.sha256 else "")

    def to_dict(self) -> dict:
        return {"repo": self.repo, "component": self.component, "what": self.what, "detail": self.detail,
                "sha256": self.sha256, **({"argv": list(self.argv)} if self.argv else {})}


def repos_by_name(index) -> dict:
    return {r.name: r for r in index.repos}


def component_trusted(comp, meta: dict, index) -> bool:
    """Whether what comp declares may execute: its repo is trusted, or a trusted repo holds
    the same component by content: the same canonical meta, and every file of comp's folder
    there with the same bytes (checked now, at use: a meta lists only some files)."""
    repos = repos_by_name(index)
    repo = repos.get(comp.repo)
    if repo is not None and repo.is_trusted:
        return True
    digest = component_sha256(meta)
    for other in index.components(kind=comp.kind, name=comp.name):
        other_repo = repos.get(other.repo)
        if other.repo != comp.repo and other_repo is not None and other_repo.is_trusted \
                and component_sha256(index.meta_of(other)) == digest and is_copy_of(comp.meta_path, other.meta_path):
            return True
    return False


def same_content(untrusted, trusted, index) -> bool:
    """Whether an untrusted component is the trusted one by content: the same canonical meta and
    every file of its folder in the trusted one's with the same bytes (cr.store.content.is_copy_of)."""
    if component_sha256(index.meta_of(untrusted)) != component_sha256(index.meta_of(trusted)):
        return False
    return is_copy_of(untrusted.meta_path, trusted.meta_path)


def prefer_trusted(components: list, index) -> list:
    """components (best first) with, for each kind/name/version, a trusted copy moved ahead of
    untrusted ones whose content differs from it: an archive or a pulled repository cannot
    silently replace a shipped or local component. Identical copies keep their order."""
    repos = repos_by_name(index)
    groups: dict[tuple, list] = {}
    for c in components:
        groups.setdefault((c.kind, c.name, c.version), []).append(c)
    if all(len(g) == 1 for g in groups.values()):
        return components
    chosen: dict[tuple, object] = {}
    for key, group in groups.items():
        best = group[0]
        repo = repos.get(best.repo)
        if len(group) > 1 and (repo is None or not repo.is_trusted):
            trusted = [c for c in group[1:] if repos.get(c.repo) is not None and repos[c.repo].is_trusted]
            if trusted and not same_content(best, trusted[0], index):
                from ..events import reporter

                reporter().warning(
                    f"{best.ref} in repo {best.repo!r} differs from the one in repo {trusted[0].repo!r} and is not "
                    f"trusted: the one in {trusted[0].repo!r} is used (review it with cr show {best.ref} "
                    f"--repo {best.repo}; trust it with cr repo trust {best.repo})")
                best = trusted[0]
        chosen[key] = best
    out, placed = [], set()
    for c in components:
        key = (c.kind, c.name, c.version)
        if key not in placed:
            placed.add(key)
            first = chosen[key]
            out.append(first)
            out.extend(x for x in groups[key] if x is not first)
    return out


# -- what a component would run --------------------------------------------------------

def recipe_items(recipe, methods=None, probes: bool = True) -> list[Item]:
    """What a recipe would execute or fetch: its install methods (or only `methods`) and
    its executable detect probes."""
    ref = f"software:{recipe.name}@{recipe.revision}"
    repo = getattr(recipe, "repo", "") or "?"
    items = []
    for m in methods if methods is not None else recipe.install:
        spec = m.spec
        if m.method == "script":
            script = spec.get("script", "")
            items.append(Item(repo, ref, "install script", script,
                              argv=("/bin/sh", "-e", "-c", script) if isinstance(script, str) else ()))
        elif m.method == "download":
            items.append(Item(repo, ref, "download", str(spec.get("url", "")),
                              spec["sha256"] if isinstance(spec.get("sha256"), str) else ""))
        elif m.method == "pip":
            where = []
            if spec.get("index_url"):
                where.append(f"--index-url {spec['index_url']}")
            where += [f"--extra-index-url {u}" for u in spec.get("extra_index_urls", ())]
            items.append(Item(repo, ref, "pip install", " ".join([*spec.get("packages", ()), *where])))
        elif m.method == "apt":
            items.append(Item(repo, ref, "apt-get install", " ".join(spec.get("packages", ()))))
        else:
            items.append(Item(repo, ref, f"install method {m.method}", str(spec)[:200]))
    if probes:
        for probe in recipe.detect:
            if probe.get("type") == "executable":
                names = [*probe.get("names", ()), *probe.get("paths", ())]
                items.append(Item(repo, ref, "executable probe", " ".join([" | ".join(names), *probe.get("args", ())])))
    return items


def meta_items(kind: str, ref: str, repo: str, meta: dict) -> list[Item]:
    """What a model, dataset or action component (known by its kind, ref, repo and meta)
    would run: Python files it imports, loaders and entries it names."""
    files = meta.get("files") if isinstance(meta.get("files"), dict) else {}
    items = []
    if kind == "model":
        seen = set()
        variants = meta.get("variants") if isinstance(meta.get("variants"), list) else []
        for holder in [meta, *[v for v in variants if isinstance(v, dict)]]:
            arch = holder.get("architecture")
            path = arch.get("file") if isinstance(arch, dict) else None
            if isinstance(path, str) and path not in seen:
                seen.add(path)
                items.append(Item(repo, ref, "python file (imported to build the network)", path, str(files.get(path, ""))))
    elif kind == "dataset":
        loader = (meta.get("source") or {}).get("loader") if isinstance(meta.get("source"), dict) else None
        if loader:
            items.append(Item(repo, ref, "python loader (called to read the data)", str(loader)))
    elif kind == "action":
        if meta.get("entry"):
            items.append(Item(repo, ref, "python entry (called by the runtime)", str(meta["entry"])))
        if meta.get("host"):
            items.append(Item(repo, ref, "python host hook (called by cr around the run)", str(meta["host"])))
    return items


def require(items: list[Item], what: str) -> None:
    """Untrusted listing items (when there are any): 'what' says what was about to happen."""
    if not items:
        return
    repos = sorted({i.repo for i in items})
    shown = "; ".join(i.line() for i in items[:3]) + (f"; and {len(items) - 3} more" if len(items) > 3 else "")
    raise Untrusted(
        f"{what} would run code from {', '.join(repr(r) for r in repos)}, which you have not trusted: {shown}",
        hint=("review it (cr show REF), then trust the repository: cr repo trust " + " ".join(repos)
              + " (or rerun cr init / cr reproduce / cr install with --trust, which lists everything first)"),
        items=items, repos=repos)


def items_of(infos: list[dict], open_index) -> list[Item]:
    """What these components (catalog.show dicts; None entries skipped) would run from
    repositories the user has not trusted (by repo, or by an identical trusted copy).
    open_index: cr.store.catalog.open_index (called only when something needs a look)."""
    from . import registry

    trusted = {r.name for r in registry.all_repos() if r.is_trusted}
    infos = [info for info in infos if info and info.get("repo") not in trusted
             and meta_items(info["kind"], info["ref"], info.get("repo") or "?", info["meta"])]
    if not infos:
        return []
    index = open_index(refresh=False)
    try:
        items = []
        for info in infos:
            comp = next((c for c in index.components(kind=info["kind"], name=info["name"])
                         if str(c.meta_path) == str(info.get("meta_path"))), None)
            found = meta_items(info["kind"], info["ref"], info.get("repo") or "?", info["meta"])
            if comp is None or not component_trusted(comp, info["meta"], index):
                items += found
    finally:
        index.close()
    return items


def untrusted(info: dict, open_index) -> bool:
    """Whether a component (a catalog.show dict) comes from a repository you have not trusted
    and is not a trusted one by content (component_trusted)."""
    from . import registry

    if info.get("repo") in {r.name for r in registry.all_repos() if r.is_trusted}:
        return False
    index = open_index(refresh=False)
    try:
        comp = next((c for c in index.components(kind=info["kind"], name=info["name"])
                     if str(c.meta_path) == str(info.get("meta_path"))), None)
        return comp is None or not component_trusted(comp, info["meta"], index)
    finally:
        index.close()


def check_components(infos: list[dict], what: str, open_index) -> None:
    """Untrusted when any of these components (catalog.show dicts; None entries skipped)
    would run code that is not trusted (open_index: as for items_of)."""
    require(items_of(infos, open_index), what)


def runs_code(info: dict, effective: dict | None = None) -> bool:
    """Whether using this component as configured imports or calls its own Python: a torch
    state dict's architecture file (effective: the variant's meta), a dataset loader, an
    action entry. Other variants of a model with a net.py (its ONNX file, say) do not."""
    if info["kind"] == "model":
        meta = effective if effective is not None else info["meta"]
        return meta.get("format") == "torch-state-dict" and isinstance(meta.get("architecture"), dict)
    if info["kind"] == "dataset":
        source = info["meta"].get("source")
        return info["meta"].get("format") == "loader" or (isinstance(source, dict) and bool(source.get("loader")))
    return info["kind"] == "action"


def trust_repos(names, home=None) -> list[str]:
    """Mark these registered repositories trusted (the user's consent); the names changed."""
    from . import registry

    changed = []
    registered = {r.name: r for r in registry.registered(home)}
    for name in sorted(set(names)):
        repo = registered.get(name)
        if repo is not None and not repo.is_trusted:
            registry.set_trusted(name, True, home)
            changed.append(name)
    return changed

