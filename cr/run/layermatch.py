"""Layers matched across backends: which node of one framework is which layer of another.

Each backend's profile table (cr.runtime.profiling.aggregate) is read as layers in
execution order, each with a *path* and an *op class*:

  - path: the source model's module path, recovered from the framework's node name.
    torch eager: the module path itself ("features.0"); an ONNX model exported from
    torch: the scopes of the node name folded into one dotted path
    ("/blocks/blocks.0/blocks.0.0/conv_dw/Conv" -> "blocks.0.0.conv_dw"); TensorFlow /
    TFLite: the node name less its op suffix ("sequential/conv2d/Conv2D" ->
    "sequential/conv2d"); TensorRT: the first layer of a fused name ("conv1 + relu1" ->
    "conv1"). A TorchScript op without a module scope ("aten::_convolution#1") has none.
  - op class: the op family, so that Conv, FusedConv, aten::conv2d, Conv2D and CONV_2D
    are all "conv" (OP_CLASSES).

Matching, in three passes over (reference = the first backend, other):
  1. by name: same path and op class (the n-th occurrence pairs with the n-th);
  2. by position: the layers still unmatched pair up in execution order within each op
     class, when both sides have the same number left of that class (TorchScript ops,
     renamed nodes);
  3. fusion: a matched node that is fused on one side (FusedConv, _FusedConv2D, a
     TensorRT "a + b" layer, an ONNX Runtime Conv named after the activation output it
     computes) absorbs the unmatched elementwise layers (activation, batch norm, add,
     ...) that follow its partner on the other side up to the next matched layer; any
     matched conv/gemm absorbs a following batch norm (folded into its weights): one
     row, "fused" listing the layers it covers, their times summed.
What stays unmatched is listed per backend. Times compared are per query: each layer's
median over the profiled queries (per_query_ns, cr.runtime.profiling.aggregate); ratio =
other / reference. A backend without per-op timing (TFLite from Python) has no layer
times to match: it is listed by its ops, counted by op class beside the other backends'
(op_inventory).
"""
from __future__ import annotations

import re

OP_CLASSES = {
    "conv": ("conv", "fusedconv", "conv2d", "fusedconv2d", "fuseddepthwiseconv2dnative", "_fusedconv2d", "depthwiseconv2dnative", "conv_2d", "depthwise_conv_2d",
             "convolution", "_convolution", "conv1d", "conv3d", "qlinearconv", "convinteger"),
    "gemm": ("gemm", "fusedgemm", "matmul", "fusedmatmul", "linear", "addmm", "mm", "bmm", "fully_connected",
             "batchmatmulv2", "_fusedmatmul", "fusedmatmul", "batchmatmul", "qlinearmatmul", "matmulinteger",
             "dynamicquantizematmul", "matmulintegertofloat"),
    "relu": ("relu", "relu_", "relu6", "hardtanh", "hardtanh_", "clip", "clamp", "clamp_min", "leakyrelu"),
    "pool": ("maxpool", "max_pool2d", "max_pool_2d", "maxpool2d", "averagepool", "avgpool", "avg_pool2d",
             "globalaveragepool", "adaptive_avg_pool2d", "mean", "average_pool_2d", "max_pool2d_with_indices"),
    "add": ("add", "add_", "addv2", "sum"),
    "mul": ("mul", "mul_"),
    "batchnorm": ("batchnormalization", "batch_norm", "fusedbatchnormv3", "_native_batch_norm_legit_no_training"),
    "sigmoid": ("sigmoid", "logistic"),
    "softmax": ("softmax", "_softmax", "log_softmax"),
    "reshape": ("reshape", "flatten", "view", "squeeze", "unsqueeze", "transpose", "permute", "contiguous"),
    "hardswish": ("hardswish", "hard_swish", "hardswish_"),
    "quantize": ("quantizelinear", "dequantizelinear", "quantize", "dequantize", "dynamicquantizelinear"),
    "cast": ("cast", "to", "_to_copy"),
}
_CLASS_OF = {name: cls for cls, names in OP_CLASSES.items() for name in names}
ELEMENTWISE = {"relu", "add", "mul", "batchnorm", "sigmoid", "hardswish", "quantize", "cast"}
_ONNX_OP_PART = re.compile(r"^[A-Z][A-Za-z0-9]*(?:_\d+)?$")


def _base(op: str) -> str:
    """The op name without namespace and kernel-library prefixes ("_MklNativeFusedConv2D" -> "fusedconv2d")."""
    base = (op or "?").split("::")[-1].lower()
    for prefix in ("_mklnative", "_mkl", "_"):
        if base.startswith(prefix) and len(base) > len(prefix):
            base = base[len(prefix):]
            break
    return base


