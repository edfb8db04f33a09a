"""Solutions: create one, make it ready on this machine, run what it declares, reproduce it.

    create("my-digits", model="model:lenet-digits@1.0.0", backend="tflite")   # local repo
    report = init("solution:lenet-digits-onnxruntime")   # verify, resolve, install, compile, lock
    records = run_declared("solution:lenet-digits-onnxruntime")   # benchmark + validate, stored
    report = reproduce("lenet-digits-onnxruntime-1.0.0.cr.zip")   # init + run + compare

A solution meta (DESIGN.md "Solution", a contract) composes ``model``, ``dataset``,
``backend`` and ``backend_options``, ``pipeline`` ({"variant": NAME} to run one variant of
the model, {"compile": {"to": "onnx", ...}} for a conversion init performs), ``actions``
([{"action": "benchmark" | "validate" | "run", "params": {...}}]), ``platform``
({"marker": PEP 508, "requires": [capabilities]}), ``expected`` (metrics with
tolerances, over the model's) and ``deps`` (software requirements).

Nothing here imports numpy or a framework: actions run in the runtime child, inside the
solution's lock.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from .errors import CRError, NotFound
from .events import reporter

RUNNABLE = ("benchmark", "validate", "run")


# ------------------------------------------------------------------------------- create

def create(name: str, model: str, backend: str, dataset: str | None = None, variant: str | None = None,
           backend_options: dict | None = None, version: str = "1.0.0", repo: str | None = None,
           description: str = "", scenario: str = "single-stream", tags: list[str] | None = None) -> dict:
    """A new solution component in the local repo (or repo): model + dataset + backend + actions."""
    from . import api
    from .fsutil import atomic_write_json
    from .runtime import registry

    target = api.show(model, verify=False)
    if target["kind"] != "model":
        raise CRError(f"--model {model} is a {target['kind']}", hint="give a model ref, e.g. model:lenet-digits@1.0.0")
    registry.find(backend)  # unknown backend: fails here, naming the available ones
    meta_model = target["meta"]
    ds = dataset or (meta_model.get("dataset") or {}).get("ref")
    if ds:
        info = api.show(ds, verify=False)
        if info["kind"] != "dataset":
            raise CRError(f"--dataset {ds} is a {info['kind']}", hint="give a dataset ref")
        ds = info["ref"]
    comp = api.new("solution", name, version=version, tags=tags or [backend, meta_model.get("task") or "model"],
                   repo=repo, description=description or f"{target['ref']} on {backend}")
    meta = json.loads(Path(comp.meta_path).read_text(encoding="utf-8"))
    meta.update({
        "model": target["ref"],
        **({"dataset": ds} if ds else {}),
        "backend": backend,
        **({"backend_options": backend_options} if backend_options else {}),
        **({"pipeline": {"variant": variant}} if variant else {}),
        "actions": [{"action": "benchmark", "params": {"scenario": scenario}}, {"action": "validate", "params": {}}],
        "deps": _backend_deps(backend) + list(meta_model.get("deps") or []),
    })
    problems = api.validate(meta, kind="solution")
    if problems:
        raise CRError(f"cannot create solution:{name}: {problems[0]}")
    atomic_write_json(Path(comp.meta_path), meta, durable=True)
    return api.show(f"solution:{name}@{version}", verify=False)


_BACKEND_SOFTWARE = {
    "onnxruntime": ["software:onnxruntime@>=1.17"], "torch": ["software:torch@>=2.0"],
    "tflite": ["software:ai-edge-litert"], "tensorflow": ["software:tensorflow-cpu"],
    "tensorrt": ["software:tensorrt"], "null": [],
}


def _backend_deps(backend: str) -> list[str]:
    return ["software:numpy@>=1.23"] + _BACKEND_SOFTWARE.get(backend, [])


# --------------------------------------------------------------------------------- init

def locate(source: str) -> tuple[str, dict | None]:
    """(solution ref, archive info or None) for a name, a ref, an archive file or a git URL."""
    from . import api

    path = Path(source)
    if source.endswith(".zip") or path.is_file():
        if not path.is_file():
            raise NotFound(f"archive {source} does not exist", hint="give the path of a .cr.zip made by cr pack")
        from .archive import unpack

        info = unpack(path)
        return info["solution"], info
    if "://" in source or source.startswith("git@") or source.endswith(".git"):
        repo = api.repo_pull(source)
        sols = [c for c in api.find("solution") if c.repo == repo.name]
        if len(sols) != 1:
            names = ", ".join(c.ref for c in sols) or "none"
            raise CRError(f"the repository {source} holds {len(sols)} solutions ({names})",
                          hint="it is registered now: cr init solution NAME picks one")
        return sols[0].ref, None
    return (source if ":" in source else f"solution:{source}"), None


def check_platform(meta: dict, ref: str) -> None:
    """CRError when the solution's platform constraints do not hold on this machine."""
    from .platform import current
    from .software.recipe import marker_holds

    constraint = meta.get("platform") or {}
    if not constraint:
        return
    here = current()
    if not marker_holds(constraint.get("marker"), here.markers()):
        raise CRError(f"{ref} does not run on this machine: its platform marker {constraint['marker']!r} is false here",
                      hint=f"this machine: {here.markers().get('platform_machine')} {here.markers().get('sys_platform')}; "
                           "cr platform shows what it has")
    have = here.capabilities()
    lacking = [c for c in constraint.get("requires") or [] if c not in have]
    if lacking:
        raise CRError(f"{ref} needs {', '.join(lacking)}, which this machine does not have",
                      hint=f"this machine has: {', '.join(sorted(have)) or 'no accelerator capabilities'}; cr platform shows them")


