"""Structural checks of model files, for `cr check`: is this file what its format says?

Each check opens the file's container and reads its framing, and nothing else: no
framework is imported, no graph is run, and nothing is unpickled (a torch file is a zip
archive read with zipfile; its pickles are never loaded: docs/security.md). They catch
what a checksum cannot: a file that was wrong when it was hashed (random bytes, a
truncated download, an HTML error page saved as model.onnx, the wrong file named).

    problem("onnx", Path("m.onnx"))  # -> None, or "not an ONNX model: ..."

Why no onnx.checker: importing onnx costs about a second (and numpy) in every `cr check`,
a command that runs no model; the wire-format scan below reads the same ModelProto
framing (every field of the model and of its graph, to the last byte) in milliseconds.
Loading the model is the backend's job, on `cr validate` or the first benchmark.
"""
from __future__ import annotations

import mmap
import struct
from contextlib import contextmanager
from pathlib import Path

# Field numbers and protobuf wire types (0 varint, 1 64-bit, 2 length-delimited, 5 32-bit)
# of the messages read here, from onnx.proto3 and tensorflow's graph.proto/saved_model.proto.
# Known fields must carry their declared wire type; unknown ones must be well-formed.
_MODEL_PROTO = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}
_ONNX_GRAPH = {1: 2, 2: 2, 5: 2, 10: 2, 11: 2, 12: 2, 13: 2, 14: 2, 15: 2, 16: 2}
_GRAPH_DEF = {1: 2, 2: 2, 3: 0, 4: 2}
_NODE_DEF = {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2}
_SAVED_MODEL = {1: 0, 2: 2}

# Format names (model meta 'format') to the check that reads them; a file of a format not
# here (trt-plan: an engine only TensorRT can parse) is not checked structurally.
SUFFIXES = {".onnx": "onnx", ".tflite": "tflite", ".pt": "torch", ".pth": "torch", ".pb": "tf-frozen-graph",
            ".keras": "keras", ".h5": "keras"}


# The first pickle torch.save wrote before 1.6 (_use_new_zipfile_serialization=False): its
# magic number 0x1950a86a20f9469cfc6c at protocol 2, compared as bytes, never unpickled.
_LEGACY_TORCH = b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19."


class _Malformed(Exception):
    pass


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end:
            raise _Malformed("a number runs past the end of the file")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise _Malformed("a number is longer than 10 bytes")


def _fields(buf: bytes, start: int, end: int, known: dict[int, int]) -> dict[int, list[tuple[int, int]]]:
    """Every field of the protobuf message in buf[start:end]: {field number: [(start, end)
    of its length-delimited payload, or (pos, pos) for a scalar]}; _Malformed unless the
    bytes are exactly a sequence of well-formed fields, each known one of its wire type."""
    out: dict[int, list[tuple[int, int]]] = {}
    pos = start
    while pos < end:
        at = pos
        key, pos = _varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _Malformed(f"field number 0 at byte {at}")
        if number in known and known[number] != wire:
            raise _Malformed(f"field {number} at byte {at} has wire type {wire}, expected {known[number]}")
        if wire == 0:
            _, pos = _varint(buf, pos, end)
            span = (pos, pos)
        elif wire == 1 or wire == 5:
            pos += 8 if wire == 1 else 4
            span = (pos, pos)
        elif wire == 2:
            length, pos = _varint(buf, pos, end)
            span = (pos, pos + length)
            pos += length
        else:  # groups (3, 4) are in none of these messages; 6 and 7 do not exist
            raise _Malformed(f"wire type {wire} at byte {at}")
        if pos > end:
            raise _Malformed(f"field {number} at byte {at} runs past the end of the file")
        out.setdefault(number, []).append(span)
    return out


@contextmanager
def _mapped(path: Path):
    """The file's bytes, mapped read-only (an ONNX file may be 2 GB: never copied whole)."""
    with open(path, "rb") as f:
        if f.seek(0, 2) == 0:
            yield b""
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            yield buf


def _onnx(path: Path) -> str | None:
    with _mapped(path) as buf:
        return _onnx_bytes(buf)


def _onnx_bytes(buf) -> str | None:
    what = "not an ONNX model: the file is not a protobuf ModelProto"
    if not len(buf):
        return f"{what} (the file is empty)"
    try:
        model = _fields(buf, 0, len(buf), _MODEL_PROTO)
    except _Malformed as exc:
        return f"{what} ({exc}: random bytes, or truncated?)"
    if 7 not in model:
        return f"{what} (it has no graph)"
    if 1 not in model:
        return f"{what} (it has no ir_version)"
    start, end = model[7][-1]
    try:
        graph = _fields(buf, start, end, _ONNX_GRAPH)
    except _Malformed as exc:
        return f"not an ONNX model: its graph is not a protobuf GraphProto ({exc})"
    if 1 not in graph:
        return "not an ONNX model: its graph has no nodes"
    return None


