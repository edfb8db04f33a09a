"""A model at a precision a backend runs: an existing variant, else one `cr compile` makes (once).

    v = variant_for("model:lenet-digits@1.0.0", "onnxruntime", "int8-dynamic")
    str(v)        # "onnx": the variant's name, in ...
    v.model_ref   # "model:lenet-digits@1.0.0+onnx.int8.dynamic": the version that holds it
    v.compiled    # True when this call compiled it (a second call finds the version: False)

Precisions: fp32, fp16, int8 (any int8), int8-dynamic, int8-static. An existing variant
matches when the backend loads its format and its precision is the one asked for (for
int8-dynamic/-static also its quantisation, read from the variant's "quantization" or its
compile provenance; a variant that does not say how it was quantised matches plain int8
only). Versions are searched in order: the model's own version, then the versions cr
compile made from it (1.0.0+onnx.int8.dynamic, ...). Without one, a conversion `cr
compile` knows (cr.runtime.actions.compile.plan: onnx -> int8 onnx, keras -> tflite, onnx
-> TensorRT fp16, ...) into a format the backend loads makes it, as a new version of the
model in the local repo (docs/compile.md): that version is the cache, so the next call
compiles nothing. A precision no conversion can make for that backend is one CRError
naming the model's variants and what cr compile converts.

Nothing here imports a framework: the conversion runs in its own child (cr.run.compile).
"""
from __future__ import annotations

from ..errors import CRError, NotFound
from ..runtime import registry, variants

PRECISIONS = ("fp32", "fp16", "int8", "int8-dynamic", "int8-static")
# the formats cr compile writes (`--to`), in the order tried when a backend loads several
_TARGETS = ("onnx", "tflite", "trt-plan")


class Variant(str):
    """A variant's name (the str) with the model version that holds it."""

    model_ref: str
    precision: str
    compiled: bool

    def __new__(cls, name: str, model_ref: str, precision: str, compiled: bool = False):
        obj = super().__new__(cls, name)
        obj.model_ref, obj.precision, obj.compiled = model_ref, precision, compiled
        return obj


def split(precision: str) -> tuple[str, str | None]:
    """("int8", "dynamic") for int8-dynamic; CRError naming the known precisions for anything else."""
    if precision not in PRECISIONS:
        raise CRError(f"unknown precision {precision!r}", hint=f"use one of {', '.join(PRECISIONS)}")
    base, _, mode = precision.partition("-")
    return base, mode or None


def _quantization(meta: dict) -> str | None:
    if meta.get("quantization") in ("dynamic", "static"):
        return meta["quantization"]
    conversion = str(((meta.get("provenance") or {}).get("conversion")) or "")
    for mode in ("dynamic", "static"):
        if f"-{mode}" in conversion:
            return mode
    return None


def matches(meta: dict, precision: str) -> bool:
    """Whether an effective variant meta is of precision (fp32, int8, int8-dynamic, ...)."""
    base, mode = split(precision)
    if (meta.get("precision") or "fp32") != base:
        return False
    return mode is None or _quantization(meta) == mode


def backend_formats(backend: str) -> tuple[str, ...]:
    entry = registry.find(backend)  # an unknown backend: CRError naming the available ones
    try:
        formats = getattr(registry.load_class(entry), "FORMATS", None)
    except registry.BackendError as exc:
        raise CRError(f"backend {backend!r} cannot be loaded here to see what it runs: {exc}",
                      hint=f"install what it needs: cr install software NAME for each of {', '.join(registry.requirements(entry)) or 'its framework'}"
                           " (cr find software lists the recipes)") from None
    return tuple(formats or ())


def _versions(model: dict) -> list[dict]:
    """The model, then the versions cr compile made from it (same name, same public version), newest first."""
    from ..store.catalog import matching, show

    public = model["version"].partition("+")[0]
    out = [model]
    for comp in matching(f"model:{model['name']}"):
        if comp.ref == model["ref"] or str(comp.version).partition("+")[0] != public:
            continue
        info = show(comp.ref, verify=False)
        if "degraded" not in (info["meta"].get("tags") or []):
            out.append(info)
    return out


