"""compile_model(): convert a model in the runtime child and add the output to the local repo.

The compile action's host hook (CompileHost, named by actions/compile/meta.json) around
cr.run.actions.run_action: compile runs on a model without a backend, and its record is
stored in the results store like any other.

    from cr.run.compile import compile_model
    record = compile_model("model:lenet-digits", "onnx", variant="state-dict",
                           params={"precision": "int8", "quantization": "static"})
    record["status"], record["output"]["ref"]          # "ok", "model:lenet-digits@1.0.0+onnx.int8.static"

What it settles before any child starts (each problem is a CRError naming it): the model
and its source variant (cr.runtime.variants.choose over the formats the conversion
reads, or ``variant``), the conversion (cr.runtime.actions.compile.plan), the parameters
(action:compile's defaults < the caller's, checked against its schema), the output
version, and that it is free in the local repo (``force`` replaces it), and the dataset
when the conversion calibrates on samples (``dataset``, else the model meta's).

The child writes the converted file into a temporary directory named in the job; the
component is then assembled beside its final place in the local repo (a hidden directory,
which searches skip) and renamed into place, so a failure leaves nothing behind.

The output component: same name; version = the source's + a PEP 440 local label saying
what was done (1.0.0+onnx, 1.0.0+onnx.opt, 1.0.0+onnx.int8.dynamic, 1.0.0+tflite.int8,
1.0.0+trt; a source that has a label keeps it: 1.0.0+onnx -> 1.0.0+onnx.int8.static);
meta = the source variant's effective meta with format, file, precision, inputs and
outputs of the output, a new uid, files with sha256, no variants/source/architecture,
and ``provenance`` {compiled_from {ref, uid, variant, format, file, sha256}, conversion,
steps, options, checks, tools, cr_version, created, [source_expected], [degraded],
[source_provenance]}.

Expected metrics carry over, so that cr validate on the output says PASS or FAIL: an fp32
or fp16 output keeps the source's ``expected`` as it is (its checks held it within atol of
the source); an int8 output from a float source gets the source's values with the abs
tolerance of each fraction metric (top1, top5, recall, precision, mean_iou) widened by
-O expected_margin (default 0.02: what int8 rounding typically costs a healthy model),
and keeps the source's own in provenance.source_expected.

A conversion whose checks against its source fall below their thresholds fails and adds
nothing, unless allow_degraded (see compile_model).
"""
from __future__ import annotations

import os
import platform
import secrets
import shutil
import sys
import time
from pathlib import Path

from ..errors import Conflict, CRError, InvalidMeta
from ..runtime import registry, variants
from ..runtime.actions import compile as conversions
from ..runtime.actions import convgraph
from ..runtime.job import Job
from ..results import record as records
from . import launch, quantreport
from .target import merged_params
from .hooks import ActionHost

ACTION = "action:compile"
FORMAT_TAGS = {"onnx", "tflite", "torchscript", "pytorch", "torch", "keras", "savedmodel", "tensorflow", "trt", "tensorrt",
               "trt-plan", "int8", "fp16", "fp32"}


def source_variant(model: dict, to: str, variant: str | None) -> dict:
    """The effective meta of the variant the conversion reads."""
    meta, reads = model["meta"], conversions.READS.get(to)
    chained = convgraph.reads(to)  # formats a chain of hops reaches `to` from (the single conversions first)
    reads = tuple(dict.fromkeys((*(reads or ()), *chained))) or None
    if reads is None:
        raise CRError(f"cannot compile to {to!r}; supported: {conversions.SUPPORTED}", hint="give --to onnx, tflite, savedmodel or trt-plan")
    if variant is not None:
        return variants.effective(meta, variant)  # plan() refuses its format when the conversion cannot read it
    try:
        return variants.choose(meta, reads, None, backend=f"compile --to {to}")
    except CRError:
        formats = sorted({variants.effective(meta, n).get("format") or "?" for n in variants.names(meta)}) or ["none"]
        reach = sorted({r for f in formats for r in convgraph.reachable(f)})
        raise CRError(
            f"no conversion path from {', '.join(formats)} to {to} for {model['ref']}; from {', '.join(formats)} cr compile "
            f"reaches: {', '.join(reach) or 'nothing'}",
            hint="choose one of those with --to, or add a variant in another format (docs/conversions.md)",
        ) from None


