"""shown(text): text from outside (a recipe's script, a probe's output, a file name, a framework's
error) as it may be printed on a terminal: every character that is not printable is written as
its Python escape (``\\r``, ``\\x1b``, ``\\u202e``), so what the user reads is what is there.

Carriage returns, erase-line and cursor movement sequences could otherwise redraw a consent
prompt (the user is shown ``mkdir -p $PREFIX/bin`` while a hidden ``id > ...`` runs after "y"),
and bidi controls could reorder it. Python's str.isprintable() is the rule: control characters
(C0, C1, DEL), format characters (bidi, zero-width) and line/paragraph separators are escaped;
letters of every script, marks, symbols and the ASCII space are kept.
"""
from __future__ import annotations


def shown(text: object) -> str:
    """str(text) with every non-printable character escaped (a newline too: one line stays one line)."""
    text = text if isinstance(text, str) else str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)
