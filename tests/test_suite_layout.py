"""The test suite's own layout: shared helpers live in conftest.py and tests/helpers/, and
no test module imports another (read from the code with ast, nothing is imported)."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_no_test_module_imports_another():
    modules = {p.stem for p in TESTS.glob("test_*.py")}
    offenders = {}
    for path in sorted([*TESTS.glob("test_*.py"), *TESTS.glob("helpers/*.py"), TESTS / "conftest.py"]):
        wrong = sorted(_imported(path) & modules)
        if wrong:
            offenders[str(path.relative_to(TESTS))] = wrong
    assert not offenders, f"move what they share to tests/helpers/ or conftest.py: {offenders}"
