"""The layer order of cr/, read from the code's own imports (stdlib ast, no import is run).

    cli/            may import anything below it
    api.py          the facade for users: re-exports only; nothing inside cr imports it
    run/ archive/ dashboard/   host-side work (actions, solutions, archives, the site)
    resolve/ software/ results/ platform/   planning, software envs, result records, the host
    store/          components, repositories, the index: nothing above it
    runtime/        the device side, run in the measured child: only itself, errors, events,
                    fsutil, and the raw-latency codec (cr.results.latencies, standard library)
    errors, events, fsutil, paths, __about__, jsonio, scratch, procs   the foundation

Every import counts, also those inside functions (cr imports lazily for start-up time:
a lazy import is still a dependency). docs/architecture.md explains each rule.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

CR = Path(__file__).resolve().parents[1] / "cr"
FOUNDATION = {"cr.errors", "cr.events", "cr.fsutil", "cr.paths", "cr.__about__", "cr.jsonio", "cr.scratch", "cr.procs"}
# What the device side may use besides itself: the wire format of raw latencies.
RUNTIME_MAY_IMPORT = {"cr.errors", "cr.events", "cr.fsutil", "cr.results.latencies"}
# Packages (or top-level modules) below each one; nothing may import a package not below it.
BELOW = {
    "cr.store": set(),
    "cr.platform": set(),
    "cr.runtime": set(),
    "cr.results": {"cr.store", "cr.platform", "cr.runtime"},
    "cr.software": {"cr.store", "cr.platform"},
    "cr.resolve": {"cr.store", "cr.platform", "cr.software"},
    "cr.archive": {"cr.store", "cr.platform", "cr.software", "cr.resolve", "cr.results"},
    "cr.dashboard": {"cr.store", "cr.platform", "cr.results"},
    "cr.run": {"cr.store", "cr.platform", "cr.software", "cr.resolve", "cr.results", "cr.runtime", "cr.archive"},
    "cr.campaign": {"cr.store", "cr.platform", "cr.software", "cr.resolve", "cr.results", "cr.runtime", "cr.archive", "cr.run"},
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(CR.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if node.module is None or node.level and not node.module:
                found += [(node.lineno, f"{module}.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, module))
                # `from . import x` / `from .pkg import sub`: a submodule counts as its own import
                found += [(node.lineno, f"{module}.{a.name}") for a in node.names]
    return [(line, name) for line, name in found if name == "cr" or name.startswith("cr.")]


def _existing(name: str) -> str | None:
    """The module name as a file of cr/ (a 'from x import attr' names an attribute, not a module)."""
    parts = name.split(".")
    while parts:
        candidate = CR.parent.joinpath(*parts)
        if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
            return ".".join(parts)
        parts = parts[:-1]
    return None


def _package(module: str) -> str:
    """cr.store.index -> cr.store; cr.errors -> cr.errors; cr -> cr."""
    return ".".join(module.split(".")[:2])


def _edges() -> list[tuple[str, int, str]]:
    edges = []
    for path in sorted(CR.rglob("*.py")):
        if "_data" in path.parts:
            continue
        source = _module_name(path)
        for line, name in _imports(path):
            target = _existing(name)
            if target and target != source:
                edges.append((source, line, target))
    return edges


EDGES = sorted(set(_edges()))


def _where(source: str, line: int) -> str:
    return f"{source.replace('.', '/')}.py:{line}"


def test_the_imports_were_read():
    assert len(EDGES) > 300  # the reader is not silently blind
    assert ("cr.cli.components", "cr.api") in {(s, _package(t) if t.startswith("cr.api") else t) for s, _, t in EDGES} or \
        any(s.startswith("cr.cli") and t == "cr.api" for s, _, t in EDGES)


def test_nothing_below_the_cli_imports_the_facade():
    bad = [f"{_where(s, line)} imports {t}" for s, line, t in EDGES
           if t == "cr.api" and not (s.startswith("cr.cli") or s == "cr")]
    assert not bad, "use the owning module (cr.store.catalog, cr.resolve.plan, ...):\n" + "\n".join(bad)


def test_the_runtime_stands_alone():
    bad = [f"{_where(s, line)} imports {t}" for s, line, t in EDGES
           if s.startswith("cr.runtime") and not t.startswith("cr.runtime") and t not in RUNTIME_MAY_IMPORT]
    assert not bad, "the device side imports only itself, errors, events, fsutil and cr.results.latencies:\n" + "\n".join(bad)


def test_the_latency_codec_is_standard_library_only():
    imports = {t for s, _, t in EDGES if s == "cr.results.latencies"}
    assert imports <= FOUNDATION, imports


@pytest.mark.parametrize("package", sorted(BELOW))
def test_a_package_imports_only_what_is_below_it(package):
    allowed = BELOW[package] | FOUNDATION | {package}
    bad = [f"{_where(s, line)} imports {t}" for s, line, t in EDGES
           if _package(s) == package and _package(t) not in allowed and not t.startswith(package + ".")
           and not (package == "cr.runtime" and t in RUNTIME_MAY_IMPORT)]
    assert not bad, f"{package} may import {sorted(BELOW[package])} and the foundation:\n" + "\n".join(bad)


def test_no_cycles_among_packages():
    graph: dict[str, set[str]] = {}
    for s, _, t in EDGES:
        a, b = _package(s), _package(t)
        if a != b and a != "cr" and b != "cr":
            graph.setdefault(a, set()).add(b)
    cycles = []

    def visit(node, stack, seen):
        for nxt in sorted(graph.get(node, ())):
            if nxt in stack:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in seen:
                seen.add(nxt)
                visit(nxt, stack + [nxt], seen)

    for start in sorted(graph):
        visit(start, [start], {start})
    assert not cycles, "\n".join(sorted(set(cycles)))


def test_no_cycles_among_modules_of_the_cli():
    graph: dict[str, set[str]] = {}
    for s, _, t in EDGES:
        if s.startswith("cr.cli.") and t.startswith("cr.cli."):
            graph.setdefault(s, set()).add(t)
    back = [(a, b) for a, targets in graph.items() for b in targets if a in graph.get(b, set())]
    assert not back, back


def test_the_facade_only_re_exports():
    tree = ast.parse((CR / "api.py").read_text(encoding="utf-8"))
    defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("__")]
    assert not defined, f"cr/api.py defines {defined}: implementation belongs in the owning module"


def test_no_private_names_are_imported_across_packages():
    bad = []
    for path in sorted(CR.rglob("*.py")):
        if "_data" in path.parts:
            continue
        source = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module is not None:
                if node.level:
                    base = package.split(".")
                    module = ".".join(base[: len(base) - (node.level - 1)] + [node.module])
                else:
                    module = node.module
                if not module.startswith("cr.") or _package(module) == _package(source):
                    continue
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private:
                    bad.append(f"{_where(source, node.lineno)} imports {', '.join(private)} from {module}")
    assert not bad, "\n".join(bad)
