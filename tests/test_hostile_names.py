"""Hostile names and hostile recipes, locks and probes (docs/security.md "Hostile input never
crashes cr"): what an attacker found after the first round of hardening.

- Names with control characters (C0 and C1), bidi and zero-width characters, Windows device
  names (CON, con.txt) and a trailing dot or space are refused everywhere a name becomes a
  file: cr new, a meta in a registered repository (an invalid component, with a warning;
  the search goes on), cr-repo.json, archive members; tags and versions too.
- A detect probe that prints 400 MB, and a regex that backtracks for ever, cost bounded
  memory and time.
- Recipes and locks that are valid JSON (the recipes even schema-valid) but odd in every
  other way are one Error: line (or a warning, for detection), never a traceback: a seeded
  fuzz loop plus hand-written cases.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import re
import secrets
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, _env, make_repo, write_json

BAD_NAMES = ["a\u202eb", "a\u200bb", "a\x85b", "CON", "con.txt", "name.", "name "]


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real `cr` CLI in a child (CR_HOME is the test's, set by conftest)."""
    return subprocess.run([sys.executable, "-m", "cr", *map(str, args)], capture_output=True, text=True,
                          env=_env(), timeout=timeout)


def one_error(done, *expected: str) -> str:
    """done failed with exit 1 and one `Error:` line (plus its Hint) holding every expected text."""
    assert done.returncode == 1, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, done.stderr
    for text in expected:
        assert text in errors[0], (text, errors[0])
    return errors[0]


# -- names --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", BAD_NAMES)
def test_cr_new_refuses_the_name(name):
    line = one_error(cli("new", "model", name), "component name", repr(name))
    assert name not in line or name.isprintable()  # shown escaped, never raw


@pytest.mark.parametrize("name", ["a\u202eb", "a\x85b", "CON", "con.txt", "aux", "Lpt1.log", "com9", "name.", "name ",
                                  "name\n", "a\u2028b", "a\ue000b", "a\u0378b"])
def test_check_name_refuses_and_says_why(name):
    from cr.errors import InvalidRef
    from cr.store.refs import check_name

    with pytest.raises(InvalidRef) as exc:
        check_name(name)
    assert repr(name) in exc.value.message and exc.value.hint
    assert "\n" not in exc.value.message


def test_the_name_pattern_is_the_schemas_and_keeps_every_shipped_name_valid():
    from cr.store import meta as meta_mod
    from cr.store.refs import NAME_PATTERN, check_name, parse_version

    schemas = Path(meta_mod.__file__).parent / "schemas"
    assert json.loads((schemas / "common.json").read_text())["properties"]["name"]["pattern"] == NAME_PATTERN
    assert json.loads((schemas / "repo.json").read_text())["properties"]["name"]["pattern"] == NAME_PATTERN
    tag = re.compile(json.loads((schemas / "common.json").read_text())["properties"]["tags"]["items"]["pattern"])
    shipped = 0
    for path in [*ROOT.glob("repo/**/meta.json"), *ROOT.glob("recipes/*/recipe.json"), *ROOT.glob("actions/*/meta.json"),
                 *ROOT.glob("*/cr-repo.json")]:
        meta = json.loads(path.read_text())
        check_name(meta["name"])
        parse_version(meta["version"])
        assert all(tag.search(t) for t in meta.get("tags", [])), path
        shipped += 1
    assert shipped > 20


@pytest.mark.parametrize("value", ["1.0\x85", "1.0\u2028", "1.0 ", "1.0+\u212a", "1.0\u200b"])
def test_odd_versions_are_refused(value):
    from cr.errors import InvalidRef
    from cr.store.refs import parse_ref, parse_version

    with pytest.raises(InvalidRef, match="invalid version"):
        parse_version(value)
    if value.strip(" ") == value:  # blanks around a reference are only trimmed
        with pytest.raises(InvalidRef):
            parse_ref(f"model:x@{value}")


@pytest.mark.parametrize("tag", ["name.", "a\u202eb", "x-"])
def test_odd_tags_are_refused(tag):
    one_error(cli("new", "model", "tagged", "--tags", tag), "/tags/0")


@pytest.mark.parametrize("field,value", [("tags", ["edge\n"]), ("tags", ["edge."]), ("name", "lenet\n"), ("version", "1.0\x85")])
def test_the_schema_refuses_a_trailing_newline_and_odd_characters(field, value):
    from cr.store.meta import validate

    meta = {"uid": "0123456789abcdef", "kind": "model", "name": "lenet", "version": "1.0.0", "tags": [], field: value}
    assert [p.pointer.split("/")[1] for p in validate(meta)] == [field]