def _source_name(model: dict, source: dict) -> str:
    """model:x@1.0.0, or model:x@1.0.0 variant NAME when that is not named after its format."""
    return model["ref"] + (f" variant {source['variant']}" if source["variant"] != source.get("format") else "")


def output_version(source_version: str, label: list[str]) -> str:
    """source_version with the conversion's local label (a label the source has is kept in front)."""
    public, _, local = source_version.partition("+")
    parts = local.split(".") if local else []
    if parts and label and parts[0] == label[0]:
        label = label[1:]  # 1.0.0+onnx -> int8.dynamic, not onnx.onnx.int8.dynamic
    return public + "+" + ".".join(parts + label) if parts + label else public


def file_name(name: str, label: list[str], to: str) -> str:
    """The output file: NAME.EXT, with what the label says beyond the format (lenet.int8.static.onnx)."""
    return ".".join([name, *label[1:], conversions.EXTENSIONS[to]])


def _dataset(model_meta: dict, given: str | None, needed: bool, what: str):
    """The dataset component: required for calibration; otherwise (it only feeds the checks) None when absent."""
    from ..store.catalog import show

    ref = given or (model_meta.get("dataset") or {}).get("ref")
    if ref is None:
        if needed:
            raise CRError(f"{what} needs calibration samples, and the model names no dataset",
                          hint="give --dataset REF (a dataset whose samples the model's preprocess accepts)")
        return None
    try:
        ds = show(ref, verify=False)
    except CRError:
        if needed or given:
            raise
        return None
    if ds["kind"] != "dataset":
        raise CRError(f"{ds['ref']} is a {ds['kind']}, not a dataset", hint="give --dataset dataset:NAME")
    return ds


def compile_model(
    ref: str,
    to: str,
    variant: str | None = None,
    params: dict | None = None,
    version: str | None = None,
    output: str | Path | None = None,
    force: bool = False,
    python: str | None = None,
    env: dict | None = None,
    prefer_repo: str | None = None,
    install: bool = False,
    allow_degraded: bool = False,
) -> dict:
    """Run the compile action (run_action with CompileHost); returns the result record
    (record["output"] names the new component), stored in the results store like any
    other (NotStored, cr.run.actions, when the store does not take it).

    prefer_repo: the repository whose copy of the model comes first (a solution's own).
    python/env: where the conversion runs (a solution's lock); by default the lock of what
    it needs here (the model's deps, the source's and the output's frameworks, the
    conversion's tools: compile_requirements), made on the way; install=True installs
    what is missing, else one error names the command that does.

    params: precision, quantization, dataset, calibration (a split or a dataset ref:
    cr.run.quantreport), calibration_samples, options (the -O dict), seed, timeout_s,
    allow_degraded (see actions/compile/meta.json).

    A check of the output against its source below its threshold (fp32: max abs diff above
    -O atol; int8: top-1 agreement below -O min_top1_agreement) fails the compile: status
    "failed", record["failed_checks"] lists each {check, metric, value, threshold, option,
    samples, message, hint}, and nothing is added to the local repo. allow_degraded=True
    (or params allow_degraded) registers it anyway, tagged ``degraded``, with the failed
    checks in provenance.degraded, and a warning.
    """
    from .actions import run_action

    given = {**(params or {}), "to": to, "variant": variant, "allow_degraded": True if allow_degraded else None}
    return run_action("compile", ref, params=given, variant=variant, output=output, install=install,
                      extra={"version": version, "force": force, "python": python, "env": env, "prefer_repo": prefer_repo})