def _verify(ref: str) -> list[str]:
    """Every component the solution uses, with its files' sha256 verified."""
    from . import api

    sol = api.show(ref, verify=True)
    checked = [sol]
    for key in ("model", "dataset"):
        if sol["meta"].get(key):
            try:
                checked.append(api.show(sol["meta"][key], verify=True))
            except NotFound as exc:
                raise NotFound(f"{sol['ref']} uses {sol['meta'][key]}, which is not here: {exc.message}", hint=exc.hint) from None
    for info in checked:
        bad = [f for f in info.get("files") or [] if f["status"] != "ok"]
        if bad:
            raise CRError(f"{info['ref']}: file {bad[0]['path']} is {bad[0]['status']} (sha256 does not match its meta)",
                          hint="the component was changed or damaged; restore it (cr repo update, or unpack the archive again)")
    return [c["ref"] for c in checked]


def compiled_ref(meta: dict) -> str | None:
    """The model ref the solution's declared compile produces (None when it declares none)."""
    spec = (meta.get("pipeline") or {}).get("compile")
    if not spec:
        return None
    from . import api
    from .runtime.actions.compile import plan
    from .runtime.host.compile import _source_variant, output_version

    model = api.show(meta["model"], verify=False)
    source = _source_variant(model, spec["to"], spec.get("variant"))
    the_plan = plan(source.get("format"), spec["to"], spec.get("precision"), spec.get("quantization"), spec.get("options"), model["ref"])
    return f"model:{model['name']}@{spec.get('version') or output_version(model['version'], the_plan['label'])}"


def init(source: str, offline: bool = False) -> dict:
    """Make a solution ready here: verify, check the platform, resolve, install, compile, lock.

    Idempotent: when everything is present it only reads (the cached lock, the index).
    """
    from . import api

    started = time.perf_counter()
    ref, archive = locate(source)
    sol = api.show(ref, verify=False)
    if sol["kind"] != "solution":
        raise CRError(f"{sol['ref']} is a {sol['kind']}, not a solution", hint="cr find solution lists them")
    ref = sol["ref"]
    check_platform(sol["meta"], ref)
    verified = _verify(ref)
    result = api.install_missing(ref, offline=offline)
    the_lock = result["lock"]
    compiled = None
    target = compiled_ref(sol["meta"])
    if target is not None:
        try:
            api.show(target, verify=False)
            compiled = {"ref": target, "created": False}
        except NotFound:
            compiled = {"ref": target, "created": True, "record": _compile(sol["meta"], the_lock)}
    return {
        "solution": ref,
        "archive": archive,
        "verified": verified,
        "software": [{"name": s["name"], "version": s["version"], "origin": s["origin"],
                      "installed_now": s["name"] in {e["name"] for e in result["installed"]}} for s in the_lock["software"]],
        "installed": [e["name"] for e in result["installed"]],
        "compiled": compiled,
        "lock": the_lock.get("path"),
        "seconds": round(time.perf_counter() - started, 3),
    }


def _compile(meta: dict, the_lock: dict) -> dict:
    from .resolve.compose import compose
    from .runtime.host.compile import compile_model

    spec = dict(meta["pipeline"]["compile"])
    reporter().info(f"compiling {meta['model']} to {spec['to']} (declared by the solution)")
    record = compile_model(meta["model"], spec.pop("to"), variant=spec.pop("variant", None), version=spec.pop("version", None),
                           params=spec, python=the_lock["interpreter"], env=compose(the_lock))
    if record["status"] != "ok":
        error = record.get("error") or {}
        raise CRError(f"the compile the solution declares failed: {error.get('message')}", hint=error.get("hint"))
    return {"uid": record["uid"], "output": record["output"]}


# ------------------------------------------------------------------------ run declared