def existing(model: dict, formats: tuple[str, ...], precision: str) -> Variant | None:
    """The first variant of model (or of a version compiled from it) of that precision the backend loads."""
    for info in _versions(model):
        for name in variants.names(info["meta"]) or [None]:
            meta = variants.effective(info["meta"], name)
            if meta.get("format") in formats and matches(meta, precision):
                return Variant(meta["variant"], info["ref"], precision)
    return None


def conversions(model: dict, formats: tuple[str, ...], precision: str):
    """(to, source variant meta, plan, compile params) for each conversion cr compile knows
    that makes precision in a format the backend loads."""
    from ..runtime.actions.compile import plan
    from .compile import source_variant

    base, mode = split(precision)
    for to in [f for f in _TARGETS if f in formats]:
        try:
            source = source_variant(model, to, None)
        except CRError:
            continue
        if base == "fp16":  # cr compile makes fp16 only as a TensorRT plan (-O fp16=true)
            params = {"options": {"fp16": True}}
        else:
            params = {"precision": base, **({"quantization": mode} if mode else {})}
        try:
            the_plan = plan(source.get("format"), to, params.get("precision"), params.get("quantization"),
                            params.get("options"), model["ref"])
        except CRError:
            continue
        if the_plan["precision"] == base and (mode is None or the_plan["quantization"] == mode):
            yield to, source, the_plan, params


def variant_for(model_ref: str, backend: str, precision: str, install: bool = False) -> Variant:
    """The variant of model_ref at precision that backend loads: an existing one, else one
    cr compile makes now (installing the conversion's software with install=True, else
    CRError naming it) and keeps as a new version of the model. Returns its name (a str),
    with .model_ref the version that holds it (run it as run_action(..., model_ref / ref,
    variant=name)) and .compiled. CRError when no conversion can make it."""
    from ..store.catalog import show

    split(precision)
    model = show(model_ref if ":" in model_ref else f"model:{model_ref}", verify=False)
    if model["kind"] != "model":
        raise CRError(f"{model['ref']} is a {model['kind']}, not a model", hint="give a model ref, e.g. model:lenet-digits")
    formats = backend_formats(backend)
    found = existing(model, formats, precision)
    if found is not None:
        return found
    tried = []
    for to, source, the_plan, params in conversions(model, formats, precision):
        from .compile import compile_model, output_version

        version = output_version(model["version"], the_plan["label"])
        try:  # made before, but degraded (skipped above) or under another precision label: not reused
            show(f"model:{model['name']}@{version}", verify=False)
            tried.append(f"{to} ({model['name']}@{version} exists but is not a usable {precision} variant)")
            continue
        except NotFound:
            pass
        record = compile_model(model["ref"], to, variant=source["variant"], params=params, install=install)
        if record["status"] != "ok":
            error = record.get("error") or {}
            raise CRError(f"making {precision} of {model['ref']} for {backend} (cr compile --to {to}) failed: "
                          f"{error.get('message')}", hint=error.get("hint"))
        out = show(record["output"]["ref"], verify=False)
        meta = variants.effective(out["meta"])
        return Variant(meta["variant"], out["ref"], precision, compiled=True)
    from ..runtime.actions.compile import SUPPORTED

    have = ", ".join(f"{n} ({variants.effective(model['meta'], n).get('format')}, "
                     f"{variants.effective(model['meta'], n).get('precision')})" for n in variants.names(model["meta"]))
    raise CRError(f"no variant of {model['ref']} is {precision} in a format backend {backend!r} loads "
                  f"({', '.join(formats) or 'none'}), and no conversion cr compile knows makes one"
                  + (f" ({'; '.join(tried)})" if tried else ""),
                  hint=f"its variants: {have or 'none'}; cr compile converts {SUPPORTED}")
