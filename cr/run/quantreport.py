"""The host side of an int8 compile's honesty: where calibration samples come from, and the
report of what quantisation did (cr.runtime.quantcost measures it in the child).

    ref, split = calibration_data(model_meta, dataset_given, "train")   # --calibration SPLIT|DATASET_REF
    attach(record, result, state)     # record["quantization"] + one Warning: line per problem
    rows(record)                      # the lines `cr compile` shows under its table

Calibration: ``--calibration`` names a split of the calibration dataset (``train``,
``test``, ``all``) or another dataset (``dataset:NAME[@VERSION]``, or a bare NAME). A
dataset that declares splits calibrates by default on the split validation does not judge
(the model's ``dataset.split``, else ``test``): ``train``. A dataset without splits can only
calibrate on all its samples. Either way, the child measures by content how many
calibration samples are also samples ``cr validate model NAME`` judges (the model's
dataset and split), and the report says so, with counts.

Warnings (one ``Warning:`` line each, also in record["quantization"]["warnings"]): the
int8 file is larger than its float reference; it runs slower by more than SLOWER_AT
(the median of a few dozen runs still moves by some percent on a busy machine, so a
smaller difference is reported, not warned about); a pre-pass was skipped or failed;
calibration samples overlap the evaluation samples.
"""
from __future__ import annotations

from ..errors import CRError

SPLITS = ("train", "test", "all")
SLOWER_AT = 1.10  # latency ratio above which the int8 output is called slower
_HINT = "give --calibration train|test|all (a split of the calibration dataset) or --calibration dataset:NAME (another dataset)"


def evaluation_split(dataset_meta: dict, model_meta: dict, dataset_ref: str | None = None) -> str:
    """The split `cr validate` judges on this dataset: the model's dataset.split when it is the
    model's dataset, else test when the dataset declares splits, else all (cr.run.target)."""
    declared = model_meta.get("dataset") or {}
    split = declared.get("split") if dataset_ref is None or _same(dataset_ref, declared.get("ref")) else None
    return split or ("test" if dataset_meta.get("split_by") else "all")


def _same(a: str | None, b: str | None) -> bool:
    def name(ref):
        return str(ref or "").split("@")[0]

    return bool(a) and name(a) == name(b)


def calibration_ref(calibration: str | None, dataset: str | None) -> str | None:
    """The dataset --calibration names (None: it names a split, or was not given); a CRError
    naming the value when it is also given as --dataset differently, or names no dataset."""
    if calibration is None or calibration in SPLITS:
        return None
    if not isinstance(calibration, str) or not calibration.strip():
        raise CRError(f"--calibration {calibration!r} is neither a split nor a dataset", hint=_HINT)
    ref = calibration if ":" in calibration else f"dataset:{calibration}"
    from ..store.catalog import show

    try:
        found = show(ref, verify=False)
    except CRError as exc:
        raise CRError(f"--calibration {calibration}: not a split ({', '.join(SPLITS)}) and {exc.message}", hint=_HINT) from None
    if found["kind"] != "dataset":
        raise CRError(f"--calibration {calibration}: {found['ref']} is a {found['kind']}, not a dataset", hint=_HINT)
    if dataset and not _same(dataset if ":" in dataset else f"dataset:{dataset}", found["ref"]):
        raise CRError(f"--calibration {calibration} and --dataset {dataset} name two different datasets",
                      hint="give one of them: --calibration names the calibration dataset (or a split of --dataset's)")
    return ref


def calibration_split(ds: dict | None, calibration: str | None, model_meta: dict) -> str | None:
    """The split whose samples calibrate (and feed the checks): --calibration SPLIT, checked
    against the dataset; by default the split validation does not judge, when there are splits."""
    if ds is None:
        if calibration in SPLITS:
            raise CRError(f"--calibration {calibration} names a split, but there is no dataset to take it from "
                          "(the model names none)", hint="give --dataset REF too, or --calibration dataset:NAME")
        return None
    splits = bool(ds["meta"].get("split_by"))
    if calibration in SPLITS:
        if calibration != "all" and not splits:
            raise CRError(f"--calibration {calibration}: {ds['ref']} declares no splits (no split_by in its meta)",
                          hint="give --calibration all, or another dataset: --calibration dataset:NAME")
        return calibration
    if not splits:
        return "all"
    judged = evaluation_split(ds["meta"], model_meta, ds["ref"])
    return "test" if judged == "train" else "train"


def evaluation(model_meta: dict) -> dict | None:
    """The dataset and split `cr validate` judges the model on ({"ds", "split"}), None when the
    model names no dataset (or it is not here: then no overlap can be measured)."""
    ref = (model_meta.get("dataset") or {}).get("ref")
    if not ref:
        return None
    from ..store.catalog import show

    try:
        ds = show(ref, verify=False)
    except CRError:
        return None
    if ds["kind"] != "dataset":
        return None
    return {"ds": ds, "split": evaluation_split(ds["meta"], model_meta)}


