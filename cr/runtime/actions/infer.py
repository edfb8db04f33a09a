"""The run and validate actions' entries: inference on dataset samples or files.

    run       (actions/run/meta.json)       decoded predictions for each sample (and, with
                                            save_outputs, every raw output as .npy files)
    validate  (actions/validate/meta.json)  accuracy against the model's expected metrics,
                                            and the raw outputs for a --parity comparison
    compare                                 the parity comparison itself (numpy only)

Decoding and metrics of segmentation, landmarks and regression: cr.runtime.tasks.

Every sample goes through the model meta's preprocess pipeline, the backend, then its
postprocess pipeline, in batches of ``batch_size`` (the model's fixed batch is padded by
repeating the last sample; padded rows are dropped from the outputs).
"""
from __future__ import annotations

from pathlib import Path

from ...errors import CRError
from ..backends.base import check_inputs
from ..datasets import DatasetInputs, Sample
from .. import tasks
from .. import progress
from .common import as_list, fixed_batch, load_dataset, open_backend, postprocess, preprocess

DEFAULT_BATCH = 32
SYNTHETIC_SAMPLES = 8  # a parity on synthetic inputs, unless --limit says


def _file_samples(paths: list[str]) -> list:
    import numpy as np

    samples = []
    for p in paths:
        path = Path(p)
        if not path.is_file():
            raise CRError(f"input file {p} does not exist", hint="give --input FILE with an existing image or .npy file")
        data = np.load(path, allow_pickle=False) if path.suffix == ".npy" else str(path)
        samples.append(Sample(path.name, data))
    return samples


def _check_decodable(opened, samples: list) -> None:
    """A file (not .npy) reaches the model as its path: only a decode step turns it into pixels.
    Without one the path would meet the framework as a string ('str' object has no attribute
    'dtype', blamed on the backend): name the case instead."""
    paths = [s for s in samples if isinstance(s.data, str)]
    if not paths or any(isinstance(st, dict) and st.get("op") == "decode" for st in opened.meta.get("preprocess") or []):
        return
    from ..backends.base import describe
    from ..datasets import IMAGE_SUFFIXES

    spec = (opened.input_specs() or [{}])[0]
    name = Path(paths[0].data).name
    what = "an image file" if Path(name).suffix.lower() in IMAGE_SUFFIXES else "a file that is not a .npy array"
    raise CRError(f"{opened.ref} expects a tensor ({spec.get('name', 'input')!r}: {describe(spec.get('shape'), spec.get('dtype'))}) "
                  f"and its pre-processing has no decode step, but input {name} is {what} (it would reach the model as "
                  "a file path string)",
                  hint=f"give -i FILE.npy holding an array the model's pre-processing takes (cr show {opened.ref} lists its "
                       "steps), or run a model whose preprocess starts with a decode step on images")


def _infer(opened, samples: list, batch_size: int | None, names: list | None = None):
    """[(sample, [raw output rows], [post-processed rows])] in sample order; ``names`` (a
    list, when given) receives the raw outputs' names."""
    specs = opened.backend.inputs()
    fixed = fixed_batch(opened.input_specs())
    n = fixed or int(batch_size or DEFAULT_BATCH)
    provider = DatasetInputs(samples, preprocess(opened.meta), opened.input_name(), n, pad_last=fixed is not None)
    return _outputs(opened, specs, zip(provider.groups(), provider.batches()), names)


def _outputs(opened, specs: list, batches, names: list | None) -> list:
    import numpy as np

    post = postprocess(opened.meta)
    rows = []
    prepare = getattr(opened.backend, "prepare", None)
    for group, batch in batches:
        check_inputs(specs, batch)
        if callable(prepare):
            prepare(batch)
        result = opened.backend.run(batch)
        raw = [np.asarray(o) for o in as_list(result)]
        if names is not None and not names:
            names.extend(output_names(opened, result, len(raw)))
        done = post.apply_outputs(raw)
        for i, sample in enumerate(group):
            rows.append((sample, [o[i] for o in raw], [_row(d, i) for d in done]))
    return rows


def output_names(opened, result, count: int) -> list[str]:
    """The names of a backend's raw outputs: its own (a dict result, or outputs()), else the
    meta's, else output_0, output_1, ..."""
    if isinstance(result, dict):
        return [str(k) for k in result]
    for specs in (_backend_outputs(opened), opened.meta.get("outputs")):
        if specs and len(specs) == count and all(s.get("name") for s in specs):
            return [str(s["name"]) for s in specs]
    return [f"output_{i}" for i in range(count)]