def test_a_meta_with_a_bad_name_is_an_invalid_component_and_search_goes_on(tmp_path):
    repo = make_repo(tmp_path / "team", "team")
    for i, name in enumerate([*BAD_NAMES, "name\n"]):
        write_json(repo / "model" / name / "1.0.0" / "meta.json",
                   {"uid": f"{i:016x}", "kind": "model", "name": name, "version": "1.0.0", "tags": []})
    write_json(repo / "model" / "good" / "1.0.0" / "meta.json",
               {"uid": "00000000000000ff", "kind": "model", "name": "good", "version": "1.0.0", "tags": []})
    assert cli("repo", "add", repo).returncode == 0
    done = cli("find", "model", "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "model:good@1.0.0" in [c["ref"] for c in json.loads(done.stdout)]
    assert not any(c["name"] in BAD_NAMES for c in json.loads(done.stdout))
    for name in ("CON", "con.txt", "name.", "name "):
        assert f"/model/{name}/1.0.0/meta.json: /name:" in done.stderr, (name, done.stderr)
    assert done.stderr.count("Warning: skipped invalid component") == len(BAD_NAMES) + 1, done.stderr


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_repository_with_a_bad_name_is_refused(tmp_path, name):
    repo = make_repo(tmp_path / "r", name)
    one_error(cli("repo", "add", repo), "cr-repo.json", "/name")
    one_error(cli("repo", "init", tmp_path / "other", "--name", name), repr(name))


# Archives: crafted like tests/test_archive.py, one member with a bad name, listed everywhere.
SOL = {"uid": "00112233445566aa", "kind": "solution", "name": "evil-sol", "version": "1.0.0", "tags": [], "files": {}}
ARCHIVE_REPO = {"name": "evil-sol-1.0.0", "uid": "00112233445566bb", "version": "1.0.0"}


def craft_archive(path: Path, member: str) -> Path:
    sol = dict(SOL, files={member: hashlib.sha256(b"x").hexdigest()})
    members = [("cr-repo.json", json.dumps(ARCHIVE_REPO).encode()), ("solution/evil-sol/1.0.0/meta.json", json.dumps(sol).encode()),
               (f"solution/evil-sol/1.0.0/{member}", b"x")]
    manifest = {
        "format": 1, "created_by": "tests", "repo": "evil-sol-1.0.0",
        "solution": {"ref": "solution:evil-sol@1.0.0", "name": "evil-sol", "version": "1.0.0", "uid": SOL["uid"]},
        "components": [{"ref": "solution:evil-sol@1.0.0", "uid": SOL["uid"], "path": "solution/evil-sol/1.0.0"}],
        "excluded": [], "lock": None, "results": [],
        "files": [{"path": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()} for n, d in members],
    }
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in [*members, ("manifest.json", json.dumps(manifest).encode())]:
            info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            info.create_system, info.external_attr = 3, 0o100644 << 16
            zf.writestr(info, data)
    return path


@pytest.mark.parametrize("member", [*BAD_NAMES, "sub/Nul.tar.gz/x", "dir./x", "what?.txt", "a\u2029b"])
def test_unpack_refuses_a_member_with_a_bad_name(tmp_path, cr_home, member):
    from cr.archive import unpack
    from cr.archive.format import ArchiveError

    archive = craft_archive(tmp_path / "evil-sol-1.0.0.cr.zip", member)
    with pytest.raises(ArchiveError) as exc:
        unpack(archive, tmp_path / "into")
    assert repr(f"solution/evil-sol/1.0.0/{member}") in exc.value.message
    assert not (tmp_path / "into").exists()


def test_unpack_cli_names_the_member_escaped(tmp_path, cr_home):
    archive = craft_archive(tmp_path / "evil-sol-1.0.0.cr.zip", "notes\u202etxt.exe")
    line = one_error(cli("unpack", archive), "refused evil-sol-1.0.0.cr.zip", "U+202E")
    assert "\u202e" not in line


def test_the_same_archive_with_a_plain_name_unpacks(tmp_path, cr_home):
    from cr.archive import unpack

    unpack(craft_archive(tmp_path / "evil-sol-1.0.0.cr.zip", "notes.txt"), tmp_path / "into")
    assert (tmp_path / "into" / "solution" / "evil-sol" / "1.0.0" / "notes.txt").read_bytes() == b"x"


# -- probes that print too much or match for ever -------------------------------------------

def recipe_repo(tmp_path: Path, *recipes: dict) -> Path:
    """A trusted directory repository of recipes, registered with `cr repo add`."""
    repo = make_repo(tmp_path / "probes", "probes", layout="name", kind="software", meta_file="recipe.json")
    for r in recipes:
        write_json(repo / r["name"] / "recipe.json", {"uid": secrets.token_hex(8), "kind": "software", "version": "1.0.0", **r})
    assert cli("repo", "add", repo).returncode == 0
    return repo


def sh_probe(script: str, regex: str, **extra) -> dict:
    return {"type": "executable", "names": ["/bin/sh"], "args": ["-c", script], "regex": regex, **extra}


# Runs the CLI in a child and writes its /proc/self/status when it exits: VmHWM is the peak
# resident memory of that process, whatever happened before.
_MEASURED = """
import atexit, sys
out = sys.argv[1]
def done():
    with open(out, "w") as f:
        f.write(open("/proc/self/status").read())
atexit.register(done)
from cr.cli.main import main
main(sys.argv[2:])
"""


def measured(tmp_path: Path, *args: str, timeout: float) -> tuple[subprocess.CompletedProcess, float, int]:
    status = tmp_path / "status.txt"
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _MEASURED, str(status), *args], capture_output=True, text=True,
                          env=_env(), timeout=timeout)
    elapsed = time.monotonic() - start
    hwm = int(re.search(r"^VmHWM:\s+(\d+) kB", status.read_text(), re.M).group(1)) * 1024
    return done, elapsed, hwm


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_a_probe_printing_400_mb_is_cut_with_bounded_memory_and_time(tmp_path):
    recipe_repo(tmp_path, {"name": "loud", "detect": [sh_probe("yes | head -c 400000000", r"loud (\d+\.\d+)")]},
                {"name": "quiet", "detect": [sh_probe("echo quiet 2.5.1", r"quiet (\S+)")]})
    done, elapsed, hwm = measured(tmp_path, "detect", "software", "loud", "quiet", "--timeout", "5", "--json", timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert elapsed < 5 + 5, elapsed
    assert hwm < 200 * 2**20, f"peak RSS {hwm / 2**20:.0f} MiB"
    assert [(e["name"], e["version"]) for e in json.loads(done.stdout)] == [("quiet", "2.5.1")]
    assert any("loud" in line and "64 KiB" in line for line in done.stderr.splitlines() if line.startswith("Warning: ")), done.stderr


def test_a_backtracking_regex_on_a_long_line_finishes_within_the_timeout(tmp_path):
    # (a+)+$ on 100,000 a's and a b backtracks for ever on the whole line; each line is cut
    # to 4 KiB before the regex sees it, and the regex runs where it can be stopped.
    long_line = "head -c 100000 /dev/zero | tr '\\0' a; echo b"
    recipe_repo(tmp_path, {"name": "longline", "detect": [sh_probe(long_line, "(a+)+$", timeout=3)]},
                {"name": "shortline", "detect": [sh_probe("printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\\n'", "(a+)+$", timeout=2)]},
                {"name": "fine", "detect": [sh_probe("echo fine 1.2.3", r"fine (\S+)")]})
    start = time.monotonic()
    done = cli("detect", "software", "longline", "shortline", "fine", "--json", timeout=60)
    elapsed = time.monotonic() - start
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert elapsed < 3 + 2 + 8, elapsed
    assert [(e["name"], e["version"]) for e in json.loads(done.stdout)] == [("fine", "1.2.3")]
    assert any("shortline" in w and "more than 2 s" in w for w in done.stderr.splitlines()), done.stderr


def test_the_regex_matcher_is_stopped_and_started_again(tmp_path):
    from cr.software.detect import Matcher, MatchFailed

    with Matcher() as matcher:
        start = time.monotonic()
        with pytest.raises(MatchFailed, match="more than 1 s"):
            matcher.match("(a+)+$", re.M, [["a" * 40 + "b"]], 1.0)
        assert time.monotonic() - start < 1 + 11
        (m,) = matcher.match(r"v(?P<version>\S+)", 0, [["tool v1.2"]], 5.0)
        assert m["named"]["version"] == "1.2" and m["first"] == "1.2"
        with pytest.raises(MatchFailed, match="not a valid regular expression"):
            matcher.match("(", 0, [["x"]], 5.0)
        assert matcher.match("x", 0, [[], ["y", "xx"]], 5.0) == [None, {"named": {"version": None, "location": None, "interpreter": None}, "first": "x"}]


def test_python_probe_answers_are_bounded_and_checked(tmp_path, monkeypatch):
    """A module the python probe imports writes on the child's answer channel: over-long
    lines, JSON that is not an object, fields of the wrong type. The scan goes on."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "crnoisy.py").write_text(
        "import os\n"
        "for fd in range(3, 12):\n"
        "    try:\n"
        "        os.write(fd, b'x' * 300000 + b'\\n[1, 2]\\n{\"found\": true, \"version\": 7, \"location\": [1]}\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "__version__ = '1.0'\n")
    (site / "crcalm.py").write_text("__version__ = '2.0'\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    recipe_repo(tmp_path, {"name": "noisy", "detect": [{"type": "python", "module": "crnoisy", "attribute": "__version__"}]},
                {"name": "calm", "detect": [{"type": "python", "module": "crcalm", "attribute": "__version__"}]})
    done = cli("detect", "software", "noisy", "calm", "--json", "--timeout", "5")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert ("calm", "2.0") in [(e["name"], e["version"]) for e in json.loads(done.stdout)]


# -- recipes and locks: a seeded fuzz loop ------------------------------------------------

def run_in_process(*argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the CLI run in this process; an exception that escapes
    the CLI's own error handling (a traceback) fails the test, naming the command."""
    from cr.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue(), err.getvalue()


# cr's own traceback starts a line of its stderr; a probe's output that cr quotes in a
# warning ("it said: 'Traceback (most recent call last):'") is the probe's text, not cr's.
CR_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):", re.M)


