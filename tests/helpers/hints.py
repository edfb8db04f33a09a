"""Hints read from the code (test_hints): every string that becomes a `Hint:` line, and the
`cr ...` commands written in them, checked against the real click command tree.

The placeholder convention (docs/errors.md): a word in capitals (NAME, REF, FILE, UID, KIND:NAME,
action:NAME) stands for a value the user fills in, `...` for more of the same; a value the code
knows is filled in by the code (an f-string), never left as a `<name>` or `{name}`.
"""
from __future__ import annotations

import ast
import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOLE = "\x00"  # where an f-string puts a value the code fills in

# calls whose argument at this position is a hint (besides every hint= keyword)
_HINT_POSITION = {"error": 1, "CRError": 1, "NotFound": 1, "InvalidMeta": 1, "InvalidRef": 1, "RepoError": 1,
                  "StoreError": 1, "Conflict": 1}


@dataclass(frozen=True)
class Hint:
    file: str
    line: int
    text: str  # the hint's literal text, HOLE where the code fills in a value


def _texts(node) -> list[str]:
    """Every literal text an expression can evaluate to (HOLE for the parts computed at run time)."""
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else []
    if isinstance(node, ast.JoinedStr):
        out = [""]
        for part in node.values:
            pieces = _texts(part) if isinstance(part, ast.Constant) else [HOLE]
            out = [a + b for a in out for b in pieces]
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _texts(node.left) or [HOLE], _texts(node.right) or [HOLE]
        return [a + b for a in left for b in right][:16]
    if isinstance(node, ast.IfExp):
        return _texts(node.body) + _texts(node.orelse)
    if isinstance(node, ast.BoolOp):
        return [t for v in node.values for t in _texts(v)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join":
        inner = [t for a in node.args for t in _texts_in(a)]
        return inner or [HOLE]
    return []


def _texts_in(node) -> list[str]:
    """The literal texts inside a generator/list handed to str.join."""
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
        return _texts(node.elt)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [t for e in node.elts for t in _texts(e)]
    return []


def hints(root: Path = ROOT / "cr") -> list[Hint]:
    """Every hint the package can print, read with ast (nothing is imported)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        rel = str(path.relative_to(ROOT))
        for node in ast.walk(tree):
            exprs = []
            if isinstance(node, ast.Call):
                exprs += [k.value for k in node.keywords if k.arg == "hint"]
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                at = _HINT_POSITION.get(name)
                if at is not None and len(node.args) > at:
                    exprs.append(node.args[at])
            elif isinstance(node, ast.Dict):
                exprs += [v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant) and k.value == "hint"]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "hint" for t in targets) and node.value is not None:
                    exprs.append(node.value)
            for expr in exprs:
                for text in _texts(expr):
                    found.append(Hint(rel, expr.lineno, text))
    return found


# Words that follow "cr" in a sentence about cr rather than in a command: any other word
# after "cr " must be one of its commands.
PROSE = frozenset({"may", "runs", "resolves", "writes", "wrote"})

# A command starts at `cr` followed by a word, and ends where the prose goes on.
_START = re.compile(r"(?:^|(?<=[\s(`'\":]))cr (?=[a-z-])")
_END = re.compile(r"\s*(?:;|\)|\(|,|`|&&|\|\||\s(?:or|and|then|to|first|on|in|with|shows|lists|gives|says|resumes)\b"
                  r"|(?<!\.)[.?](?!\.)(?:\s|$)|$|:\s)")


def commands(text: str) -> list[str]:
    """The `cr ...` commands written in a hint's text."""
    out = []
    for m in _START.finditer(text):
        rest = text[m.end():]
        end = _END.search(rest)
        out.append("cr " + rest[: end.start() if end else len(rest)].strip())
    return out


def command_tree():
    """The real click root group, every lazily imported command loaded."""
    from cr.cli.main import cli

    return cli


def check(command: str, cli) -> list[str]:
    """What is wrong with one `cr ...` command: an unknown command or sub-command, an option the
    command does not have, a placeholder outside the convention. Empty when it is right."""
    import click

    words = command.split()[1:]
    problems = []
    if re.search(r"<[^>]*>|\{[^}]*\}", command):
        problems.append("placeholder not in capitals (write NAME, REF, FILE, ...)")
    node, path = cli, ["cr"]
    i = 0
    while isinstance(node, click.Group) and i < len(words) and not words[i].startswith("-"):
        word = words[i]
        if word in ("...", HOLE):
            return problems  # `cr env ... NAME`: a family of commands, named as such
        sub = node.get_command(None, word)
        if sub is None:
            if node is cli and word in PROSE:
                return []  # a sentence about cr ("a file cr wrote"), not a command
            return problems + [f"no command {' '.join(path + [word])!r}"]
        node, path, i = sub, path + [word], i + 1
    if isinstance(node, click.Group):
        return problems + [f"{' '.join(path)} needs a sub-command"]
    names = {o for p in node.params for o in (*p.opts, *p.secondary_opts)} | {"-h", "--help"}
    for word in words[i:]:
        if word == "--":
            break
        if not word.startswith("-") or HOLE in word or word in ("-", "--"):
            continue
        option = word.split("=", 1)[0].rstrip(".,")
        if any(ch in option for ch in "*?"):
            if not fnmatch.filter(names, option):
                problems.append(f"{' '.join(path)} has no option matching {option}")
        elif option not in names and not re.fullmatch(r"-[A-Za-z]{2,}", option):
            problems.append(f"{' '.join(path)} has no option {option}")
        elif re.fullmatch(r"-[A-Za-z]{2,}", option) and not all(f"-{c}" in names for c in option[1:]):
            problems.append(f"{' '.join(path)} has no option {option}")
    return problems