class CompileHost(ActionHost):
    """The compile action's host hook: a model without a backend; the output version, free
    in the local repo; the conversion's own lock; the converted file registered as a new
    version of the model (record["output"]), or nothing when the compile fails."""

    needs_backend = False

    def settle(self, run) -> None:
        from ..store.catalog import show
        from ..store.refs import parse_version
        from ..store.registry import ensure_local_repo
        from .target import Target

        extra = run.extra
        model = show(run.ref, verify=False, prefer_repo=extra.get("prefer_repo"))
        if model["kind"] != "model":
            raise CRError(f"cannot compile a {model['kind']} ({model['ref']})", hint="compile a model: cr compile model NAME --to onnx")
        params = merged_params(ACTION, run.info["meta"], {**run.given, "variant": run.variant})
        to = params["to"]
        source = source_variant(model, to, params.get("variant"))
        from ..store import trust

        if trust.runs_code(model, source):  # a state dict's net.py is imported to export it
            from ..store.catalog import open_index

            trust.check_components([model], f"compiling {model['ref']}", open_index)
        the_plan = conversions.plan(source.get("format"), to, params.get("precision"), params.get("quantization"),
                                    params.get("options"), _source_name(model, source))
        version = extra.get("version") or output_version(model["version"], the_plan["label"])
        parse_version(version)
        final_dir = ensure_local_repo().component_dir("model", model["name"], version)
        if final_dir.exists() and not extra.get("force"):
            raise Conflict(f"model:{model['name']}@{version} already exists in the local repo ({final_dir})",
                           hint="give --force to replace it, or --version to choose another version")
        what = f"{to} {the_plan['precision']}" + (f" ({the_plan['quantization']} quantisation)" if the_plan["quantization"] else "")
        given_ds = params.get("dataset") or run.dataset  # --calibration SPLIT|DATASET_REF: cr.run.quantreport
        given_ds = quantreport.calibration_ref(params.get("calibration"), given_ds) or given_ds
        ds = _dataset(model["meta"], given_ds, the_plan["needs_dataset"], what)
        split = quantreport.calibration_split(ds, params.get("calibration"), model["meta"])
        if the_plan["precision"] == "int8":  # what validation judges: calibration's overlap with it is measured
            run.state["evaluation"] = quantreport.evaluation(model["meta"])
        quantreport.check_trust([ds, (run.state.get("evaluation") or {}).get("ds")], f"compiling {model['ref']}")
        run.target = Target(model, model, source, None, {}, ds, split)
        run.params = params
        run.state.update(plan=the_plan, version=version, final_dir=final_dir, source=source)

    def where(self, run) -> tuple[None, dict | None, str]:
        """(None, env, interpreter): a solution's lock (python/env given), else the lock of
        what the conversion needs here (compile_requirements), made on the way; for a chain of
        2+ hops, one lock per hop (run.state["hop_envs"]: launch runs a child in each) and the
        first hop's is returned. The record's lock stays null (the compiled component's
        provenance names its tools, a chain's path each hop's environment)."""
        from ..runtime.model import locate, sha256

        python, env = run.extra.get("python"), run.extra.get("env")
        source, model, to = run.state["source"], run.target.model, run.params["to"]
        hops = run.state["plan"].get("path") or []
        if python is None and env is None and len(hops) > 1:  # a chain: each hop in the lock of what it needs
            run.state["hop_envs"] = _hop_envs(model["ref"], hops, run.state["plan"]["precision"], to, run.install)
            python, env = run.state["hop_envs"][0]["python"], run.state["hop_envs"][0]["env"]
        elif python is None and env is None:
            from ..resolve.compose import compose
            from .target import model_lock

            needs = compile_requirements(source.get("format"), to, run.state["plan"]["precision"])
            needs += tuple(run.state["plan"].get("software") or ())  # every hop's tools (a chain of hops)
            the_lock = model_lock(model["ref"], tuple(dict.fromkeys(needs)), f"compiling to {to}", run.install)
            if the_lock is not None:
                python, env = the_lock["interpreter"], compose(the_lock)
        search = [p for p in (env or {}).get("PYTHONPATH", "").split(os.pathsep) if p]  # the lock's prefixes
        located = locate(source, model["path"], model["ref"], search)  # fail before starting a child
        run.state["source_file"] = {"file": located["path"], "sha256": sha256(located["path"])}  # what the child reads
        # the model's own variant from the same conversion of the same file: the output is compared with it
        run.state["counterpart"] = _counterpart(model, source, run.state["source_file"], run.state["plan"], search)
        return None, env, python or sys.executable

    def launch(self, run, job, python: str, env: dict | None) -> tuple[dict, None]:
        """One child, or for a chain whose hops have their own locks (where) one child per hop:
        hop i's output stays in the work directory as hop i+1's input; the first child saves the
        source's outputs on the check inputs, the last compares the final output with them."""
        hop_envs = run.state.get("hop_envs")
        timeout = run.params.get("timeout_s")
        if not hop_envs:
            return launch.run_job(job, python=python, env=env, timeout=timeout, on_phase=run.on_phase)
        base, results, current, clock = dict(job.params or {}), [], None, time.monotonic()
        for index, hop_env in enumerate(hop_envs):
            job.params = {**base, "hop": {"index": index, "count": len(hop_envs), "input": current}}
            left = None if timeout is None else max(1.0, float(timeout) - (time.monotonic() - clock))
            result, _ = launch.run_job(job, python=hop_env["python"], env=hop_env["env"], timeout=left, on_phase=run.on_phase)
            for entry in result.get("path") or []:
                entry["environment"] = hop_env["environment"]
            results.append(result)
            if result.get("status") != "ok":
                break
            current = result.get("intermediate")
        job.params = base
        return _joined(results, hop_envs), None

    def config(self, run) -> dict:
        source, the_plan, ds = run.state["source"], run.state["plan"], run.target.dataset
        return {**run.params, "variant": source["variant"], "source_format": source.get("format"),
                "conversion": the_plan["conversion"], "options": the_plan["options"], "version": run.state["version"],
                "force": bool(run.extra.get("force")), "dataset": ds["ref"] if ds else None}

    def before_launch(self, run, job, record: dict) -> None:
        the_plan, params, ds = run.state["plan"], run.params, run.target.dataset
        record.update(output=None, conversion=the_plan["conversion"], checks=None, failed_checks=None, tools=None,
                      duration_s=None, quantization=None)
        run.state["clock"] = time.monotonic()
        run.state["out_dir"] = out_dir = str(launch.work_dir("compile"))  # CR_HOME/tmp/compile-<pid>-*: swept if cr is killed
        job.out_dir, job.out_file = out_dir, file_name(run.target.model["name"], the_plan["label"], params["to"])
        counterpart = run.state.get("counterpart")
        job.params = {**params, "precision": the_plan["precision"], "quantization": the_plan["quantization"],
                      "options": the_plan["options"], **({"counterpart": counterpart} if counterpart else {})}
        evaluation = run.state.get("evaluation")
        if evaluation:
            job.params["evaluation"] = Job.component(evaluation["ds"], split=evaluation["split"])
        # optional: without calibration it only feeds the checks, which fall back to synthetic inputs
        job.dataset = Job.component(ds, split=run.target.split, limit=int(params["calibration_samples"]),
                                    optional=not the_plan["needs_dataset"]) if ds is not None else None

    def after_child(self, run, record: dict, result: dict) -> None:
        the_plan, params = run.state["plan"], run.params
        record["output"] = None  # the child's file becomes the record's output once registered
        quantreport.attach(record, result, f"model:{run.target.model['name']}@{run.state['version']}")
        failed = list(result.get("failed_checks") or [])
        record["failed_checks"] = failed if record["status"] == "ok" else None
        if record["status"] == "ok" and failed and not params.get("allow_degraded"):
            record.update(status="failed", error=check_error(failed))
        record["path"] = result.get("path")
        if record["status"] != "ok":
            return
        model, ds = run.target.model, run.target.dataset
        try:
            record["output"] = _add_component(model, run.state["source"], result, run.state["version"], run.state["final_dir"],
                                              run.state["out_dir"], bool(run.extra.get("force")), run.state["source_file"],
                                              ds if the_plan["needs_dataset"] else None)
        except CRError as exc:
            record.update(status="failed", error={"kind": "error", "type": type(exc).__name__, "message": exc.message,
                                                  "hint": exc.hint})
        else:
            _say_counterpart(record)
            if failed:
                from ..events import reporter

                reporter().warning(f"{record['output']['ref']} is registered although it fails its check against its "
                                   f"source (--allow-degraded): {_check_words(failed)}")

    def cleanup(self, run, record: dict) -> None:
        if "out_dir" in run.state:
            shutil.rmtree(run.state["out_dir"], ignore_errors=True)
            record["duration_s"] = round(time.monotonic() - run.state["clock"], 3)