def check_outcome(argv, code: int, err: str, case) -> None:
    assert code in (0, 1), (argv, code, err, case)
    assert not CR_TRACEBACK.search(err), (argv, err, case)
    errors = [line for line in err.splitlines() if line.startswith("Error: ")]
    if code == 1 and argv[0] != "check":
        assert len(errors) == 1, (argv, err, case)
    if argv[0] == "check" and code == 1:
        assert errors == [] or len(errors) == 1, (argv, err, case)


ODD = [None, True, False, 0, -1, 2**70, 1.5, 1e308, "", " ", "\x00", "a\x00b", "\u202e", "x\n", "\x85", "a" * 3000,
       [], [1], ["a", 2], [None], [[]], {}, {"a": 1}, {"": ""}, {"A=B": "x"}, {"X": "a\x00b"}, {"X": 1},
       "(", "(a+)+$", "(?P<version>", "[", "{version}", "--index-url=http://x", "-rrequirements.txt", "../../x", "/abs",
       "CON", "1.0\x85", "1.0 ", "v1", "1!2.0", "1.0+local", "01.00", "nan", "1" * 5000, "python_version ~= \"1\"",
       "extra == \"x\"", "python_version > \"abc\"", "\"1\" < \"2\"", "{interpreter}", "@FAKEBIN@/true", "@FAKEBIN@/sh", "-c",
       "software:python@>=3.9", "software:nosuch", "software:fuzzrec@>=99", "model:lenet-digits", "0" * 64, "file"]

