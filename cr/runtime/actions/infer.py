"""The run and validate actions' entries: inference on dataset samples or files.

    run       (actions/run/meta.json)       decoded predictions for each sample
    validate  (actions/validate/meta.json)  accuracy against the model's expected metrics,
                                            and the raw outputs for a --parity comparison
    compare                                 the parity comparison itself (numpy only)

Every sample goes through the model meta's preprocess pipeline, the backend, then its
postprocess pipeline, in batches of ``batch_size`` (the model's fixed batch is padded by
repeating the last sample; padded rows are dropped from the outputs).
"""
from __future__ import annotations

from pathlib import Path

from ...errors import CRError
from ..backends.base import check_inputs
from ..datasets import DatasetInputs, Sample
from .common import as_list, fixed_batch, load_dataset, open_backend, postprocess, preprocess

DEFAULT_BATCH = 32


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


def _infer(opened, samples: list, batch_size: int | None):
    """[(sample, [raw output rows], [post-processed rows])] in sample order."""
    import numpy as np

    specs = opened.backend.inputs()
    fixed = fixed_batch(opened.input_specs())
    n = fixed or int(batch_size or DEFAULT_BATCH)
    provider = DatasetInputs(samples, preprocess(opened.meta), opened.input_name(), n, pad_last=fixed is not None)
    post = postprocess(opened.meta)
    rows = []
    prepare = getattr(opened.backend, "prepare", None)
    for group, batch in zip(provider.groups(), provider.batches()):
        check_inputs(specs, batch)
        if callable(prepare):
            prepare(batch)
        raw = [np.asarray(o) for o in as_list(opened.backend.run(batch))]
        done = post.apply_outputs(raw)
        for i, sample in enumerate(group):
            rows.append((sample, [o[i] for o in raw], [_row(d, i) for d in done]))
    return rows


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
        else:
            dataset = load_dataset(job, limit=int(params.get("limit") or 8))
            samples = dataset.samples
        names = _labels(opened.meta, dataset)
        task = opened.meta.get("task")
        k = int(params.get("top_k") or 5)
        predictions = []
        for sample, _raw, post in _infer(opened, samples, params.get("batch_size")):
            entry = {"id": sample.id, "label": sample.label}
            if task == "detection":
                entry["detections"] = _detections(post[0])
            else:
                entry["top"] = _classes(post[0], k, names)
            predictions.append(entry)
        info = opened.info()
    finally:
        opened.backend.close()
    return {"predictions": predictions, "backend_info": info, "model_file": opened.model_file(),
            "pipeline": opened.pipeline(), "inputs": _inputs_record(job, dataset, len(samples)),
            "placement": opened.placement}


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


def validate(job: dict) -> dict:
    """cr validate: accuracy on the dataset, checked against the expected metrics."""
    params = job.get("params") or {}
    opened = open_backend(job)
    try:
        detection = opened.meta.get("task") == "detection"
        dataset = load_dataset(job, limit=params.get("limit"), need="boxes" if detection else "labels")
        rows = _infer(opened, dataset.samples, params.get("batch_size"))
        expected = dict(opened.meta.get("expected") or {})
        if detection:
            threshold = params.get("score_threshold", 0.5)
            metrics, checks = _detection(rows, expected, float(params.get("iou_threshold", 0.5)),
                                         None if threshold is None else float(threshold))
        else:
            metrics, checks = _classification(rows, expected)
        info = opened.info()
    finally:
        opened.backend.close()
    judged = [c for c in checks if c["ok"] is not None]
    outcome = "PASS" if judged and all(c["ok"] for c in judged) else ("FAIL" if judged else "UNCHECKED")
    out = {
        "validation": {"outcome": outcome, "checks": checks, **metrics},
        "backend_info": info, "model_file": opened.model_file(), "pipeline": opened.pipeline(),
        "inputs": _inputs_record(job, dataset, len(rows)),
        "placement": opened.placement,
    }
    if params.get("keep_outputs"):
        out["outputs"] = {"ids": [s.id for s, _r, _p in rows], "raw": [[o.tolist() for o in raw] for _s, raw, _p in rows]}
        if detection:  # a detector's parity compares boxes: raw outputs of a whole graph and a backbone differ
            out["outputs"]["detections"] = [_detections(post[0]) for _s, _r, post in rows]
    return out


def compare(job: dict) -> dict:
    """Parity: outputs of several backends on the same samples (job["runs"]: {backend: outputs})."""
    import numpy as np

    tolerance = float((job.get("params") or {}).get("parity_atol", 1e-4))
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
                                            (job.get("params") or {}).get("detections")))
            continue
        a = [np.asarray(r[0], dtype=np.float64) for r in runs[base]["raw"]]
        b = [np.asarray(r[0], dtype=np.float64) for r in runs[other]["raw"]]
        # outputs of different shapes have no difference to measure: named, and the pair fails
        # (JSON has no infinity, so none is written)
        mismatched = [ids[i] for i, (x, y) in enumerate(zip(a, b)) if x.shape != y.shape]
        diffs = [float(np.max(np.abs(x - y))) for x, y in zip(a, b) if x.shape == y.shape and x.size]
        agree = [int(np.argmax(x)) == int(np.argmax(y)) for x, y in zip(a, b)]
        shaped = [i for i, (x, y) in enumerate(zip(a, b)) if x.shape == y.shape and x.size]
        worst = shaped[int(np.argmax(diffs))] if diffs else 0
        pairs.append({
            "backends": [base, other], "samples": len(ids),
            "max_abs_diff": None if mismatched else (max(diffs) if diffs else 0.0),
            "mean_max_abs_diff": None if mismatched else (float(np.mean(diffs)) if diffs else 0.0),
            "worst_sample": ids[worst] if ids else None, "shape_mismatch": mismatched[:20],
            "top1_agreement": sum(agree) / len(agree) if agree else 1.0,
            "disagreements": [ids[i] for i, ok in enumerate(agree) if not ok][:20],
            "ok": not mismatched and (max(diffs) if diffs else 0.0) <= tolerance and all(agree),
        })
    return {"parity": {"tolerance": tolerance, "reference": base, "pairs": pairs,
                       "outcome": "PASS" if all(p["ok"] for p in pairs) else "FAIL"}}