def op_class(op: str) -> str:
    raw = (op or "?").split("::")[-1].lower()
    base = _base(op)
    return _CLASS_OF.get(raw) or _CLASS_OF.get(base, base)


_ONNX_SUFFIXES = re.compile(r"(?:_output_\d+)?(?:_nchwc)?(?:_token_\d+)?$")
# the nodes ONNX Runtime's quantiser (quantize_dynamic / quantize_static) adds or renames:
# "Conv_quant", "Gemm_MatMul_quant", "Conv_quant_scales_mul", "Conv_output_0_bias_add", ...
_QUANT_SUFFIX = re.compile(r"(?:_MatMul)?_quant(?:_scales_mul|_output_scale_mul)?$"
                           r"|_output_\d+_(?:bias_add|output_quantized_cast|QuantizeLinear|DequantizeLinear)$")


def _quant_named(name: str) -> bool:
    parts = [p for p in (name or "").split("/") if p]
    return bool(parts) and _QUANT_SUFFIX.search(parts[-1]) is not None


def _onnx_parts(name: str) -> tuple[list[str], str | None]:
    """(scopes, the op named in the last part or None) of an ONNX node name from torch's
    exporter, after ONNX Runtime's renames ("fused " prefix, "<tensor>_output_0_nchwc")."""
    parts = [p for p in name.split("/") if p]
    last = _ONNX_SUFFIXES.sub("", _QUANT_SUFFIX.sub("", parts[-1])) if parts else ""
    if parts and _ONNX_OP_PART.match(last):
        return parts[:-1], re.sub(r"_\d+$", "", last)
    return parts, None


def _named_op(name: str) -> str | None:
    clean = (name or "").removeprefix("fused ")
    return _onnx_parts(clean)[1] if clean.startswith("/") else None


def is_fused(op: str, name: str) -> bool:
    """A node that runs several source layers: a Fused* op, a TensorRT "a + b" layer, or an
    ONNX Runtime node that computes another op's output (a Conv named after the Relu it absorbed)."""
    if _base(op).startswith("fused") or " + " in (name or ""):
        return True
    if _quant_named(name):  # a quantiser's node is named after the layer it quantises, not fused into it
        return False
    clean = (name or "").removeprefix("fused ")
    if clean.startswith("/"):
        named = _onnx_parts(clean)[1]
        return named is not None and op_class(named) != op_class(op)
    return False


def layer_path(name: str, op: str) -> str | None:
    """The source model's layer path in a framework's node name (None: the name has none)."""
    if not name or re.match(r"^[\w:]+#\d+$", name):  # TorchScript op without a module scope
        return None
    name = name.removeprefix("fused ")
    if " + " in name:  # TensorRT fused layer
        name = name.split(" + ")[0].strip()
    if name.startswith("/"):  # ONNX exported from torch: /scope/scope.sub/.../OpType[_n]
        parts, _ = _onnx_parts(name)
        path = ""
        for p in parts:
            path = p if not path or p.startswith(path + ".") else f"{path}.{p}"
        return path or None
    if "/" in name:  # TensorFlow / TFLite: scope/layer/OpName
        head, _, tail = name.rpartition("/")
        return head if _ONNX_OP_PART.match(tail.split(";")[0]) else name.split(";")[0]
    return name


def annotate(profile: dict) -> dict:
    """Add each layer row's "path", "class" and "fused" (what the dashboard matches by)."""
    for row in profile.get("layers") or []:
        row["path"] = layer_path(row.get("name"), row.get("op"))
        row["class"] = op_class(row.get("op"))
        row["fused"] = is_fused(row.get("op"), row.get("name"))
    return profile


def _layers(profile: dict) -> list[dict]:
    out = []
    for row in sorted(profile.get("layers") or [], key=lambda r: r.get("order", 0)):
        out.append({**row, "path": layer_path(row.get("name"), row.get("op")), "class": op_class(row.get("op")),
                    "fused_op": is_fused(row.get("op"), row.get("name"))})
    return out


def _match_pair(ref: list[dict], other: list[dict]) -> dict[int, int]:
    """{ref index: other index} (passes 1 and 2)."""
    pairs: dict[int, int] = {}
    index: dict[tuple, list[int]] = {}
    for j, row in enumerate(other):
        if row["path"] is not None:
            index.setdefault((row["path"], row["class"]), []).append(j)
    for i, row in enumerate(ref):
        if row["path"] is None:
            continue
        cands = index.get((row["path"], row["class"]))
        if cands:
            pairs[i] = cands.pop(0)
    taken = set(pairs.values())
    for cls in {r["class"] for r in ref}:
        left_ref = [i for i, r in enumerate(ref) if i not in pairs and r["class"] == cls]
        left_other = [j for j, r in enumerate(other) if j not in taken and r["class"] == cls]
        if left_ref and len(left_ref) == len(left_other):
            for i, j in zip(left_ref, left_other):
                pairs[i] = j
                taken.add(j)
    return pairs