PROBE_FIELDS = ["type", "module", "attribute", "distribution", "names", "args", "regex", "globs", "marker", "paths",
                "requires", "timeout", "extra"]
METHOD_FIELDS = ["method", "marker", "packages", "versions", "url", "sha256", "script", "archive", "strip_components",
                 "filename", "requires", "index_url", "no_deps", "extra_index_urls", "hint", "extra"]
LISTY = {"names", "args", "globs", "paths", "requires", "packages", "versions", "extra_index_urls"}


def base_recipe(name: str) -> dict:
    return {
        "uid": "f0f0f0f0f0f0f0f0", "kind": "software", "name": name, "version": "1.0.0", "tags": ["fuzz"],
        "detect": [
            {"type": "executable", "names": ["@FAKEBIN@/sh"], "args": ["-c", "echo fuzzrec 1.2.3"], "regex": r"fuzzrec (\S+)", "timeout": 3},
            {"type": "library", "globs": ["libcrfuzz-none.so.*"]},
            {"type": "python", "module": "crfuzz_absent_module", "attribute": "__version__"},
        ],
        "install": [
            {"method": "pip", "packages": ["crfuzz-absent=={version}"], "versions": ["1.0.0", "2.0"]},
            {"method": "script", "script": "exit 1", "versions": ["3.0"]},
            {"method": "download", "url": "https://example.invalid/crfuzz-{version}.tar.gz", "sha256": "0" * 64, "versions": ["4.0"]},
            {"method": "apt", "packages": ["crfuzz-absent"], "versions": ["5.0"]},
        ],
        "deps": [], "env": {"CRFUZZ_HOME": "{prefix}"}, "files": {},
    }


