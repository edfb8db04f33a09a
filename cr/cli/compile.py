"""cr compile: convert a model into a new model component version in the local repo."""
from __future__ import annotations

import click

from . import output
from .options import backend_options


def _summary_rows(record: dict) -> list[list]:
    out = record["output"]
    source = record["components"][0]
    cfg = record["config"]
    rows = [
        ["source", f"{source['ref']}" + (f" variant {cfg['variant']}" if cfg["variant"] != cfg["source_format"] else "")
         + f" ({cfg['source_format']})"],
        ["output", f"{out['ref']} ({out['format']}, {out['precision']})"],
        ["conversion", record["conversion"]],
        ["file", f"{out['path']}/{out['file']}"],
        ["sha256", out["files"][out["file"]]],
    ]
    for step, check in sorted(((k, v) for k, v in ((record.get("checks") or {}).items()) if isinstance(v, dict))):
        if "max_abs_diff" in check:
            text = f"max |diff| {check['max_abs_diff']:.3g} vs {check.get('against', 'source')}"
            if check.get("atol") is not None and "min_top1_agreement" not in check:
                text += f" (atol {check['atol']:g})"
            if check.get("top1_agreement") is not None:
                text += f", top-1 agreement {check['top1_agreement']:.3f}"
                if check.get("min_top1_agreement") is not None:
                    text += f" (min {check['min_top1_agreement']:g})"
            if check.get("samples"):
                text += f" on {check['samples']} samples"
            if check.get("passed") is False:
                text += ": FAILED (registered with --allow-degraded)"
            rows.append([f"check ({step})", text])
    for i, hop in enumerate(record.get("path") or []):
        text = f"{hop.get('from')} -> {hop.get('to')} ({hop.get('tool')} {hop.get('version') or '?'}, {hop.get('seconds', 0):.2f} s)"
        if hop.get("max_abs_diff") is not None:
            text += f", max |diff| {hop['max_abs_diff']:.3g}"
        rows.append([f"hop {i + 1}: {hop.get('hop')}", text])
    from ..run.quantreport import rows as quantisation_rows

    rows += quantisation_rows(record)
    rows.append(["duration", f"{record['duration_s']:.2f} s"])
    return rows


@click.command("compile")
@click.argument("ref", nargs=-1, required=True)
@click.option("--to", "to", required=True, type=click.Choice(["onnx", "tflite", "savedmodel", "trt-plan"]), help="Output format.")
@click.option("--variant", help="Source variant (default: the first whose format the conversion reads).")
@click.option("--precision", type=click.Choice(["fp32", "int8"]), help="Output precision (default fp32).")
@click.option("--quantization", type=click.Choice(["dynamic", "static"]),
              help="int8: dynamic (no data) or static (calibrated); default dynamic for onnx, static for tflite.")
@click.option("--dataset", help="Dataset for calibration (default: the model's dataset; the split validation does not "
                                 "judge, see --calibration).")
@click.option("--calibration", metavar="SPLIT|DATASET_REF",
              help="int8: calibrate on this split of the dataset (train, test, all) or on another dataset "
                   "(dataset:NAME); default: the split validation does not judge. The report names the overlap.")
@click.option("--calibration-samples", type=int, help="Samples that calibrate static quantisation (default 100).")
@click.option("-O", "--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Conversion option (repeatable), e.g. -O level=all, -O opset=17, -O per_channel=false.")
@click.option("--version", "version", help="Version of the output (default: the source's + a label, e.g. 1.0.0+onnx).")
@click.option("--force", is_flag=True, help="Replace the output version if the local repo has it.")
@click.option("--allow-degraded", is_flag=True,
              help="Register the output even when it fails its check against its source (the failure is recorded "
                   "in its provenance); without it such a compile fails and registers nothing.")
@click.option("--install", is_flag=True, help="Install what the conversion needs and is missing here first.")
@click.option("--timeout", "timeout_s", type=float, help="Stop the conversion and fail after this many seconds.")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), help="Write the result record (JSON) here.")
@click.option("--json", "as_json", is_flag=True, help="Print the result record as JSON.")
def compile_(ref, to, variant, options, version, force, install, allow_degraded, out, as_json, **params):
    """Convert a model: cr compile model NAME --to onnx [--precision int8 --quantization static].

    Conversions: torchscript, torch-exported, torch-state-dict -> onnx; onnx -> onnx
    (optimised, or int8); onnx -> trt-plan (NVIDIA GPU); keras, savedmodel -> tflite (fp32,
    int8); any other pair through the shortest chain of hops (tflite -> onnx, onnx ->
    tflite, onnx -> savedmodel, ...; docs/conversions.md), each hop checked and recorded
    in the record's and the output's path. The output becomes a new version of the same model in your local repo, e.g.
    model:NAME@1.0.0+onnx.int8.dynamic, with its provenance in its meta. The conversion
    runs in a separate process and is checked against its source: fp32 within -O atol
    (default 1e-3), int8 top-1 agreement at least -O min_top1_agreement (default 0.95);
    a failed check fails the compile, registering nothing, unless --allow-degraded.
    """
    from ..errors import CRError
    from ..run.compile import compile_model
    from ..results.record import to_json
    from ..store.refs import parse_ref_words

    record = compile_model(
        str(parse_ref_words(ref)), to, variant=variant, params={**params, "options": backend_options(options)},
        version=version, output=out, force=force, install=install, allow_degraded=allow_degraded,
    )
    if as_json:
        output.emit_json(to_json(record))
    elif record["status"] == "ok":
        output.table(["FIELD", "VALUE"], _summary_rows(record), title=f"compiled {record['output']['ref']}")
    if out:
        click.echo(f"result: {out}", err=True)
    if record["status"] != "ok":
        error = record.get("error") or {}
        raise CRError(error.get("message", "the compile failed"), hint=error.get("hint"))