def _graph_def(buf: bytes, start: int, end: int, what: str) -> str | None:
    try:
        graph = _fields(buf, start, end, _GRAPH_DEF)
        if 1 not in graph:
            return f"{what} (it has no nodes)"
        for s, e in graph[1][:16]:  # the first nodes: each must name its op
            if 2 not in _fields(buf, s, e, _NODE_DEF):
                return f"{what} (a node names no op)"
    except _Malformed as exc:
        return f"{what} ({exc}: random bytes, or truncated?)"
    return None


def _frozen_graph(path: Path) -> str | None:
    with _mapped(path) as buf:
        return _graph_def(buf, 0, len(buf), "not a TensorFlow frozen graph: the file is not a protobuf GraphDef")


def _savedmodel(path: Path) -> str | None:
    pb = path / "saved_model.pb" if path.is_dir() else path
    if not pb.is_file():
        return "not a SavedModel: the directory holds no saved_model.pb"
    with _mapped(pb) as buf:
        return _saved_model_bytes(buf)


def _saved_model_bytes(buf) -> str | None:
    what = "not a SavedModel: saved_model.pb is not a protobuf SavedModel"
    try:
        saved = _fields(buf, 0, len(buf), _SAVED_MODEL)
    except _Malformed as exc:
        return f"{what} ({exc}: random bytes, or truncated?)"
    if 2 not in saved:
        return f"{what} (it has no meta graph)"
    return None


def _tflite(path: Path) -> str | None:
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8 or head[4:8] != b"TFL3":
            return "not a TFLite model: no TFL3 file identifier at bytes 4..8 (random bytes?)"
        root = struct.unpack("<I", head[:4])[0]
        if root < 8 or root % 4 or root + 4 > size:
            return f"not a TFLite model: its root table offset {root} is outside the file ({size} bytes; truncated?)"
        f.seek(root)
        vtable = root - struct.unpack("<i", f.read(4))[0]
        if vtable < 0 or vtable + 4 > size:
            return f"not a TFLite model: its root table's vtable offset {vtable} is outside the file (truncated?)"
        f.seek(vtable)
        vsize, tsize = struct.unpack("<HH", f.read(4))
        if vsize < 4 or vsize % 2 or vtable + vsize > size or root + tsize > size:
            return "not a TFLite model: its root table's vtable is malformed (truncated?)"
    return None


def _torch_zip(path: Path, fmt: str) -> str | None:
    import zipfile  # here: ~8 ms of import that `cr new` (this module's other users) need not pay
    what = "not a TorchScript archive" if fmt == "torchscript" else "not a torch file"
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as f:
            if fmt != "torchscript" and f.read(len(_LEGACY_TORCH)) == _LEGACY_TORCH:
                return None  # torch.save before 1.6: a pickle stream, recognised by its magic number only
        return (f"{what}: the file is not a zip archive (random bytes or truncated? torch.save and "
                "torch.jit.save write zip archives; cr check never unpickles a file)")
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        return f"{what}: the zip archive is damaged ({exc})"
    # torch writes every entry under one folder (<name>/data.pkl, <name>/data/0, ...)
    roots = {n.split("/", 1)[0] for n in names if "/" in n}
    if len(roots) != 1:
        return f"{what}: expected every entry under one folder, found {len(roots)}"
    root = roots.pop()
    if f"{root}/data.pkl" not in names:
        return f"{what}: the archive has no {root}/data.pkl"
    if fmt == "torchscript":
        if f"{root}/constants.pkl" not in names or not any(n.startswith(f"{root}/code/") for n in names):
            return f"{what}: the archive has no {root}/constants.pkl and {root}/code/ (a torch.save file, not torch.jit.save?)"
    return None


def _keras(path: Path) -> str | None:
    import zipfile
    with open(path, "rb") as f:
        head = f.read(8)
    if head == b"\x89HDF\r\n\x1a\n":
        return None
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            if "config.json" in zf.namelist():
                return None
        return "not a Keras model: the zip archive has no config.json"
    return "not a Keras model: neither a .keras zip archive nor an HDF5 file (random bytes?)"


_CHECKS = {
    "onnx": _onnx,
    "tflite": _tflite,
    "torchscript": lambda p: _torch_zip(p, "torchscript"),
    "torch-state-dict": lambda p: _torch_zip(p, "torch-state-dict"),
    "torch": lambda p: _torch_zip(p, "torch"),
    "tf-frozen-graph": _frozen_graph,
    "savedmodel": _savedmodel,
    "keras": _keras,
}


def checked_format(fmt: str, path: Path) -> str | None:
    """The structural check that applies to a file declared as fmt: the format's own, else
    the one its suffix names; None when there is none (the file is not judged)."""
    if fmt in _CHECKS:
        return fmt
    return SUFFIXES.get(Path(path).suffix.lower())


def problem(fmt: str, path: Path) -> str | None:
    """What is structurally wrong with the model file at path, declared as format fmt,
    or None (also when no check applies: see checked_format)."""
    which = checked_format(fmt, path)
    if which is None:
        return None
    path = Path(path)
    if which != "savedmodel" and not path.is_file():
        return "not a file"
    try:
        return _CHECKS[which](path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