def _hop_envs(ref: str, hops: list[dict], precision: str, to: str, install: bool) -> list[dict]:
    """Per hop of a chain: {python, env, environment} of the lock of what that hop needs: its software
    and the frameworks that run its input and its output (its check runs both; compile_requirements).
    Tools of different hops need not coexist (onnx2tf pins its own onnx and tf-keras)."""
    from ..resolve.compose import compose
    from .target import model_lock

    found = []
    for index, hop in enumerate(hops):
        last = index == len(hops) - 1
        needs = compile_requirements(hop["from"], hop["to"], precision if last else "fp32") + tuple(hop.get("software") or ())
        the_lock = model_lock(ref, tuple(dict.fromkeys(needs)), f"compiling to {to} (hop {hop['hop']})", install)
        if the_lock is None:  # no recipe offers it here: cr's own interpreter, where the tool says what is missing
            found.append({"python": sys.executable, "env": None,
                          "environment": {"lock": None, "python": platform.python_version(), "requires": list(needs), "software": []}})
            continue
        software = [f"{s['name']}=={s['version']}" for s in the_lock.get("software") or []]
        found.append({"python": the_lock["interpreter"], "env": compose(the_lock),
                      "environment": {"lock": Path(the_lock["path"]).stem if the_lock.get("path") else None,
                                      # the Python version, not the interpreter's path: provenance travels in archives
                                      "python": (the_lock.get("platform") or {}).get("python"), "requires": the_lock.get("requires"),
                                      "software": software}})
    return found