# Values of the type the schema asks for, odd in every other way: most recipes made of
# them are valid, so they reach detection, resolution and installation.
TYPED = {
    "type": ["python", "executable", "library"],
    "method": ["pip", "apt", "download", "script"],
    "module": ["json", "os.path", "_", "sys", "crfuzz_absent", "a.b.c", "json.decoder"],
    "attribute": ["__name__", "sep", "version_info", "getpid", "__version__", "x.y"],
    "distribution": ["pip", "crfuzz-absent", ["pip", "crfuzz-absent"]],
    "names": [["@FAKEBIN@/sh"], ["{interpreter}"], ["crfuzz-absent"], ["@FAKEBIN@/true", "@FAKEBIN@/false"], [" "],
              ["@FAKEBIN@/traceback"], ["@FAKEBIN@/hang"], ["@FAKEBIN@/megabytes"], ["@FAKEBIN@/not-executable"]],
    "args": [[], ["-c", "echo 1.2.3"], ["-c", "printf 'v1.0\\x85'"], ["-c", "echo ' 1.0 '"], ["-c", "exit 3"],
             ["-c", "echo 99999999999999999999999999.1"], ["--version"], ["-c", "print(1)"], ["-c", "echo \u202e1.0"]],
    "regex": [r"(\S+)", "", "(?P<version>.*)", "(?P<location>.+) (?P<version>.+)", "(?P<interpreter>.*)", "x", "(a+)+$",
              r"(\d)", "^$", "(?P<version>1)(?P<location>)"],
    "globs": [["libc.so.*"], ["@FAKEBIN@/lib/*"], ["crfuzz*"], ["@FAKEBIN@/*/*"], ["relative/*.so"]],
    "paths": [["@FAKEBIN@/*"], ["@FAKEBIN@/t*"], ["relative"], ["@FAKEBIN@/*/*"]],
    "marker": ['python_version >= "3"', 'python_version ~= "1"', 'extra == "x"', 'os_name == "nt"', 'platform_release < "5"'],
    "requires": [["cuda"], ["!cuda"], ["nvidia-gpu", "!x"]],
    "timeout": [1e-9, 0.01, 3600, 0.5, 1e308],
    "packages": [["x=={version}"], ["{version}"], ["a b"], ["x==1", "y==2"]],
    "versions": [["1.0"], ["01.00", "1.0.0"], ["1!2.0"], ["1.0+local"], ["v1"], ["1.0.post0.dev0"], []],
    "url": ["https://example.invalid/x-{version}.tgz", "file:///etc/passwd", "{version}"],
    "sha256": ["0" * 64, {"1.0": "0" * 64}, {"9.9": "1" * 64}],
    "script": ["exit 0", "", "echo $PREFIX"],
    "archive": ["tar", "zip", "file"],
    "strip_components": [0, 3, 10**30],
    "filename": ["x-{version}.bin", ".hidden", "a..b"],
    "index_url": ["https://example.invalid/simple", "{version}"],
    "no_deps": [True, False],
    "extra_index_urls": [[], ["https://example.invalid/simple"]],
    "hint": ["", "try again", "a\tb"],
}


def odd_value(rng: random.Random, field: str | None = None):
    if field in TYPED and rng.random() < 0.6:
        return rng.choice(TYPED[field])
    value = rng.choice(ODD)
    if field in LISTY and rng.random() < 0.5:
        value = [rng.choice(ODD) for _ in range(rng.randint(1, 3))]
    return value


def mutate_recipe(rng: random.Random, recipe: dict) -> dict:
    for _ in range(rng.randint(1, 3)):
        where = rng.random()
        if where < 0.4:
            probes = recipe.get("detect")
            probe = rng.choice(probes) if isinstance(probes, list) and probes else None
            if not isinstance(probe, dict) or rng.random() < 0.05:
                recipe["detect"] = odd_value(rng)
                continue
            field = rng.choice(PROBE_FIELDS)
            if rng.random() < 0.15:
                probe.pop(field, None)
            else:
                probe[field] = odd_value(rng, field)
        elif where < 0.8:
            methods = recipe.get("install")
            method = rng.choice(methods) if isinstance(methods, list) and methods else None
            if not isinstance(method, dict) or rng.random() < 0.05:
                recipe["install"] = odd_value(rng)
                continue
            field = rng.choice(METHOD_FIELDS)
            if rng.random() < 0.15:
                method.pop(field, None)
            else:
                method[field] = odd_value(rng, field)
        elif where < 0.9:
            key = rng.choice(["CRFUZZ_HOME", "PATH", "LD_PRELOAD", "", "A=B", "X\n", "1X"])
            recipe["env"] = {key: odd_value(rng)} if rng.random() < 0.7 else odd_value(rng)
        else:
            field = rng.choice(["deps", "version", "tags", "uid", "files"])
            recipe[field] = odd_value(rng, field) if field != "deps" else [rng.choice(ODD)]
    return recipe


RECIPE_HAND_CASES = [
    # schema-valid, odd where code used to trust it
    {"detect": [{"type": "executable", "names": ["@FAKEBIN@/sh"], "args": ["-c", "echo 1.2.3"], "regex": "(", "timeout": 3}]},
    {"detect": [{"type": "executable", "names": ["@FAKEBIN@/sh"], "args": ["-c", "echo 1.2.3"], "timeout": 1e308}]},
    {"detect": [{"type": "executable", "names": ["@FAKEBIN@/sh"], "args": ["-c", "echo 1.2.3"], "marker": "python_version ~= \"1\""}]},
    {"detect": [{"type": "executable", "names": ["@FAKEBIN@/sh"], "args": ["-c", "printf '\\331\\241.\\331\\242'"], "regex": r"(\d.\d)"}]},
    {"detect": [{"type": "python", "module": "json", "attribute": "__name__"}]},
    {"detect": [{"type": "python", "distribution": "pip"}]},
    {"detect": [{"type": "executable"}, {"type": "library"}]},
    {"detect": [{"type": "library", "globs": ["/*/*/*/*/*/*"], "regex": "(.*)*x$"}]},
    {"install": [{"method": "pip", "versions": ["1.0"]}]},
    {"install": [{"method": "download", "versions": ["1.0"]}]},
    {"install": [{"method": "pip", "packages": ["x=={version}"], "versions": ["1.0"], "marker": "python_version ~= \"1\""}]},
    {"install": [{"method": "pip", "packages": ["--index-url=http://evil"], "versions": ["1.0"]}]},
    {"env": {"A=B": "x"}},
    {"env": {"X": "a\u0000b"}},
    {"detect": [{"type": "executable", "names": ["@FAKEBIN@/sh"], "args": ["a\u0000b"]}]},
    {"deps": ["software:python@>=3.9; python_version ~= \"1\""]},
    {"detect": [{"type": "executable", "names": ["@FAKEBIN@/sh"], "args": ["-c", "printf '1.0 /x\\000y\\n'"],
                 "regex": "(?P<version>\\S+) (?P<interpreter>.*)"}]},
    {"detect": [{"type": "executable", "names": ["@FAKEBIN@/sh"], "args": ["-c", "printf '1.0 /x\\000y\\n'"],
                 "regex": "(?P<version>\\S+) (?P<location>.*)"}]},
]


