"""The layer order of cr/, read from the code's own imports (stdlib ast, no import is run).

    cli/            may import anything below it
    api.py          the facade for users: re-exports only; nothing inside cr imports it
    run/ archive/ dashboard/   host-side work (actions, solutions, archives, the site)
    resolve/ software/ results/ platform/   planning, software envs, result records, the host
    store/          components, repositories, the index: nothing above it
    runtime/        the device side, run in the measured child: only itself, errors, events,
                    fsutil, plugins, durations, the raw-latency codec and
                    the placement wording (cr.results.latencies, standard library)
    errors, events, fsutil, paths, __about__, jsonio, scratch, procs, sqlcache, textsafe, durations
                    the foundation: every module at the top of cr/ but api.py; they import
                    only each other (and the standard library)

No module imports a private name (`_x`) of another module, nor reaches one through a module
it imported (`host._clean_env()`): what other modules use is public, and named so.

Every import counts, also those inside functions (cr imports lazily for start-up time:
a lazy import is still a dependency). docs/architecture.md explains each rule.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

CR = Path(__file__).resolve().parents[1] / "cr"
FOUNDATION = {"cr.errors", "cr.events", "cr.fsutil", "cr.paths", "cr.__about__", "cr.jsonio", "cr.scratch", "cr.procs",
              "cr.sqlcache", "cr.textsafe", "cr.plugins", "cr.durations"}
# What the device side may use besides itself: the wire format of raw latencies, the placement wording.
RUNTIME_MAY_IMPORT = {"cr.errors", "cr.events", "cr.fsutil", "cr.plugins", "cr.durations", "cr.results.latencies",
                      "cr.results.placement"}  # all standard library only
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
    "cr.tune": {"cr.store", "cr.platform", "cr.software", "cr.resolve", "cr.results", "cr.runtime", "cr.archive", "cr.run"},
    "cr.export": {"cr.store", "cr.platform", "cr.software", "cr.resolve", "cr.results", "cr.runtime", "cr.archive", "cr.run",
                  "cr.campaign"},
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
    assert not bad, "the device side imports only itself, errors, events, fsutil, plugins, durations, cr.results.latencies and cr.results.placement:\n" + "\n".join(bad)


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


def test_the_foundation_imports_nothing_above_it():
    modules = {_module_name(path) for path in CR.glob("*.py")} - {"cr", "cr.api", "cr.__main__"}
    assert modules == FOUNDATION, "a module at the top of cr/ is a floor module: list it in FOUNDATION " \
        f"(and docs/architecture.md), or move it into its package: {sorted(modules ^ FOUNDATION)}"
    bad = [f"{_where(s, line)} imports {t}" for s, line, t in EDGES if s in FOUNDATION and t not in FOUNDATION]
    assert not bad, "the foundation imports only itself (and the standard library):\n" + "\n".join(bad)


# Private names still imported from another module: the issue 23 renovation moves these
# files; each line goes when its import does (the test fails on a stale line, so the list
# only shrinks). Nothing may be added.
PRIVATE_IMPORTS_LEFT: set[str] = set()


def _private_uses() -> list[tuple[str, str]]:
    """(where, what) of every private name a module takes from another cr module: imported
    (`from .x import _y`) or reached through a module it imported (`x._y`)."""
    found = []
    for path in sorted(CR.rglob("*.py")):
        if "_data" in path.parts:
            continue
        source = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        modules: dict[str, str] = {}  # local name -> the cr module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update({a.asname: a.name for a in node.names if a.asname and a.name.startswith("cr.")})
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    module = ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                if module != "cr" and not module.startswith("cr."):
                    continue
                for a in node.names:
                    if _existing(f"{module}.{a.name}") == f"{module}.{a.name}":
                        modules[a.asname or a.name] = f"{module}.{a.name}"
                    elif a.name.startswith("_") and not a.name.startswith("__") and module != source:
                        found.append((f"{_where(source, node.lineno)}", f"imports {a.name} from {module}"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                    and node.attr.startswith("_") and not node.attr.startswith("__") and modules[node.value.id] != source):
                found.append((_where(source, node.lineno), f"uses {modules[node.value.id]}.{node.attr}"))
    return found


def test_the_private_name_reader_sees_both_forms(tmp_path, monkeypatch):
    pkg = tmp_path / "cr"
    (pkg / "a").mkdir(parents=True)
    for name in ("__init__.py", "a/__init__.py", "a/x.py"):
        (pkg / name).write_text("")
    (pkg / "a" / "y.py").write_text("from .x import _hidden, shown\nfrom . import x\nx._inner()\nx.public()\n")
    monkeypatch.setattr(sys.modules[__name__], "CR", pkg)
    assert sorted(what for _, what in _private_uses()) == ["imports _hidden from cr.a.x", "uses cr.a.x._inner"]


def test_no_module_takes_a_private_name_of_another():
    found = {f"{where.partition(':')[0]} {what}" for where, what in _private_uses()}
    new = sorted(f"{where} {what}" for where, what in _private_uses() if f"{where.partition(':')[0]} {what}" not in PRIVATE_IMPORTS_LEFT)
    assert not new, "make the name public in its module (and name it so), or move the code:\n" + "\n".join(new)
    stale = sorted(PRIVATE_IMPORTS_LEFT - found)
    assert not stale, "no longer true: delete from PRIVATE_IMPORTS_LEFT:\n" + "\n".join(stale)