def _joined(results: list[dict], hop_envs: list[dict]) -> dict:
    """The result of a chain run hop by hop: the last child's (its output, the end-to-end check, the
    int8 report), every child's path entries, checks, tools and failed checks; a failed child's error."""
    out = dict(results[-1])
    out["path"] = [entry for r in results for entry in r.get("path") or []]
    checks, tools, options, failed = {}, {}, {}, []
    for r in results:
        checks.update(r.get("checks") or {})
        tools.update({k: v for k, v in (r.get("tools") or {}).items() if v is not None})
        options.update({k: v for k, v in (r.get("options") or {}).items() if v is not None or k not in options})
        failed += r.get("failed_checks") or []
    out.update(checks=checks or None, tools=tools or None, options=options or None, failed_checks=failed)
    out.pop("intermediate", None)
    return out


def _counterpart(model: dict, source: dict, source_file: dict, the_plan: dict, search: list[str]) -> dict | None:
    """{variant, file, sha256} of the variant the model already has from the same conversion of the
    same source file (its provenance says so): the compiled output is compared with it. None when
    the model has none, or its file is not here."""
    from ..runtime.model import locate, sha256

    for name in variants.names(model["meta"]):
        meta = variants.effective(model["meta"], name)
        made = meta.get("provenance") or {}
        origin = made.get("compiled_from") or {}
        if name == source["variant"] or made.get("conversion") != the_plan["conversion"]:
            continue
        if origin.get("sha256") != source_file["sha256"] or (meta.get("precision") or "fp32") != the_plan["precision"]:
            continue
        try:
            path = locate(meta, model["path"], model["ref"], search)["path"]
        except CRError:
            return None
        return {"variant": name, "file": path, "sha256": sha256(path)}
    return None