def _backend_outputs(opened):
    outputs = getattr(opened.backend, "outputs", None)
    try:
        return outputs() if callable(outputs) else None
    except Exception:  # noqa: BLE001 - a backend that cannot say falls back to the meta's names
        return None


def _synthetic(opened, count: int, seed: int, batch_size: int | None, names: list | None = None) -> list:
    """Rows for ``count`` seeded synthetic samples drawn from the declared input specs
    (shape, dtype, range: cr.runtime.inputs.SyntheticInputs), fed to the model as they are
    (no pre-processing: they already have the model's input shape)."""
    from ..inputs import SyntheticInputs, batch_size_for

    specs = opened.input_specs()
    n = batch_size_for(specs, batch_size, opened.ref)
    batches = SyntheticInputs(specs, n, seed=seed, count=-(-count // n)).batches()
    groups = [[Sample(f"synthetic-{i * n + j}", None) for j in range(n)] for i in range(len(batches))]
    rows = _outputs(opened, opened.backend.inputs(), zip(groups, batches), names)
    return rows[:count]


def _row(value, i):
    return value[i] if hasattr(value, "__getitem__") else value


def _classes(scores, k: int, names: dict) -> list[dict]:
    import numpy as np

    scores = np.asarray(scores).reshape(-1)
    top = np.argsort(-scores, kind="stable")[:k]
    return [{"class": int(c), "label": names.get(str(int(c))), "score": float(scores[c])} for c in top]


def _labels(meta: dict, dataset) -> dict:
    from ..datasets import load_labels

    names = load_labels(meta, meta.get("_dir")) or []  # a list in the meta, or a labels file beside it
    out = {str(i): n for i, n in enumerate(names)}
    if dataset is not None:
        out.update(dataset.label_names)
    return out


def _detections(rows, min_score: float | None = None) -> list[dict]:
    """Post-processed rows [ymin, xmin, ymax, xmax, score(, class)] -> dicts (class when given),
    those below min_score left out."""
    import numpy as np

    rows = np.asarray(rows)
    width = rows.shape[-1] if rows.ndim == 2 and rows.shape[-1] in (5, 6) else 5
    dets = rows.reshape(-1, width) if rows.size else np.zeros((0, width))
    out = []
    for d in dets:
        if min_score is not None and float(d[4]) < min_score:
            continue
        entry = {"box": [float(v) for v in d[:4]], "score": float(d[4])}
        if width == 6:
            entry["class"] = int(d[5])
        out.append(entry)
    return out


def _stream(opened, params: dict) -> tuple[list, dict]:
    """cr run --stream: every frame through the pipeline (cr.runtime.stream)."""
    import time

    import numpy as np

    from ..stream import run_stream

    specs = opened.backend.inputs()
    fixed = fixed_batch(opened.input_specs())
    pre, post = preprocess(opened.meta), postprocess(opened.meta)
    names = _labels(opened.meta, None)
    task, k = opened.meta.get("task"), int(params.get("top_k") or 5)
    threshold = params.get("score_threshold", 0.5)
    prepare = getattr(opened.backend, "prepare", None)

    def predict(image):
        batch = {opened.input_name(): pre.batch([image] * (fixed or 1))}
        check_inputs(specs, batch)
        if callable(prepare):
            prepare(batch)
        started = time.perf_counter()
        raw = [np.asarray(o) for o in as_list(opened.backend.run(batch))]
        seconds = time.perf_counter() - started
        row = _row(post.apply_outputs(raw)[0], 0)
        if task == "detection":
            dets = _detections(row, None if threshold is None else float(threshold))
            for d in dets:
                if "class" in d and names.get(str(d["class"])):
                    d["label"] = names[str(d["class"])]
            return {"detections": dets}, seconds
        return {"top": _classes(row, k, names)}, seconds

    return run_stream(params["stream"], predict, params.get("annotate"), params.get("max_frames"),
                      strict=bool(params.get("strict")))


def run(job: dict) -> dict:
    """cr run: predictions for dataset samples (--limit), --input files, or a --stream."""
    params = job.get("params") or {}
    opened = open_backend(job)
    if params.get("stream"):
        try:
            predictions, summary = _stream(opened, params)
            info = opened.info()
        finally:
            opened.backend.close()
        return {"predictions": predictions, "stream": summary, "backend_info": info, "model_file": opened.model_file(),
                "placement": opened.placement,
                "pipeline": opened.pipeline(), "inputs": {"provider": "stream", "source": summary["source"],
                                                          "samples": summary["frames"]}}
    try:
        dataset = None
        if params.get("inputs"):
            samples = _file_samples(params["inputs"])
            _check_decodable(opened, samples)
        else:
            dataset = load_dataset(job, limit=int(params.get("limit") or 8))
            samples = dataset.samples
        names = _labels(opened.meta, dataset)
        task = opened.meta.get("task")
        decoding = tasks.params(opened.meta, opened.ref) if task in tasks.TASKS else None
        k = int(params.get("top_k") or 5)
        predictions, output_names = [], []
        rows = _infer(opened, samples, params.get("batch_size"), output_names)
        for sample, _raw, post in rows:
            entry = {"id": sample.id, "label": sample.label}
            if task == "detection":
                entry["detections"] = _detections(post[0])
            elif decoding is not None:
                entry.update(tasks.shown(task, tasks.decode(task, decoding, post), names))
            else:
                entry["top"] = _classes(post[0], k, names)
            predictions.append(entry)
        saved = save_outputs(params["save_outputs"], rows, output_names) if params.get("save_outputs") else None
        info = opened.info()
    finally:
        opened.backend.close()
    return {"predictions": predictions, "task": task, "backend_info": info, "model_file": opened.model_file(),
            "pipeline": opened.pipeline(), "inputs": _inputs_record(job, dataset, len(samples)),
            "placement": opened.placement, "saved_outputs": saved}


INDEX = "index.json"


def save_outputs(folder: str, rows: list, names: list[str]) -> dict:
    """Every raw output of every sample as FOLDER/NNNNNN_<output>.npy (sample NNNNNN in run
    order) and FOLDER/index.json naming, per sample, its id and each output's file, shape and
    dtype (docs/actions.md). The folder is created; files of an earlier run are replaced."""
    import json
    import re

    import numpy as np

    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise CRError(f"--save-outputs {folder} is a file", hint="give a directory, or a path that does not exist yet")
    out.mkdir(parents=True, exist_ok=True)
    safe = [re.sub(r"[^A-Za-z0-9._-]+", "_", n).strip(".") or f"output_{i}" for i, n in enumerate(names)]
    samples = []
    for i, (sample, raw, _post) in enumerate(rows):
        files = {}
        for name, stem, value in zip(names, safe, raw):
            value = np.asarray(value)
            file = f"{i:06d}_{stem}.npy"
            np.save(out / file, value, allow_pickle=False)
            files[name] = {"file": file, "shape": list(value.shape), "dtype": str(value.dtype)}
        samples.append({"index": i, "id": sample.id, "outputs": files})
    index = {"format": "cr-outputs/1", "outputs": names, "samples": samples}
    (out / INDEX).write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    return {"dir": str(out), "index": INDEX, "samples": len(samples), "files": len(samples) * len(names)}


def _inputs_record(job, dataset, count) -> dict:
    if dataset is None:
        return {"provider": "files", "samples": count, "files": list((job.get("params") or {}).get("inputs") or [])}
    return {"provider": "dataset", "dataset": dataset.ref, "split": dataset.split, "samples": count}


def _check(name: str, value: float, expected: dict | None) -> dict:
    if not expected:
        return {"metric": name, "value": value, "expected": None, "ok": None}
    want = float(expected["value"])
    allowed = max(float(expected.get("abs", 0.0)), float(expected.get("rel", 0.0)) * abs(want))
    return {"metric": name, "value": value, "expected": want, "abs": expected.get("abs"), "rel": expected.get("rel"),
            "allowed": allowed, "diff": value - want, "ok": abs(value - want) <= allowed + 1e-12}


def sample_hits(ids: list, hits: dict) -> dict:
    """Which samples a metric got right, compactly, so that two records can be compared
    sample by sample (a paired test, cr.results.accuracy):

        {"encoding": "bitset-lsb0-base64", "count": n, "ids": [sample ids in order],
         "ids_sha256": sha256 of the ids joined by newlines (UTF-8), "top1": bitset, "top5": bitset}

    A bitset holds sample i's hit in bit i % 8 (least significant first) of byte i // 8,
    base64-encoded: 360 samples take 60 characters."""
    import base64
    import hashlib

    ids = [str(i) for i in ids]
    out = {"encoding": "bitset-lsb0-base64", "count": len(ids), "ids": ids,
           "ids_sha256": hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()}
    for name, values in hits.items():
        packed = bytearray((len(values) + 7) // 8)
        for i, hit in enumerate(values):
            if hit:
                packed[i // 8] |= 1 << (i % 8)
        out[name] = base64.b64encode(bytes(packed)).decode("ascii")
    return out


def _classification(rows, expected: dict, k: int = 5) -> tuple[dict, list]:
    import numpy as np

    labelled = [(s, post) for s, _raw, post in rows if s.label is not None]
    hits1, hits5 = [], []
    misses = []
    for sample, post in labelled:
        scores = np.asarray(post[0]).reshape(-1)
        order = np.argsort(-scores, kind="stable")[:k]
        hits1.append(bool(order[0] == sample.label))
        hits5.append(bool(sample.label in order))
        if order[0] != sample.label and len(misses) < 20:
            misses.append({"id": sample.id, "label": sample.label, "predicted": int(order[0])})
    n = len(labelled)
    metrics = {"task": "classification", "samples": n, "top1": sum(hits1) / n, "top5": sum(hits5) / n, "misses": misses,
               "hits": sample_hits([s.id for s, _post in labelled], {"top1": hits1, "top5": hits5})}
    checks = [_check(m, metrics[m], expected.get(m)) for m in ("top1", "top5") if m in expected]
    return metrics, checks


def _detection(rows, expected: dict, iou_threshold: float, score_threshold: float | None = None) -> tuple[dict, list]:
    """IoU-matched recall/precision/mean IoU over the detections scoring >= score_threshold,
    and COCO AP (cr.runtime.coco_eval, pycocotools) over all of them."""
    from ..detection import iou

    objects = detections = matched = 0
    ious = []
    per_sample = []
    scored = []
    for sample, _raw, post in rows:
        if sample.boxes is None:
            continue
        every = _detections(post[0])
        scored.append((sample, every))
        dets = [d for d in every if score_threshold is None or d["score"] >= score_threshold]
        objects += len(sample.boxes)
        detections += len(dets)
        used = set()
        for gt in sample.boxes:
            best, best_j = 0.0, None
            for j, d in enumerate(dets):
                if j not in used:
                    v = float(iou(gt, d["box"]))
                    if v > best:
                        best, best_j = v, j
            if best_j is not None and best >= iou_threshold:
                used.add(best_j)
                matched += 1
                ious.append(best)
        per_sample.append({"id": sample.id, "objects": len(sample.boxes), "detections": dets})
    metrics = {
        "task": "detection", "samples": len(per_sample), "objects": objects, "detections": detections,
        "matched": matched, "iou_threshold": iou_threshold, "score_threshold": score_threshold,
        "recall": matched / objects if objects else 0.0,
        "precision": matched / detections if detections else 0.0,
        "mean_iou": sum(ious) / len(ious) if ious else 0.0,
    }
    metrics.update(_coco(scored, expected))
    metrics["per_sample"] = per_sample
    names = ("recall", "precision", "mean_iou", "detections", "ap", "ap50", "ap75", "coco_recall")
    checks = [_check(m, metrics[m], expected.get(m)) for m in names if m in expected and m in metrics]
    return metrics, checks


def _coco(scored: list, expected: dict) -> dict:
    """COCO AP metrics, or {"coco": {"skipped": why}} when pycocotools is absent and no
    expected metric needs them."""
    from .. import coco_eval

    try:
        found = coco_eval.coco_metrics(scored)
    except CRError as exc:
        if any(m in expected for m in coco_eval.METRICS) or "pycocotools" not in exc.message:
            raise
        return {"coco": {"skipped": exc.message}}
    return {**{m: found[m] for m in coco_eval.METRICS}, "coco": {"evaluator": found["evaluator"], "images": found["images"],
                                                                  "objects": found["objects"]}}


def _task_metrics(task: str, decoding: dict, rows: list, expected: dict) -> tuple[dict, list]:
    found = tasks.metrics(task, decoding, rows)
    checks = [_check(m, found[m], expected.get(m)) for m in tasks.METRIC_NAMES[task] if m in expected and m in found]
    return found, checks


def _need(task: str | None) -> str:
    if task == "detection":
        return "boxes"
    return tasks.TARGETS.get(task, "labels")


def validate(job: dict) -> dict:
    """cr validate: accuracy on the dataset, checked against the expected metrics. For a
    parity (keep_outputs), a dataset without labels still gives outputs (metrics left out),
    and no dataset at all gives ``synthetic_samples`` seeded synthetic inputs."""
    params = job.get("params") or {}
    opened = open_backend(job)
    try:
        task = opened.meta.get("task")
        detection = task == "detection"
        decoding = tasks.params(opened.meta, opened.ref) if task in tasks.TASKS else None
        keep = bool(params.get("keep_outputs"))
        names: list = []
        synthetic = keep and not job.get("dataset") and params.get("synthetic_seed") is not None
        if synthetic:
            dataset = None
            rows = _synthetic(opened, int(params.get("limit") or SYNTHETIC_SAMPLES), int(params["synthetic_seed"]),
                              params.get("batch_size"), names)
        else:
            dataset = load_dataset(job, limit=params.get("limit"), need=None if keep else _need(task))
            progress.mark("accuracy pass", samples=len(dataset.samples))
            rows = _infer(opened, dataset.samples, params.get("batch_size"), names)
        expected = dict(opened.meta.get("expected") or {})
        labelled = dataset is not None and (dataset.has_boxes if detection else dataset.has_targets(tasks.TARGETS[task])
                                            if decoding is not None else dataset.has_labels)
        if not labelled:
            metrics, checks = {"task": task, "samples": len(rows), "metrics": None}, []
        elif detection:
            threshold = params.get("score_threshold", 0.5)
            metrics, checks = _detection(rows, expected, float(params.get("iou_threshold", 0.5)),
                                         None if threshold is None else float(threshold))
        elif decoding is not None:
            metrics, checks = _task_metrics(task, decoding, rows, expected)
        else:
            metrics, checks = _classification(rows, expected)
        info = opened.info()
    finally:
        opened.backend.close()
    judged = [c for c in checks if c["ok"] is not None]
    outcome = "PASS" if judged and all(c["ok"] for c in judged) else ("FAIL" if judged else "UNCHECKED")
    inputs = ({"provider": "synthetic", "seed": int(params["synthetic_seed"]), "samples": len(rows)} if synthetic
              else _inputs_record(job, dataset, len(rows)))
    out = {
        "validation": {"outcome": outcome, "checks": checks, **metrics},
        "backend_info": info, "model_file": opened.model_file(), "pipeline": opened.pipeline(),
        "inputs": inputs,
        "placement": opened.placement,
    }
    if keep:
        out["outputs"] = {"ids": [s.id for s, _r, _p in rows], "names": names, "task": task,
                          "raw": [[o.tolist() for o in raw] for _s, raw, _p in rows]}
        if detection:  # a detector's parity compares boxes: raw outputs of a whole graph and a backbone differ
            out["outputs"]["detections"] = [_detections(post[0]) for _s, _r, post in rows]
        elif decoding is not None:  # what the task makes of the outputs: class maps, points, values
            out["outputs"]["decoded"] = [tasks.decode(task, decoding, post).tolist() for _s, _r, post in rows]
    return out


def compare(job: dict) -> dict:
    """Parity: outputs of several backends on the same samples (job["runs"]: {backend: outputs}),
    each pair against the first backend: every output by name within numpy.allclose(other,
    reference, rtol=parity_rtol, atol=parity_atol), and the task's agreement."""
    params = job.get("params") or {}
    atol, rtol = float(params.get("parity_atol", 1e-4)), float(params.get("parity_rtol", 0.0))
    runs = job["runs"]
    names = list(runs)
    base = names[0]
    ids = runs[base]["ids"]
    pairs = []
    for other in names[1:]:
        if runs[other]["ids"] != ids:
            raise CRError(f"backends {base} and {other} ran different samples", hint="this is a bug in cr: report it")
        if "detections" in runs[base] and "detections" in runs[other]:
            from ..detection_parity import compare as compare_detections

            pairs.append(compare_detections(base, other, ids, runs[base]["detections"], runs[other]["detections"],
                                            params.get("detections")))
            continue
        pairs.append(_pair(base, other, ids, runs[base], runs[other], atol, rtol))
    return {"parity": {"tolerance": atol, "atol": atol, "rtol": rtol, "reference": base, "pairs": pairs,
                       "outcome": "PASS" if all(p["ok"] for p in pairs) else "FAIL"}}


def _matched(ref: dict, other: dict) -> tuple[list, str]:
    """[(name, reference index, other index)] of the outputs both runs have: by name, or by
    position when the backends name them differently but have as many."""
    a = ref.get("names") or [f"output_{i}" for i in range(len(ref["raw"][0]) if ref["raw"] else 0)]
    b = other.get("names") or [f"output_{i}" for i in range(len(other["raw"][0]) if other["raw"] else 0)]
    if set(a) == set(b):
        return [(n, i, b.index(n)) for i, n in enumerate(a)], "name"
    if len(a) == len(b):
        return [(n if n == m else f"{n} / {m}", i, i) for i, (n, m) in enumerate(zip(a, b))], "position"
    common = [n for n in a if n in b]
    return [(n, a.index(n), b.index(n)) for n in common], "name"


def _output_diff(name: str, ids: list, ref: list, other: list, atol: float, rtol: float) -> dict:
    """max |other - ref|, max |other - ref| / |ref| (over non-zero ref elements), and whether
    every sample is within numpy.allclose(other, ref, rtol, atol)."""
    import numpy as np

    worst_abs, worst_rel, worst_id, mismatched, close, per_sample = 0.0, 0.0, None, [], True, []
    for sample_id, y, x in zip(ids, ref, other):
        y, x = np.asarray(y, dtype=np.float64), np.asarray(x, dtype=np.float64)
        if x.shape != y.shape:
            mismatched.append(sample_id)
            close = False
            continue
        if not x.size:
            continue
        diff = np.abs(x - y)
        top = float(np.max(diff))
        per_sample.append(top)
        nonzero = y != 0
        rel = float(np.max(diff[nonzero] / np.abs(y[nonzero]))) if nonzero.any() else 0.0
        if worst_id is None or top > worst_abs:
            worst_abs, worst_id = top, sample_id
        worst_rel = max(worst_rel, rel)
        close = close and bool(np.allclose(x, y, rtol=rtol, atol=atol))
    return {"name": name, "max_abs_diff": None if mismatched else worst_abs,
            "max_rel_diff": None if mismatched else worst_rel,
            "mean_max_abs_diff": None if mismatched else (float(np.mean(per_sample)) if per_sample else 0.0),
            "worst_sample": worst_id, "shape_mismatch": mismatched[:20], "allclose": close}


def _pair(base: str, other: str, ids: list, ref: dict, run: dict, atol: float, rtol: float) -> dict:
    task = ref.get("task")
    matched, by = _matched(ref, run)
    outputs = [_output_diff(name, ids, [r[i] for r in ref["raw"]], [r[j] for r in run["raw"]], atol, rtol)
               for name, i, j in matched]
    missing = max(len(ref.get("names") or []), len(run.get("names") or [])) - len(matched)
    mismatched = sorted({s for o in outputs for s in o["shape_mismatch"]}, key=ids.index)
    if "decoded" in ref and "decoded" in run:
        agree = tasks.agreement(task, ref["decoded"], run["decoded"])
    elif task in (None, "classification") and matched:
        agree = tasks.agreement("classification", [r[matched[0][1]] for r in ref["raw"]], [r[matched[0][2]] for r in run["raw"]])
    else:
        agree = None
    diffs = [o["max_abs_diff"] for o in outputs]
    worst = max(outputs, key=lambda o: o["max_abs_diff"] or 0.0) if outputs else None
    return {
        "backends": [base, other], "samples": len(ids), "task": task, "matched_by": by, "missing_outputs": missing,
        "max_abs_diff": None if mismatched or None in diffs else max(diffs, default=0.0),
        "max_rel_diff": None if mismatched else max((o["max_rel_diff"] for o in outputs), default=0.0),
        "mean_max_abs_diff": worst["mean_max_abs_diff"] if worst else 0.0,
        "worst_sample": worst["worst_sample"] if worst else None, "shape_mismatch": mismatched[:20],
        "agreement": None if agree is None else {"metric": agree["metric"], "value": agree["value"]},
        "top1_agreement": agree["value"] if agree and agree["metric"] == "top1_agreement" else None,
        "disagreements": [ids[i] for i in (agree or {}).get("disagreements", [])][:20],
        "outputs": outputs,
        "ok": bool(matched) and not missing and all(o["allclose"] for o in outputs) and (agree is None or agree["ok"]),
    }