def declared(meta: dict, only: str | None = None) -> list[dict]:
    """The solution's actions to run (only: one action name); validate/run default to one plain run."""
    acts = [a for a in meta.get("actions") or [] if a.get("action") in RUNNABLE and (only is None or a["action"] == only)]
    if not acts and only in ("validate", "run"):
        acts = [{"action": only, "params": {}}]
    if not acts:
        raise CRError(f"the solution declares no {only or 'runnable'} action", hint='add {"action": "benchmark"} to its "actions"')
    return acts


def run_declared(ref: str, only: str | None = None, overrides: dict | None = None, store: bool = True,
                 output_dir: str | Path | None = None, **kw) -> list[dict]:
    """Run the solution's declared actions (or only one kind) inside its lock; store each result.

    overrides: {action name: params} laid over that action's declared params (the command
    line's options); kw: run_action's backend/variant/dataset/split/backend_options.
    """
    from . import api
    from .runtime.host.actions import run_action

    sol = api.show(ref, verify=False)
    if sol["kind"] != "solution":
        raise CRError(f"{sol['ref']} is a {sol['kind']}, not a solution")
    check_platform(sol["meta"], sol["ref"])
    the_lock = api.lock(sol["ref"])
    if the_lock.get("missing"):
        raise CRError(f"{sol['ref']} needs software that is not installed here: {', '.join(the_lock['missing'])}",
                      hint=f"install it first: cr init solution {sol['name']} (or cr install software {the_lock['missing'][0]})")
    model_ref = compiled_ref(sol["meta"])
    records = []
    for i, act in enumerate(declared(sol["meta"], only)):
        out = Path(output_dir) / f"{act['action']}-{i}.json" if output_dir else None
        given = (overrides or {}).get(act["action"]) or {}
        # the lock resolved above: each action runs in it without resolving again
        record = run_action(act["action"], sol["ref"], params={**(act.get("params") or {}), **given},
                            layered=False, model_ref=model_ref, lock=the_lock["path"], output=out, **kw)
        if store:
            from .results.store import default_store

            try:
                default_store().add(record)
            except CRError as exc:  # the run happened: say it was not kept, go on
                reporter().warning(f"the {act['action']} result was not stored: {exc.message}")
        records.append(record)
    return records


def stored_references(ref: str) -> tuple[list[str], dict | None]:
    """(result files, lock) to pack as a solution's reference: the newest successful result
    of each declared action (and scenario) on this machine, and the lock they ran in."""
    from . import api
    from .platform import current
    from .results.store import default_store

    sol = api.show(ref, verify=False)
    rows = default_store().list(solution=sol["ref"], status="ok", platform=current().fingerprint)
    chosen, seen = [], set()
    for row in rows:  # newest first
        key = (row.get("action"), row.get("scenario"))
        if key not in seen:
            seen.add(key)
            chosen.append(row["file"])
    the_lock = None
    for path in chosen:
        the_lock = json.loads(Path(path).read_text(encoding="utf-8")).get("lock") or the_lock
        if the_lock:
            break
    return chosen, the_lock


# --------------------------------------------------------------------------- reproduce

def _metric(record: dict, name: str):
    v = record.get("validation") or {}
    return v.get(name)


def _step_diff(theirs: list, ours: list, stage: str) -> list[str]:
    out = []
    for i in range(max(len(theirs), len(ours))):
        a = theirs[i] if i < len(theirs) else None
        b = ours[i] if i < len(ours) else None
        if a != b:
            op = (b or a or {}).get("op", "?")
            out.append(f"{stage} step {i} ({op}) differs: reference {json.dumps(a, sort_keys=True)}, here {json.dumps(b, sort_keys=True)}")
    return out


def _software_diff(theirs: dict | None, ours: dict | None) -> list[str]:
    a = {s["name"]: s["version"] for s in (theirs or {}).get("software") or []}
    b = {s["name"]: s["version"] for s in (ours or {}).get("software") or []}
    return [f"{n} {a[n]} (reference) vs {b[n]} (here)" for n in sorted(a) if n in b and a[n] != b[n] and n != "python"]