# The executables fuzzed probes may run: made by the test, never the host's own programs
# (whose output differs from machine to machine: one host's /bin/scp-dbus-service printed a
# Python traceback). Some answer, some print tracebacks, hang, print megabytes or fail.
FAKE_EXECUTABLES = {
    "sh": 'exec /bin/sh "$@"',
    "true": "exit 0",
    "false": "exit 1",
    "say-version": "echo fuzzrec 1.2.3",
    "traceback": ("printf 'Traceback (most recent call last):\\n  File \"x.py\", line 1, in <module>\\nValueError: no\\n'; "
                  "printf 'Traceback (most recent call last):\\n' >&2; exit 1"),
    "hang": "sleep 4",
    "megabytes": "yes fuzzrec 1.2.3 | head -c 3000000",
    "binary": "printf '\\377\\376\\000fuzzrec 1.2.3\\033[2J\\n'",
    "lib/libcrfuzz.so.1.2.3": "exit 0",
    "lib/nested/tool": "echo 9.9",
}


def make_fakebin(folder: Path) -> Path:
    for name, body in FAKE_EXECUTABLES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    (folder / "not-executable").write_text("echo never\n")
    return folder


def fakebin_of(repo: Path) -> Path:
    return repo.parent / "fakebin"


@pytest.fixture
def fuzz_repo(tmp_path, cr_home):
    make_fakebin(tmp_path / "fakebin")
    repo = make_repo(tmp_path / "fuzzrecipes", "fuzzrecipes", layout="name", kind="software", meta_file="recipe.json")
    code, _, err = run_in_process("repo", "add", str(repo))
    assert code == 0, err
    return repo


RECIPE_COMMANDS = (
    ("check", "{path}"),
    ("detect", "software", "{name}", "--timeout", "3"),
    ("resolve", "software:{name}"),
    ("install", "software", "{name}", "--offline"),
)


def run_recipe_case(repo: Path, recipe: dict, case) -> None:
    name = recipe["name"] if isinstance(recipe.get("name"), str) else "fuzzrec"
    path = repo / "fuzzrec" / "recipe.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(recipe).replace("@FAKEBIN@", str(fakebin_of(repo))))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # a new mtime even for a rewrite of the same size
    for template in RECIPE_COMMANDS:
        argv = [part.format(path=path, name=name) for part in template]
        code, _, err = run_in_process(*argv)
        check_outcome(argv, code, err, case)


def recipe_hand_case(repo: str, i: str) -> None:
    recipe = {**base_recipe("fuzzrec"), **RECIPE_HAND_CASES[int(i)]}
    run_recipe_case(Path(repo), recipe, RECIPE_HAND_CASES[int(i)])


def fuzz_recipes(repo: str, seed: str, cases: str) -> None:
    rng = random.Random(int(seed))
    for case in range(int(cases)):
        recipe = mutate_recipe(rng, base_recipe("fuzzrec"))
        run_recipe_case(Path(repo), recipe, (case, recipe))


def in_child(func: str, *args, timeout: float) -> None:
    """Run func(*args) of this module in a child interpreter (CR_HOME is the test's): a
    recipe whose regex or glob never ends (what these tests guard against) then fails the
    test with a timeout instead of hanging it. Its assertion errors are the child's stderr."""
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_hostile_names as t; "
            f"t.{func}(*sys.argv[1:])")
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=_env(),
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-6000:]


@pytest.mark.parametrize("i", range(len(RECIPE_HAND_CASES)))
def test_odd_recipes_written_by_hand(fuzz_repo, i):
    in_child("recipe_hand_case", fuzz_repo, i, timeout=120)


def test_odd_recipes_fuzzed(fuzz_repo):
    in_child("fuzz_recipes", fuzz_repo, 20240611, 200, timeout=600)


