"""The one JSON reader for everything cr reads from disk or the network.

    data = load_file(path)                       # a meta, recipe, lock, result, manifest
    data = loads(body, "upload from 127.0.0.1")  # bytes or text from anywhere else

Every input may be hostile: the text is bounded in size, the parsed value in nesting depth
(so that nothing later, schema validation or a recursive walk, runs out of stack), and a
file that is not a regular file (a FIFO, a device, a socket) is refused without being
read (and, when that can be told from its path, without being opened). Every failure is an
InvalidJSON (a CRError) naming where the text came from, with line and column for syntax
errors: never RecursionError, MemoryError, ValueError or a hang. NaN and Infinity, which
Python's json reads and writes but no JSON standard allows, are refused: cr writes none.
So are strings holding a lone surrogate ("\\ud800"): not Unicode text, they cannot be
encoded as UTF-8 (SQLite, a terminal, a file would fail on them later).

Standard library only (the runtime child and the dashboard's workers may use it too).
"""
from __future__ import annotations

import json
import os
import re
import stat

from .errors import InvalidMeta

#: deeper than any meta, lock, record or manifest cr writes (they nest < 20 levels)
MAX_DEPTH = 100
#: a meta, recipe, lock or manifest; result records with many inline latencies pass too
MAX_BYTES = 256 * 2**20

SYNTAX_HINT = "fix the JSON syntax (a trailing comma or a missing quote is the usual cause)"
DEPTH_HINT = "no file cr writes nests this deep"


class InvalidJSON(InvalidMeta):
    """Text that is not JSON cr accepts: bad syntax, not UTF-8, too deep, too large, not a file."""


class MissingFile(InvalidJSON):
    """The file to read does not exist (callers that treat 'gone' apart from 'bad' catch this)."""


def file_type(mode: int) -> str:
    """What a stat mode is, in words ('a FIFO', 'a directory', ...)."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def not_regular(where: str, mode: int) -> InvalidJSON:
    """The InvalidJSON for a path that is not a regular file (a FIFO named meta.json, say)."""
    kind = file_type(mode)
    what = "not a regular file" if kind == "not a regular file" else f"not a regular file ({kind})"
    return InvalidJSON(f"{where}: {what}", hint="replace it with a plain JSON file")


def read_file(path, max_bytes: int = MAX_BYTES, where: str | None = None) -> bytes:
    """The bytes of a regular file, at most max_bytes; InvalidJSON otherwise (never blocks on a FIFO).

    A path that is not a regular file is refused before it is opened (opening a device can
    have effects); what is opened is opened non-blocking and checked again, so a FIFO
    swapped in between is refused too. MissingFile when there is nothing at path.
    """
    where = where or str(path)
    try:
        before = os.stat(path)
        if not stat.S_ISREG(before.st_mode):
            raise not_regular(where, before.st_mode)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise MissingFile(f"{where}: file not found") from None
    except OSError as exc:
        raise InvalidJSON(f"{where}: cannot read ({exc.strerror or exc})") from None
    except ValueError as exc:  # a path with a NUL byte
        raise InvalidJSON(f"{where}: cannot read ({exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise not_regular(where, info.st_mode)
        if info.st_size > max_bytes:
            raise InvalidJSON(f"{where}: {info.st_size} bytes, over the limit of {max_bytes}",
                              hint="a file this large is not one cr wrote")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, max(info.st_size + 1, 1 << 16) if not chunks else 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:  # it grew while being read
                raise InvalidJSON(f"{where}: over the limit of {max_bytes} bytes")
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
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


class _Constant(ValueError):
    pass


def _refuse_constant(name: str):
    raise _Constant(name)


# One decoder for every call (json.loads with a keyword builds a new one each time).
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


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
        if parse_constant is None:
            value = _DECODER.decode(text)
        else:
            value = json.loads(text, parse_constant=parse_constant)
    except json.JSONDecodeError as exc:
        raise InvalidJSON(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
                          hint=SYNTAX_HINT) from None
    except _Constant as exc:
        raise InvalidJSON(f"{where}: invalid JSON: {exc.args[0]} is not a JSON number",
                          hint="write a finite number (or null)") from None
    except RecursionError:
        raise InvalidJSON(f"{where}: invalid JSON: nested deeper than {max_depth} levels", hint=DEPTH_HINT) from None
    except MemoryError:
        raise InvalidJSON(f"{where}: invalid JSON: too large to parse here") from None
    except ValueError as exc:  # an integer of more digits than int() converts (sys.set_int_max_str_digits)
        raise InvalidJSON(f"{where}: invalid JSON: {exc}") from None
    if may_nest_deeper(text, max_depth):
        check_depth(value, where, max_depth)
    if "\\" in text and _SURROGATE_ESCAPE.search(text):  # one memchr for most texts
        _check_surrogates(value, where)
    return value


# a \\uXXXX escape of a surrogate; json pairs a high and a low one into one character and
# leaves any other as a lone surrogate in the string
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_surrogates(value, where: str) -> None:
    """InvalidJSON when a string (a key or a value) in value holds a lone surrogate."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            strings = [k for k in node if isinstance(k, str)]
            children = node.values()
        else:
            strings, children = [], node if isinstance(node, list) else (node,)
        for child in children:
            if isinstance(child, str):
                strings.append(child)
            elif isinstance(child, (dict, list)):
                stack.append(child)
        for string in strings:
            found = _SURROGATE.search(string)
            if found:
                raise InvalidJSON(f"{where}: invalid JSON: a string holds the lone surrogate \\u{ord(found.group()):04x}, "
                                  "which is not Unicode text", hint="write the character itself, or both halves of its surrogate pair")


def may_nest_deeper(text: bytes | str, max_depth: int = MAX_DEPTH) -> bool:
    """False when text certainly holds no value nested deeper than max_depth: it has at
    most max_depth opening brackets (a cheap bound, so that most texts need no walk)."""
    if len(text) <= 2 * max_depth:  # each level takes an opening and a closing bracket
        return False
    if isinstance(text, str):
        return text.count("[") + text.count("{") > max_depth
    return text.count(b"[") + text.count(b"{") > max_depth


def load_file(path, where: str | None = None, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES):
    """read_file + loads."""
    where = where or str(path)
    return loads(read_file(path, max_bytes, where), where, max_depth, max_bytes)


def check_depth(value, where: str, max_depth: int = MAX_DEPTH) -> None:
    """InvalidJSON when value nests containers deeper than max_depth (walked without recursion)."""
    containers = (dict, list)
    level = [value] if isinstance(value, containers) else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            raise InvalidJSON(f"{where}: invalid JSON: nested deeper than {max_depth} levels", hint=DEPTH_HINT)
        below = []
        for node in level:
            for child in (node.values() if isinstance(node, dict) else node):
                if isinstance(child, containers):
                    below.append(child)
        level = below