def compare(reference: list[dict], here: list[dict], expected: dict) -> dict:
    """The reproduction report: what must match (accuracy) and what is shown (performance)."""
    checks, performance, causes = [], [], []
    for ref_rec in reference:
        if ref_rec.get("status") != "ok":
            continue
        ours = next((r for r in here if r["action"] == ref_rec["action"] and r.get("status") == "ok"
                     and (r.get("config") or {}).get("scenario") == (ref_rec.get("config") or {}).get("scenario")), None)
        if ref_rec["action"] == "validate":
            if ours is None:
                checks.append({"metric": "validate", "ok": False, "detail": "no successful validate run here"})
                continue
            names = [n for n in ("top1", "top5", "recall", "precision", "mean_iou", "detections") if _metric(ref_rec, n) is not None]
            for n in names:
                want, got = float(_metric(ref_rec, n)), _metric(ours, n)
                tol = expected.get(n) or {}
                allowed = max(float(tol.get("abs", 0.0)), float(tol.get("rel", 0.0)) * abs(want), 1e-9)
                ok = got is not None and abs(float(got) - want) <= allowed
                checks.append({"metric": n, "reference": want, "here": got, "allowed": allowed, "ok": ok})
            rp, op = ref_rec.get("pipeline") or {}, ours.get("pipeline") or {}
            if rp.get("sha256") and rp.get("sha256") != op.get("sha256"):
                causes += _step_diff(rp.get("preprocess") or [], op.get("preprocess") or [], "preprocess")
                causes += _step_diff(rp.get("postprocess") or [], op.get("postprocess") or [], "postprocess")
            if (ref_rec.get("model_file") or {}).get("sha256") != (ours.get("model_file") or {}).get("sha256"):
                causes.append("the model file differs (sha256) from the reference's")
            if rp.get("variant") != op.get("variant"):
                causes.append(f"model variant {rp.get('variant')} (reference) vs {op.get('variant')} (here)")
            diff = _software_diff(ref_rec.get("lock"), ours.get("lock"))
            if diff:
                causes.append("software versions differ: " + "; ".join(diff))
        elif ref_rec["action"] == "benchmark" and ref_rec.get("metrics"):
            m0, m1 = ref_rec["metrics"], (ours or {}).get("metrics") or {}
            row = {"scenario": m0.get("scenario")}
            for key, path in (("p50_ns", ("latency_ns", "p50")), ("p99_ns", ("latency_ns", "p99")),
                              ("queries_per_s", ("throughput", "queries_per_s"))):
                a, b = (m0.get(path[0]) or {}).get(path[1]), (m1.get(path[0]) or {}).get(path[1])
                row[key] = {"reference": a, "here": b, "ratio": (b / a) if a and b else None}
            performance.append(row)
    failed = [c for c in checks if not c["ok"]]
    outcome = "PASS" if checks and not failed else ("FAIL" if failed else "NO-REFERENCE")
    return {"outcome": outcome, "checks": checks, "likely_causes": causes if failed else [], "performance": performance}


def _describe(platform: dict | None) -> str:
    p = platform or {}
    cpu = (p.get("cpu") or {}).get("model") or "?"
    accel = ", ".join(a.get("name", "?") for a in p.get("accelerators") or []) or "no accelerator"
    board = p.get("board") or ""
    return f"{p.get('os', '?')} {p.get('arch', '?')}, {cpu}{', ' + board if board else ''}, {accel}"


def reproduce(source: str, offline: bool = False, output_dir: str | Path | None = None) -> dict:
    """init + the declared actions + a comparison with the reference results."""
    from . import api

    ready = init(source, offline=offline)
    ref = ready["solution"]
    sol = api.show(ref, verify=False)
    reference = _reference_results(ready.get("archive"), ref)
    here = run_declared(ref, output_dir=output_dir)
    model = api.show(sol["meta"]["model"], verify=False)
    expected = {**(model["meta"].get("expected") or {}), **(sol["meta"].get("expected") or {})}
    report = compare(reference, here, expected)
    if not reference:  # no reference results: judge accuracy against the declared expectations
        report = _against_expected(here, expected)
    report.update({
        "solution": ref, "init": ready, "results": [r["uid"] for r in here],
        "reference_results": [r.get("uid") for r in reference],
        "platforms": {"reference": _describe((reference[0] if reference else {}).get("platform")) if reference else None,
                      "here": _describe(here[0].get("platform") if here else None)},
        "failed_runs": [{"action": r["action"], "error": (r.get("error") or {}).get("message")} for r in here if r["status"] != "ok"],
    })
    if report["failed_runs"]:
        report["outcome"] = "FAIL"
    return report


def _against_expected(here: list[dict], expected: dict) -> dict:
    checks = []
    for r in here:
        for c in (r.get("validation") or {}).get("checks") or []:
            if c.get("expected") is not None:
                checks.append({"metric": c["metric"], "reference": c["expected"], "here": c["value"], "allowed": c["allowed"], "ok": c["ok"]})
    failed = [c for c in checks if not c["ok"]]
    perf = [{"scenario": r["metrics"]["scenario"], "p50_ns": {"reference": None, "here": r["metrics"]["latency_ns"]["p50"], "ratio": None}}
            for r in here if r["action"] == "benchmark" and r.get("metrics")]
    return {"outcome": "FAIL" if failed else ("PASS" if checks else "NO-REFERENCE"), "checks": checks,
            "likely_causes": [], "performance": perf}


def _reference_results(archive: dict | None, ref: str) -> list[dict]:
    """The reference results an archive carries (newest first per action)."""
    if not archive:
        return []
    folder = Path(archive["target"]) / "results"
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            out.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            reporter().warning(f"skipped reference result {path}: {exc}")
    return out
