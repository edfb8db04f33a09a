"""Host paths out of the records an archive carries.

The lock and the reference results are records of a run on the packing machine: they
name its interpreter, the locations and prefixes of its software, the model file it read,
CR_HOME, the home directory... None of that means anything elsewhere (`cr reproduce`
compares versions, metrics and pipelines, never paths), and an archive is shared. So
`cr pack` stores copies in which every host path is replaced by HOST_PATH:

- a string that is an absolute path as a whole (`/...`, `~/...`, `C:\\...`, `\\\\server\\...`);
- inside other text (an error message, a traceback tail): every absolute path, and
  anything under a directory of this host (CR_HOME, the home directory, the interpreter's
  prefixes, the working directory, the shipped data, the components' repositories),
  e.g. `file:///home/me/x`.

The result depends only on the record and these directories, so packing twice gives the
same bytes, and scrubbing a scrubbed record changes nothing (an archive unpacked and
packed again is the same file).
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

#: what a host path becomes (not a path: nothing tries to open it, and it is never scrubbed again)
HOST_PATH = "<host path>"

# characters that end a path inside text (quotes, brackets, separators of lists)
_STOP = r"\s'\"<>()\[\]{},;"
_WHOLE = re.compile(r"^(?:/|~/|~$|[A-Za-z]:[\\/]|\\\\)\S*$")
_IN_TEXT = re.compile(
    rf"(?<![\w.~/\\:>-])/[^{_STOP}/][^{_STOP}]*"  # /a/b, not a/b, GNU/Linux, https://x/y, 1/255
    rf"|(?<![\w])[A-Za-z]:\\[^{_STOP}]*"          # C:\\x
    rf"|(?<![\w])~/[^{_STOP}]*"                   # ~/x
)


class Scrubber:
    """scrub(value) -> the same JSON value with every host path replaced by HOST_PATH."""

    def __init__(self, roots=()):
        found = set()
        for root in [*roots, *host_roots()]:
            for form in _forms(root):
                if len(form) > 1 and form not in ("/", "\\"):
                    found.add(form.rstrip("/\\") or form)
        # longest first: CR_HOME before the home directory that holds it
        self._roots = sorted(found, key=lambda r: (-len(r), r))
        self._root_re = (
            re.compile("|".join(rf"{re.escape(r)}(?![^{_STOP}/\\\\])[^{_STOP}]*" for r in self._roots))
            if self._roots else None
        )

    def text(self, value: str) -> str:
        if _WHOLE.match(value):
            return HOST_PATH
        if self._root_re is not None:
            value = self._root_re.sub(HOST_PATH, value)
        return _IN_TEXT.sub(HOST_PATH, value)

    def __call__(self, value):
        """The scrubbed copy of a JSON value (walked without recursion: records may nest deep)."""
        out: list = [None]
        stack = [(value, out, 0)]
        while stack:
            node, holder, key = stack.pop()
            if isinstance(node, dict):
                copy: dict = {}
                holder[key] = copy
                for k, v in node.items():
                    k2 = self.text(k) if isinstance(k, str) else k
                    if k2 in copy:  # two keys that were host paths: keep both, distinctly
                        k2 = k
                    copy[k2] = None
                    stack.append((v, copy, k2))
            elif isinstance(node, list):
                copy_l: list = [None] * len(node)
                holder[key] = copy_l
                for i, v in enumerate(node):
                    stack.append((v, copy_l, i))
            elif isinstance(node, str):
                holder[key] = self.text(node)
            else:
                holder[key] = node
        return out[0]


def host_roots() -> list[str]:
    """The directories of this host whose paths must not travel."""
    from ..paths import cr_home

    roots: list = [os.path.expanduser("~"), os.environ.get("HOME"), sys.prefix, sys.base_prefix, sys.exec_prefix,
                   os.path.dirname(sys.executable), Path(__file__).resolve().parents[2]]  # where cr itself is
    for fn in (cr_home, os.getcwd):
        try:
            roots.append(fn())
        except (OSError, RuntimeError, ValueError):
            continue
    return [str(r) for r in roots if r]


def _forms(root) -> set[str]:
    """A directory as given, absolute and with its symbolic links resolved."""
    text = str(root)
    forms = {text}
    try:
        forms.add(os.path.abspath(text))
        forms.add(str(Path(text).resolve()))
    except (OSError, RuntimeError, ValueError):
        pass
    return {f for f in forms if os.path.isabs(f)}