def test_a_probe_printing_a_traceback_is_quoted_in_a_warning_not_taken_for_crs_own(fuzz_repo):
    recipe = base_recipe("fuzzrec")
    recipe["detect"] = [{"type": "executable", "names": ["@FAKEBIN@/traceback"], "regex": r"fuzzrec (\S+)", "timeout": 3}]
    run_recipe_case(fuzz_repo, recipe, "traceback probe")  # check_outcome: cr's own output has no traceback
    code, out, err = run_in_process("detect", "software", "fuzzrec", "--timeout", "3", "--json")
    assert code == 0 and json.loads(out) == [], err
    assert "Traceback" in err and not CR_TRACEBACK.search(err), err  # the probe's words, quoted


def raising_detection(repo: str) -> None:
    """The base recipe, whose probe answers, while cr's own version parsing raises (a bug in cr)."""
    import cr.software.detect as detect

    def broken(*_args, **_kw):
        raise RuntimeError("cr itself raised")

    detect._version = broken
    run_recipe_case(Path(repo), base_recipe("fuzzrec"), "cr raises")


def test_the_fuzz_loop_fails_when_cr_itself_raises(fuzz_repo):
    """What the fuzz loop guards: an exception escaping cr fails it (so its passing means something)."""
    with pytest.raises(AssertionError, match="cr itself raised"):
        in_child("raising_detection", fuzz_repo, timeout=120)
    with pytest.raises(AssertionError):
        check_outcome(["detect"], 1, "Traceback (most recent call last):\n  File ...\nRuntimeError: x\n", "cr's own")


def test_an_invalid_recipe_is_one_error_naming_file_and_field(fuzz_repo):
    recipe = base_recipe("fuzzrec")
    recipe["detect"][0]["args"] = "--version"
    path = fuzz_repo / "fuzzrec" / "recipe.json"
    write_json(path, recipe)
    for argv in (["detect", "software", "fuzzrec"], ["install", "software", "fuzzrec", "--offline"]):
        code, _, err = run_in_process(*argv)
        line = next(line for line in err.splitlines() if line.startswith("Error: "))
        assert code == 1 and str(path) in line and "/detect/0/args" in line, err


def base_lock(tmp_path: Path) -> dict:
    prefix = tmp_path / "fuzzprefix"
    (prefix / "bin").mkdir(parents=True, exist_ok=True)
    return {
        "format": 1, "cr_version": "0", "created": "2024-01-01T00:00:00+00:00", "root": "model:lenet-digits@1.0.0",
        "platform": {"fingerprint": "0" * 16, "arch": "x86_64", "system": "Linux", "python": "3.11.0"},
        "interpreter": "/nonexistent/crfuzz/python", "status": "ready", "missing": [],
        "components": [{"ref": "model:lenet-digits@1.0.0", "uid": "0" * 16, "repo": "builtin", "sha256": "0" * 64}],
        "software": [
            {"name": "crfuzz-a", "version": "1.0", "origin": "installed", "requested_by": ["model:lenet-digits@1.0.0"],
             "recipe_uid": "", "env_id": "abc", "source": "pip", "location": str(prefix), "prefix": str(prefix),
             "interpreter": "", "exports": {"PATH": [str(prefix / "bin")], "CRFUZZ": "1"}, "packages": []},
            {"name": "crfuzz-b", "version": "2.0", "origin": "installable", "requested_by": ["software:crfuzz-a"],
             "recipe_uid": "", "source": "pip", "install": {"method": "pip", "packages": ["crfuzz-absent==2.0"]}},
        ],
    }


LOCK_KEYS = ["format", "root", "platform", "interpreter", "status", "missing", "components", "software", "requires"]
ENTRY_KEYS = ["name", "version", "origin", "requested_by", "recipe_uid", "env_id", "source", "location", "prefix",
              "interpreter", "exports", "packages", "install"]
INSTALL_KEYS = ["method", "packages", "url", "sha256", "script", "filename", "archive", "strip_components", "index_url",
                "extra_index_urls", "no_deps"]


LOCK_TYPED = {
    "origin": ["detected", "installed", "installable"], "interpreter": ["", "/bin/true", "relative/python", "/nonexistent"],
    "prefix": ["/nonexistent/crfuzz", "", "relative"], "location": ["/nonexistent/crfuzz", "", "/"],
    "missing": [["crfuzz-b"], ["crfuzz-a", "crfuzz-b"], []], "requires": [["software:crfuzz-a"], []],
    "version": ["1.0", "01.0", "1!1.0", "1.0+local"], "name": ["crfuzz-c", "crfuzz-a"],
    "source": ["pip", "apt", "download", "script", "system"], "root": ["model:lenet-digits@1.0.0", "software:crfuzz-a@1.0"],
    "exports": [{"PATH": ["relative"]}, {"PYTHONPATH": ""}, {"X": 1}, {"LD_LIBRARY_PATH": ["/a", "/b"]}, {}],
    "requested_by": [[], ["x"]], "status": ["ready", "needs-install", ""],
    "platform": [{}, {"fingerprint": "x"}], "components": [[], [{"ref": "model:x@1"}]],
}