def _say_counterpart(record: dict) -> None:
    """A warning when the output's outputs differ from the model's own variant of the same conversion."""
    check = (record.get("checks") or {}).get("counterpart")
    if not isinstance(check, dict) or check.get("passed") is not False:
        return
    from ..events import reporter

    metric = (f"max abs diff {check.get('max_abs_diff'):.3g} above atol {check.get('atol'):g}" if "atol" in check
              else f"top-1 agreement {check.get('top1_agreement')}")
    reporter().warning(f"{record['output']['ref']} does not reproduce the model's variant {check['variant']} made by the same "
                       f"conversion: {metric} on the check inputs (its tools: {record.get('tools')}); compare the "
                       "converter versions in both provenances")


def built_on() -> dict:
    """This machine, as far as it decides a converter's bytes: arch, CPU model and the vector
    instruction sets the kernels choose between (the conversion ran here)."""
    from ..platform import current

    platform = current().to_dict()
    cpu = platform.get("cpu") or {}
    isa = sorted(f for f in cpu.get("flags") or [] if isinstance(f, str) and f.startswith(("avx", "amx", "fma", "sse4", "asimd", "neon", "sve")))
    return {"arch": platform.get("arch"), "cpu": cpu.get("model"), "isa": isa}


def _check_words(failed: list[dict]) -> str:
    return "; ".join(f"{f['message']} (check {f['check']}.{f['metric']})" for f in failed)


def check_error(failed: list[dict]) -> dict:
    """The record's error for checks below their thresholds: one line naming each check, its
    value and its threshold (the option that sets it); the hint says how to do better or to
    register the output anyway."""
    first = failed[0]
    return {"kind": "check", "type": "CheckFailed", "message": _check_words(failed),
            "hint": f"{first['hint']}; lower -O {first['option']} if this is expected, or give --allow-degraded to register "
                    "the output anyway (its provenance records the failed check)",
            "checks": failed}


def _add_component(model: dict, source: dict, result: dict, version: str, final_dir: Path, out_dir: str,
                   force: bool, source_file: dict, ds: dict | None) -> dict:
    from ..__about__ import __version__
    from ..store.catalog import open_index
    from ..fsutil import atomic_write_bytes, json_bytes, sha256_file
    from ..store.meta import validate

    produced = result["output"]
    staging = final_dir.parent / f".compile-{secrets.token_hex(4)}"
    staging.mkdir(parents=True)
    try:
        if produced.get("dir"):  # a SavedModel directory: every file in it is listed
            shutil.copytree(os.path.join(out_dir, produced["dir"]), staging / produced["dir"])
            files = {p.relative_to(staging).as_posix(): sha256_file(p)
                     for p in sorted((staging / produced["dir"]).rglob("*")) if p.is_file()}
        else:
            shutil.copyfile(os.path.join(out_dir, produced["file"]), staging / produced["file"])
            files = {produced["file"]: sha256_file(staging / produced["file"])}
        if files[produced["file"]] != produced["sha256"]:
            raise CRError(f"the compiled file changed on its way into the repo ({produced['file']})", hint="run the compile again")
        labels = source.get("labels")
        if isinstance(labels, str):  # a labels file travels with the model
            src = Path(model["path"]) / labels
            (staging / labels).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, staging / labels)
            files[labels] = sha256_file(staging / labels)
        meta = output_meta(model, source, result, version, files, source_file, ds, __version__)
        problems = validate(meta, kind="model")
        if problems:
            raise InvalidMeta(f"the compiled model's meta is invalid: {problems[0]}", hint="this is a bug in cr compile; please report it")
        atomic_write_bytes(staging / "meta.json", json_bytes(meta), durable=True)
        old = None
        if final_dir.exists():
            if not force:
                raise Conflict(f"model:{model['name']}@{version} already exists in the local repo ({final_dir})",
                               hint="give --force to replace it")
            old = final_dir.parent / f".replaced-{secrets.token_hex(4)}"
            os.replace(final_dir, old)
        try:
            os.replace(staging, final_dir)
        except OSError as exc:  # another compile put it there meanwhile
            if old is not None:
                try:
                    os.replace(old, final_dir)
                except OSError:
                    pass
            raise Conflict(f"cannot place model:{model['name']}@{version} at {final_dir}: {exc.strerror or exc}",
                           hint="another compile may have written that version meanwhile; run again (with --force to replace it)") from None
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    open_index(kind="model", name=model["name"]).close()  # index the new component now
    return {"ref": f"model:{model['name']}@{version}", "uid": meta["uid"], "version": version, "path": str(final_dir),
            "format": meta["format"], "precision": meta["precision"], "file": produced["file"], "files": files}


