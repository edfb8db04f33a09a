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


def check(target: str | Path | None = None, deep: bool = False) -> CheckReport:
    """Validate metas and checksums (everything, a path or a ref), then warn about model
    formats that no registered backend loads and no converter reads, and check the pins of
    package-sourced model files against what is installed (cr.run.pins).

    deep: also run onnx.checker on each ONNX file whose structure passed (the only check
    here that imports a framework package: about a second, and numpy; a warning when onnx
    is not installed)."""
    from .pins import check_pins

    report = check_store(target)
    if deep:
        _check_onnx_deeply(report)
    report.payloads = check_pins([meta_path for meta_path, _, _ in report.model_formats], report.problems, report.warnings)
    if report.model_formats:
        loads = registry.formats()
        for meta_path, pointer, fmt in report.model_formats:
            problem = registry.format_problem(fmt, loads)
            if problem:
                report.warnings.append(Problem(meta_path, pointer, problem))
    return report


def _check_onnx_deeply(report: CheckReport) -> None:
    """onnx.checker on every ONNX file that the structural check passed: operators known to
    their opset, types and attributes (external data is not loaded)."""
    from ..store import modelfiles

    files = [m for m in report.models if m["ok"] and modelfiles.checked_format(m["format"], Path(m["path"])) == "onnx"]
    if not files:
        return
    try:
        import onnx
        import onnx.checker
    except ImportError:
        report.warnings.append(Problem(files[0]["file"], files[0]["pointer"],
                                       "onnx is not installed here: --deep read the ONNX files' structure only "
                                       "(install it into the Python that runs cr: pip install onnx)"))
        return
    for entry in files:
        path = Path(entry["file"]).parent / entry["path"]
        try:
            onnx.checker.check_model(onnx.load(str(path), load_external_data=False))
        except Exception as exc:  # noqa: BLE001 - onnx raises ValidationError, DecodeError, ...: each is the file's fault
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            entry.update(ok=False, problem=f"not a valid ONNX model: onnx.checker: {first}")
            report.problems.append(Problem(entry["file"], entry["pointer"], f"{entry['ref']}: {entry['path']}: {entry['problem']}"))