def _fusions(a: list[dict], b: list[dict], pairs: dict[int, int]) -> dict[int, list[int]]:
    """{index in a of a fused matched node: [indices in b it covers besides its partner]}."""
    matched_b = sorted(pairs.values())
    taken = set(matched_b)
    out: dict[int, list[int]] = {}
    for i, j in pairs.items():
        if b[j]["fused_op"]:
            continue
        # a fused node absorbs any elementwise layer; every conv/gemm absorbs a batch norm
        # (inference engines fold it into the weights)
        folds = ELEMENTWISE if a[i]["fused_op"] else ({"batchnorm"} if a[i]["class"] in ("conv", "gemm") else set())
        if not folds:
            continue
        nxt = next((m for m in matched_b if m > j), len(b))
        covered = [k for k in range(j + 1, nxt) if k not in taken and b[k]["class"] in folds]
        if covered:
            out[i] = covered
            taken.update(covered)
    return out


def _cell(row: dict, extra: list[dict]) -> dict:
    ns = row.get("per_query_ns", 0) + sum(e.get("per_query_ns", 0) for e in extra)
    cell = {"name": row.get("name"), "op": row.get("op"), "provider": row.get("provider"), "per_query_ns": ns}
    if extra:
        cell["with"] = [f"{e.get('name')} ({e.get('op')})" for e in extra]
    return cell


def timed(profile: dict) -> bool:
    """Whether a profile has per-layer times (a model-level one lists its ops untimed)."""
    return any(isinstance(l, dict) for l in (profile.get("layers") or []))


def op_inventory(profiles: list[tuple[str, dict]]) -> dict:
    """The ops of every profile by op class, timed or not: {"rows": [{"class", "backends":
    {name: {"ops": count, "median_ns": sum of the class's layer medians or None when
    untimed, "types": {op type: count}}}}], "ops": {name: [{"name", "op", "class"}]}}.
    What a backend without per-op timing (TFLite from Python) can still be compared by."""
    by_class: dict = {}
    ops: dict = {}
    for name, p in profiles:
        is_timed = timed(p)
        listing = [l for l in (p.get("layers") or []) if isinstance(l, dict)] if is_timed else list(p.get("untimed") or [])
        ops[name] = [{"name": o.get("name"), "op": o.get("op"), "class": op_class(o.get("op"))} for o in listing]
        for o in listing:
            cls = op_class(o.get("op"))
            cell = by_class.setdefault(cls, {}).setdefault(name, {"ops": 0, "median_ns": 0 if is_timed else None, "types": {}})
            cell["ops"] += 1
            cell["types"][o.get("op")] = cell["types"].get(o.get("op"), 0) + 1
            if is_timed:
                cell["median_ns"] += o.get("median_ns", o.get("per_query_ns")) or 0
    rows = [{"class": cls, "backends": cells} for cls, cells in by_class.items()]
    rows.sort(key=lambda r: (-max((c["median_ns"] or 0) for c in r["backends"].values()),
                             -max(c["ops"] for c in r["backends"].values()), r["class"]))
    return {"rows": rows, "ops": ops}


def compare_profiles(profiles: list[tuple[str, dict]]) -> dict:
    """Rows of matched layers (the first timed backend is the reference), sorted by the
    largest per-query median difference; the unmatched layers of each backend; the ops of
    every backend by op class (op_inventory: a backend without per-op timing is listed by
    its ops, not left out); a summary."""
    inventory = op_inventory(profiles)
    untimed = [n for n, p in profiles if not timed(p)]
    timed_profiles = [(n, p) for n, p in profiles if timed(p)]
    notes = {n: p.get("note") for n, p in profiles if not timed(p)}
    if len(timed_profiles) < 2:
        summary = {
            "backends": [n for n, _ in profiles], "reference": timed_profiles[0][0] if timed_profiles else None,
            "matched": 0, "layers": {n: len(inventory["ops"][n]) for n, _ in profiles}, "untimed": untimed,
            "unmatched": {}, "fused_rows": 0,
            "model_ns": {n: (p.get("summary") or {}).get("model_ns", {}).get("p50") for n, p in profiles},
            "coverage": {n: (p.get("summary") or {}).get("coverage") for n, p in profiles},
        }
        return {"summary": summary, "rows": [], "unmatched": {}, "ops": inventory, "notes": notes,
                "matching": "no layer times to match: " + ", ".join(untimed) + " record no per-op timing; "
                            "the ops of every backend are listed by op class"}
    out = _match_profiles(timed_profiles)
    out["summary"]["backends"] = [n for n, _ in timed_profiles] + untimed
    out["summary"]["untimed"] = untimed
    for n in untimed:
        out["summary"]["layers"][n] = len(inventory["ops"][n])
        out["summary"]["model_ns"][n] = (dict(profiles)[n].get("summary") or {}).get("model_ns", {}).get("p50")
        out["summary"]["coverage"][n] = None
    out["ops"], out["notes"] = inventory, notes
    return out