def compile_requirements(source_format: str | None, to: str, precision: str | None = None) -> tuple[str, ...]:
    """The software a conversion from source_format to `to` needs: the runtime's numpy, the
    framework that reads the source and the one that runs the output (the checks run it:
    the backends that declare those formats), and the converters (the onnx package for an
    ONNX output or an ONNX quantisation; onnxscript for torch's exporter; sympy for an int8
    ONNX output: onnxruntime's quant_pre_process needs it for symbolic shape inference)."""
    needs = list(registry.RUNTIME_REQUIRES)
    for fmt in (source_format, to):
        entry = registry.native_backend(fmt) if fmt else None
        if entry is None and fmt:
            entry = next((registry.find(n) for n in registry.available()
                          if fmt in (getattr(_backend_class(n), "FORMATS", None) or ())), None)
        if entry is not None:
            needs += registry.requirements(entry)
    if to == "onnx":
        needs.append("software:onnx")
        if source_format in conversions.TORCH:
            needs.append("software:onnxscript")
        if source_format == "tf-frozen-graph":
            needs.append("software:tf2onnx")
        if precision == "int8":
            needs.append("software:sympy")
    return tuple(dict.fromkeys(needs))


def _backend_class(name: str):
    try:
        return registry.load_class(registry.find(name))
    except CRError:
        return None


def _runs_on(fmt: str) -> list[str]:
    """What a model in fmt needs to run: the REQUIRES of the backend whose native format it is."""
    entry = registry.native_backend(fmt)
    return list(registry.requirements(entry)) if entry is not None else []


def _frameworks() -> set[str]:
    """Software a compiled model does not inherit from its source: every backend's framework
    (the output declares its own) and the tools conversions import."""
    names = set(conversions.TOOLS)
    for name in registry.available():
        try:
            names.update(_dep_name(r) for r in registry.requirements(registry.find(name)))
        except CRError:
            continue
    return names