def lock_value(rng: random.Random, key: str):
    if rng.random() < 0.5:
        if key in LOCK_TYPED:
            return rng.choice(LOCK_TYPED[key])
        if key in TYPED:
            return rng.choice(TYPED[key])
    return odd_value(rng, key)


def mutate_lock(rng: random.Random, lock: dict) -> dict:
    for _ in range(rng.randint(1, 3)):
        where = rng.random()
        if where < 0.25:
            key = rng.choice(LOCK_KEYS)
            if rng.random() < 0.3:
                lock.pop(key, None)
            else:
                lock[key] = lock_value(rng, key)
        elif where < 0.75:
            if not isinstance(lock.get("software"), list) or not lock["software"]:
                continue
            i = rng.randrange(len(lock["software"]))
            entry = lock["software"][i]
            if not isinstance(entry, dict) or rng.random() < 0.05:
                lock["software"][i] = odd_value(rng)
                continue
            key = rng.choice(ENTRY_KEYS)
            if rng.random() < 0.3:
                entry.pop(key, None)
            elif key == "exports" and rng.random() < 0.6:
                entry["exports"] = {rng.choice(["PATH", "PYTHONPATH", "", "A=B", "X\x00", "LD_LIBRARY_PATH", "Y"]): odd_value(rng)}
            else:
                entry[key] = lock_value(rng, key)
        else:
            entry = next((e for e in lock.get("software", []) if isinstance(e, dict) and isinstance(e.get("install"), dict)), None) \
                if isinstance(lock.get("software"), list) else None
            if entry is None:
                continue
            key = rng.choice(INSTALL_KEYS)
            if rng.random() < 0.3:
                entry["install"].pop(key, None)
            else:
                entry["install"][key] = lock_value(rng, key)
    return lock


LOCK_COMMANDS = (
    ("env", "exec", "{path}", "--", "true"),
    ("install", "--lock", "{path}", "--offline"),
    ("benchmark", "model", "lenet-digits", "--backend", "null", "--lock", "{path}", "--no-store"),
)


def run_lock_case(path: Path, lock, case, commands=LOCK_COMMANDS) -> None:
    path.write_text(json.dumps(lock))
    for template in commands:
        argv = [part.format(path=path) for part in template]
        code, _, err = run_in_process(*argv)
        check_outcome(argv, code, err, case)


def test_odd_locks_fuzzed(tmp_path, cr_home):
    rng = random.Random(1717)
    path = tmp_path / "fuzz.lock.json"
    for case in range(250):
        lock = mutate_lock(rng, base_lock(tmp_path))
        # the benchmark needs the whole launch path: every tenth case takes it
        run_lock_case(path, lock, (case, lock), LOCK_COMMANDS if case % 10 == 0 else LOCK_COMMANDS[:2])


LOCK_HAND_CASES = {
    "software entry without a name": lambda lock: lock["software"][0].pop("name"),
    "exports not a mapping": lambda lock: lock["software"][0].update(exports=["PATH"]),
    "export name with '='": lambda lock: lock["software"][0].update(exports={"A=B": "x"}),
    "export value with a NUL": lambda lock: lock["software"][0].update(exports={"X": "a\x00b"}),
    "prefix a list": lambda lock: lock["software"][0].update(prefix=["/x"]),
    "missing a string": lambda lock: lock.update(missing="crfuzz-b"),
    "root a number": lambda lock: lock.update(root=7),
    "interpreter missing": lambda lock: lock.pop("interpreter"),
    "packages a string": lambda lock: lock["software"][1]["install"].update(packages="crfuzz-absent"),
    "package an option": lambda lock: lock["software"][1]["install"].update(packages=["--index-url=http://evil"]),
    "version not PEP 440": lambda lock: lock["software"][1].update(version="1.0\x85"),
    "software a mapping": lambda lock: lock.update(software={"a": 1}),
}


@pytest.mark.parametrize("case", list(LOCK_HAND_CASES))
def test_odd_locks_written_by_hand_name_the_file_and_field(tmp_path, cr_home, case):
    lock = base_lock(tmp_path)
    LOCK_HAND_CASES[case](lock)
    path = tmp_path / "odd.lock.json"
    path.write_text(json.dumps(lock))
    for template in LOCK_COMMANDS:
        argv = [part.format(path=path) for part in template]
        code, _, err = run_in_process(*argv)
        check_outcome(argv, code, err, case)
        assert code == 1, (argv, err)
        line = next(line for line in err.splitlines() if line.startswith("Error: "))
        assert str(path) in line and re.search(r" /[a-z_]+", line), (case, line)
