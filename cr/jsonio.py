"""The one JSON reader for everything cr reads from disk or the network.

    data = load_file(path)                       # a meta, recipe, lock, result, manifest
    data = loads(body, "upload from 127.0.0.1")  # bytes or text from anywhere else

Every input may be hostile: the text is bounded in size, the parsed value in nesting depth
(so that nothing later, schema validation or a recursive walk, runs out of stack), and a
file that is not a regular file (a FIFO, a device) is refused without being read. Every
failure is an InvalidJSON (a CRError) naming where the text came from, with line and
column for syntax errors: never RecursionError, MemoryError or a hang.

Standard library only (the runtime child may use it too).
"""
from __future__ import annotations

import json
import os
import stat

from .errors import InvalidMeta

#: deeper than any meta, lock, record or manifest cr writes (they nest < 20 levels)
MAX_DEPTH = 100
#: a meta, recipe, lock or manifest; result records with many inline latencies pass too
MAX_BYTES = 256 * 2**20


class InvalidJSON(InvalidMeta):
    """Text that is not JSON cr accepts: bad syntax, not UTF-8, too deep, too large, not a file."""


def read_file(path, max_bytes: int = MAX_BYTES, where: str | None = None) -> bytes:
    """The bytes of a regular file, at most max_bytes; InvalidJSON otherwise (never blocks on a FIFO)."""
    where = where or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InvalidJSON(f"{where}: file not found") from None
    except OSError as exc:
        raise InvalidJSON(f"{where}: cannot read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidJSON(f"{where}: not a regular file", hint="replace it with a plain JSON file")
        if info.st_size > max_bytes:
            raise InvalidJSON(f"{where}: {info.st_size} bytes, over the limit of {max_bytes}",
                              hint="a file this large is not one cr wrote")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:  # it grew while being read
                raise InvalidJSON(f"{where}: over the limit of {max_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise InvalidJSON(f"{where}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def decode(data: bytes, where: str) -> str:
    """UTF-8 text with universal newlines (as a text-mode read gives), or InvalidJSON."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidJSON(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def loads(data: bytes | str, where: str, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES,
          parse_constant=None):
    """The JSON value of data; InvalidJSON naming where for anything cr does not accept.

    NaN, Infinity and -Infinity (which Python's json accepts, and no JSON standard does)
    are refused unless parse_constant says otherwise.
    """
    if len(data) > max_bytes:
        raise InvalidJSON(f"{where}: {len(data)} bytes, over the limit of {max_bytes}")
    text = decode(data, where) if isinstance(data, (bytes, bytearray)) else data
    try:
        value = json.loads(text, parse_constant=parse_constant or _refuse_constant)
    except json.JSONDecodeError as exc:
        raise InvalidJSON(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except _Constant as exc:
        raise InvalidJSON(f"{where}: invalid JSON: {exc.args[0]} is not a JSON number",
                          hint="write a finite number (or null)") from None
    except RecursionError:
        raise InvalidJSON(f"{where}: invalid JSON: nested deeper than {max_depth} levels") from None
    except MemoryError:
        raise InvalidJSON(f"{where}: invalid JSON: too large to parse here") from None
    check_depth(value, where, max_depth)
    return value


def load_file(path, where: str | None = None, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES):
    """read_file + loads."""
    where = where or str(path)
    return loads(read_file(path, max_bytes, where), where, max_depth, max_bytes)


def check_depth(value, where: str, max_depth: int = MAX_DEPTH) -> None:
    """InvalidJSON when value nests containers deeper than max_depth (walked without recursion)."""
    if not isinstance(value, (dict, list)):
        return
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise InvalidJSON(f"{where}: invalid JSON: nested deeper than {max_depth} levels",
                              hint="no file cr writes nests this deep")
        for child in (node.values() if isinstance(node, dict) else node):
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))


class _Constant(ValueError):
    pass


def _refuse_constant(name: str):
    raise _Constant(name)