def output_meta(model: dict, source: dict, result: dict, version: str, files: dict, source_file: dict,
                ds: dict | None, cr_version: str) -> dict:
    """The meta of the compiled component (see the module docstring)."""
    produced = result["output"]
    to, precision = produced["format"], produced["precision"]
    dropped = {"uid", "kind", "name", "version", "tags", "description", "variants", "variant", "source", "file", "files",
               "architecture", "format", "precision", "inputs", "outputs", "expected", "provenance", "deps"}
    tags = [t for t in source.get("tags") or [] if t not in FORMAT_TAGS]
    tags += [{"trt-plan": "tensorrt"}.get(to, to)] + ([precision] if precision != "fp32" else []) + ["compiled"]
    runs_on = _runs_on(to)
    built_with = (result.get("tools") or {}).get("tensorrt")
    if to == "trt-plan" and built_with:  # a plan runs only on the TensorRT version that built it
        runs_on = [f"software:tensorrt@=={built_with}"]
    deps = [d for d in source.get("deps") or [] if _dep_name(d) not in _frameworks()] + runs_on
    description = (model["meta"].get("description") or model["name"]).rstrip()
    meta = {
        "uid": secrets.token_hex(8),
        "kind": "model",
        "name": model["name"],
        "version": version,
        "tags": list(dict.fromkeys(tags)),
        "description": f"{description} [compiled by cr compile from {_source_name(model, source)} ({source.get('format')}) "
                       f"to {to} {precision}]",
        **({"license": source["license"]} if "license" in source else {}),
        **({"task": source["task"]} if source.get("task") else {}),
        "format": to,
        "file": produced["file"],
        "precision": precision,
    }
    for key in ("inputs", "outputs"):
        if produced.get(key) is not None:
            meta[key] = produced[key]
    meta.update({k: v for k, v in source.items() if k not in dropped and k not in meta})
    provenance = {
        "compiled_from": {"ref": model["ref"], "uid": model["uid"], "variant": source["variant"], "format": source.get("format"),
                          "precision": source.get("precision"), "file": os.path.basename(source_file["file"]),
                          "sha256": source_file["sha256"]},
        "conversion": result.get("conversion"),
        "path": result.get("path"),
        "steps": result.get("steps"),
        "options": result.get("options"),
        "checks": result.get("checks"),
        "tools": result.get("tools"),
        "built_on": built_on(),
        "cr_version": cr_version,
        "created": records.now(),
    }
    if ds is not None:
        provenance["calibration_dataset"] = {"ref": ds["ref"], "uid": ds["uid"], **quantreport.provenance_calibration(result)}
    if result.get("quantization"):
        provenance["quantization"] = result["quantization"]
    if source.get("expected"):
        margin = float((result.get("options") or {}).get("expected_margin") or 0.0)
        if precision == "int8" and (source.get("precision") or "fp32") == "int8":
            margin = 0.0  # an int8 source's expected metrics already describe an int8 model
        meta["expected"] = carried_expected(source["expected"], margin)
        if precision == "int8" or meta["expected"] != source["expected"]:
            provenance["source_expected"] = source["expected"]
            provenance["expected_margin"] = margin
    failed = result.get("failed_checks") or []
    if failed:  # registered with --allow-degraded
        provenance["degraded"] = [{k: v for k, v in f.items() if k != "hint"} for f in failed]
        meta["tags"] = list(dict.fromkeys(meta["tags"] + ["degraded"]))
    if source.get("provenance"):
        provenance["source_provenance"] = source["provenance"]
    meta["provenance"] = provenance
    meta["deps"] = list(dict.fromkeys(deps))
    meta["files"] = files
    return meta


# expected metrics measured as a share (0..1): an int8 output's tolerance on them widens by the margin
FRACTION_METRICS = ("top1", "top5", "recall", "precision", "mean_iou", "ap", "ap50", "ap75", "coco_recall")


def carried_expected(expected: dict, margin: float) -> dict:
    """The source's expected metrics for a compiled output: the same values, the abs tolerance of
    each fraction metric widened by margin (0: unchanged); other metrics (a count) keep theirs."""
    if not margin:
        return expected
    out = {}
    for metric, tolerance in expected.items():
        if metric in FRACTION_METRICS and isinstance(tolerance, dict) and "value" in tolerance:
            tolerance = {**tolerance, "abs": round(float(tolerance.get("abs") or 0.0) + margin, 10)}
        out[metric] = tolerance
    return out


def _dep_name(dep) -> str:
    text = dep.get("ref", "") if isinstance(dep, dict) else str(dep)
    return text.split(";")[0].split(":", 1)[-1].split("@")[0].strip()