def check_trust(datasets: list, what: str) -> None:
    """The datasets the conversion loads (calibration, evaluation) that would call Python (a
    loader) from an untrusted repository need the user's consent first (cr.store.trust)."""
    from ..store import trust

    check = [ds for ds in datasets if ds and trust.runs_code(ds, None)]
    if check:
        from ..store.catalog import open_index

        trust.check_components(list({ds["uid"]: ds for ds in check}.values()), what, open_index)


def attach(record: dict, result: dict, where: str) -> None:
    """record["quantization"]: the child's report (result["quantization"]) with its warnings;
    each warning is also one reporter warning (the CLI prints `Warning: ...`). where: how the
    output is named."""
    report = result.get("quantization")
    if not isinstance(report, dict):
        return
    report["warnings"] = warnings(report, where)  # in the result too: the output's provenance keeps them
    record["quantization"] = report
    from ..events import reporter

    for line in report["warnings"]:
        reporter().warning(line)


def _ratio(x) -> str:
    return f"x{x:.2f}" if isinstance(x, (int, float)) else "x?"


def warnings(report: dict, where: str) -> list[str]:
    out = []
    against = report.get("against") or "its float reference"
    size, ref_size = report.get("bytes"), report.get("reference_bytes")
    if isinstance(size, int) and isinstance(ref_size, int) and size > ref_size:
        out.append(f"{where} is larger than {against}: {size} vs {ref_size} bytes ({_ratio(report.get('size_ratio'))})")
    latency = report.get("latency") or {}
    ratio = latency.get("ratio")
    if isinstance(ratio, (int, float)) and ratio > SLOWER_AT:
        out.append(f"{where} is slower than {against} on this machine: {latency['int8_ms']:.3g} vs "
                   f"{latency['reference_ms']:.3g} ms per run ({_ratio(ratio)}; {latency['method']}, {latency['backend']}, "
                   f"batch {latency['batch']})")
    for step in report.get("prepasses") or []:
        if step.get("status") == "skipped":
            fix = "; cr install software sympy brings it" if "sympy" in str(step.get("reason")) else ""
            out.append(f"{step['step']} skipped: {step.get('reason')} (the model was quantised without it{fix})")
    calibration = report.get("calibration") or {}
    shared = calibration.get("overlap")
    if shared:
        judged = calibration["evaluation"]
        out.append(f"calibration overlaps validation: {shared} of {calibration['samples']} calibration samples "
                   f"({calibration['dataset']}, split {calibration['split']}) are among the {judged['samples']} samples "
                   f"cr validate judges ({judged['dataset']}, split {judged['split']}), so its accuracy is measured on "
                   "data the quantiser saw; calibrate elsewhere: --calibration SPLIT|DATASET_REF")
    return out


def calibration_words(calibration: dict | None) -> str:
    """One line on what calibrated and how it overlaps what validation judges."""
    if not calibration:
        return "none (dynamic quantisation: no calibration data)"
    text = f"{calibration['samples']} samples of {calibration['dataset']}, split {calibration['split']}"
    judged = calibration.get("evaluation")
    if not judged:
        return text + "; the model names no dataset for validation, so no overlap is measured"
    if "overlap" not in calibration:
        return text + f"; overlap with {judged['dataset']} not measured: {judged.get('unavailable')}"
    return (text + f"; overlap with the {judged['samples']} samples validation judges ({judged['dataset']}, split "
            f"{judged['split']}): {calibration['overlap']} of {calibration['samples']}")


def rows(record: dict) -> list[list[str]]:
    """The int8 report as FIELD/VALUE rows for `cr compile`'s table."""
    report = record.get("quantization")
    if not isinstance(report, dict):
        return []
    against = report.get("against")
    out = []
    if against:
        out.append(["int8 size", f"{report['bytes']} bytes vs {report['reference_bytes']} ({against}): "
                                 f"{_ratio(report.get('size_ratio'))}"])
        latency = report.get("latency") or {}
        if "error" in latency:
            out.append(["int8 latency", f"not measured: {latency['error']}"])
        elif latency:
            out.append(["int8 latency", f"{latency['int8_ms']:.3g} vs {latency['reference_ms']:.3g} ms per run: "
                                        f"{_ratio(latency.get('ratio'))} ({latency['method']}, {latency['backend']}, "
                                        f"batch {latency['batch']})"])
    for step in report.get("prepasses") or []:
        out.append(["pre-pass", f"{step['step']}: {step['status']}" + (f" ({step['reason']})" if step.get("reason") else "")])
    out.append(["calibration", calibration_words(report.get("calibration"))])
    return out


def provenance_calibration(result: dict) -> dict:
    """What calibration_dataset gains in provenance: the split and the overlap with evaluation."""
    calibration = (result.get("quantization") or {}).get("calibration") or {}
    keep = ("split", "chosen", "samples", "evaluation", "overlap")
    return {k: calibration[k] for k in keep if k in calibration}
