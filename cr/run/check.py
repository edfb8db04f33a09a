"""`cr check`: the store's checks (cr.store.authoring.check) plus what only the host knows.

A model's format is an open name (any well-formed one passes the schema); whether
something here loads it is known only from the registered backends and the converters
(cr.runtime.registry). A format none of them handles is a warning, not a problem: the
backend may be installed only in a lock's interpreter, or in the environment of the
machine the component is meant for.
"""
from __future__ import annotations

from pathlib import Path

from ..runtime import registry
from ..store.authoring import CheckReport
from ..store.authoring import check as check_store
from ..store.meta import Problem


def check(target: str | Path | None = None) -> CheckReport:
    """Validate metas and checksums (everything, a path or a ref), then warn about model
    formats that no registered backend loads and no converter reads, and check the pins of
    package-sourced model files against what is installed (cr.run.pins)."""
    from .pins import check_pins

    report = check_store(target)
    report.payloads = check_pins([meta_path for meta_path, _, _ in report.model_formats], report.problems, report.warnings)
    if report.model_formats:
        loads = registry.formats()
        for meta_path, pointer, fmt in report.model_formats:
            problem = registry.format_problem(fmt, loads)
            if problem:
                report.warnings.append(Problem(meta_path, pointer, problem))
    return report