def _match_profiles(profiles: list[tuple[str, dict]]) -> dict:
    names = [n for n, _ in profiles]
    tables = [_layers(p) for _, p in profiles]
    ref = tables[0]
    rows: dict[int, dict] = {}
    unmatched: dict[str, list] = {}
    used_ref: set[int] = set()
    ref_absorbed: dict[str, set[int]] = {}
    for k in range(1, len(tables)):
        other = tables[k]
        pairs = _match_pair(ref, other)
        ref_fused = _fusions(ref, other, pairs)                      # a ref node covering several of other's
        inverse = {j: i for i, j in pairs.items()}
        other_fused = _fusions(other, ref, inverse)                  # an other node covering several of ref's
        absorbed_other = {x for xs in ref_fused.values() for x in xs}
        absorbed_ref = {x for xs in other_fused.values() for x in xs}
        ref_absorbed[names[k]] = absorbed_ref
        for i, j in pairs.items():
            rp, op_ = ref[i]["path"], other[j]["path"]
            # a fused node is named after the last layer it absorbed: the partner's path names the layer better
            label = rp if (rp == op_ or not op_ or (rp and not ref[i]["fused_op"])) else op_
            named = _named_op(ref[i]["name"])
            if label == rp and rp and ref[i]["fused_op"] and named and op_class(named) != ref[i]["class"]:
                label = f"{rp} ({named} output)"  # e.g. the Conv that now computes features.1's Relu
            row = rows.setdefault(i, {"layer": label or ref[i]["name"], "class": ref[i]["class"], "backends": {}})
            row["backends"][names[0]] = _cell(ref[i], [ref[x] for x in other_fused.get(j, [])])
            row["backends"][names[k]] = _cell(other[j], [other[x] for x in ref_fused.get(i, [])])
            fused = [f"{names[0]}: {ref[i]['name']} covers " + ", ".join(other[x]["name"] for x in ref_fused[i])] if i in ref_fused else []
            fused += [f"{names[k]}: {other[j]['name']} covers " + ", ".join(ref[x]["name"] for x in other_fused[j])] if j in other_fused else []
            if fused:
                row.setdefault("fused", []).extend(fused)
            used_ref.add(i)
        unmatched[names[k]] = [{"name": other[j]["name"], "op": other[j]["op"], "per_query_ns": other[j].get("per_query_ns", 0)}
                               for j in range(len(other)) if j not in inverse and j not in absorbed_other]
    absorbed_all = set.intersection(*ref_absorbed.values()) if ref_absorbed else set()
    unmatched[names[0]] = [{"name": ref[i]["name"], "op": ref[i]["op"], "per_query_ns": ref[i].get("per_query_ns", 0)}
                           for i in range(len(ref)) if i not in used_ref and i not in absorbed_all]
    out_rows = []
    for i, row in rows.items():
        base = row["backends"][names[0]]["per_query_ns"]
        diffs = {}
        for n in names[1:]:
            cell = row["backends"].get(n)
            if cell is None:
                continue
            cell["ratio"] = round(cell["per_query_ns"] / base, 3) if base else None
            diffs[n] = cell["per_query_ns"] - base
        row["diff_ns"] = max(diffs.values(), key=abs) if diffs else 0
        row["order"] = i
        out_rows.append(row)
    out_rows.sort(key=lambda r: (-abs(r["diff_ns"]), r["order"]))
    summary = {
        "backends": names, "reference": names[0], "matched": len(out_rows),
        "layers": {n: len(t) for n, t in zip(names, tables)},
        "unmatched": {n: len(v) for n, v in unmatched.items()},
        "fused_rows": sum(1 for r in out_rows if r.get("fused")),
        "model_ns": {n: (p.get("summary") or {}).get("model_ns", {}).get("p50") for n, p in profiles},
        "coverage": {n: (p.get("summary") or {}).get("coverage") for n, p in profiles},
    }
    return {"summary": summary, "rows": out_rows, "unmatched": unmatched,
            "matching": "by module path and op class, then by position within an op class; fused nodes absorb the "
                        "elementwise layers they fold in (see docs/profiling.md)"}
