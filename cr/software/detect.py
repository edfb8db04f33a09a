"""Detection: run the recipes' detect probes on this host and register what they find.

Three probe types (recipes/<name>/recipe.json, DESIGN.md "Recipe"):

- ``python``: is ``module`` importable by the chosen interpreter, and at which version?
  The version comes from the metadata of ``distribution`` (one name or several) when that
  distribution lives where the module was found, which costs no import; otherwise the
  module is imported and ``attribute`` read (called if callable). All python probes of a
  scan run in ONE child interpreter that answers one JSON line per probe, so detecting
  every shipped recipe costs one interpreter start-up, not one per recipe.
- ``executable``: each of ``names`` (on PATH, an absolute path, or ``{interpreter}``) and
  each match of the ``paths`` globs is run with ``args``; ``regex`` is applied to its
  output (group ``version`` or group 1; optional groups ``location`` and ``interpreter``).
  These run concurrently.
- ``library``: ``globs`` of shared libraries, absolute or bare names searched in
  LD_LIBRARY_PATH and the standard library directories (never a walk of the file
  system); the version is read from the file name with ``regex``.

A probe that hangs is abandoned after its timeout and becomes a warning; so does one that
fails in any other way. The scan always goes on.

What a probe prints is untrusted and bounded: an executable probe is stopped after
OUTPUT_LIMIT bytes of output, its regex sees each line of that cut to LINE_LIMIT
characters, and every regex of a scan runs in one child interpreter (Matcher) that is
killed when a match runs past the probe's timeout; the python-probe child's answer lines
are bounded too, and every field of them is type-checked before use.
"""
from __future__ import annotations

import glob
import json
import os
import queue
import re
import selectors
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .. import procs
from ..errors import InvalidMeta
from ..events import reporter
from ..procs import Timeout
from . import envs as envs_mod
from . import host
from .envs import SoftwareEnv
from .recipe import Recipe

DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 3600.0  # a probe's own timeout is capped (a recipe may say 1e308)
# What a probe may make cr hold, whatever it prints: the first OUTPUT_LIMIT bytes of its
# output (then it is stopped), the regex sees each line of those cut to LINE_LIMIT
# characters, and runs in a child interpreter that is killed with the probe's timeout (a
# regex such as '(a+)+$' backtracks for ever on some lines).
OUTPUT_LIMIT = 64 * 1024
LINE_LIMIT = 4096
ANSWER_LIMIT = 64 * 1024  # one answer line of the python-probe child
MAX_CANDIDATES = 32  # executables one probe may run (its names and the matches of its paths globs)
MAX_FILES = 1024  # files one glob of a probe may yield
MAX_WILD_PARTS = 2  # path components of a glob that may hold wildcards (/usr/local/cuda-*/lib64/libcudart.so.*)
MAX_VERSION = 256  # characters of a version as a probe reports it
# Directories every program already searches: exporting them would put system copies
# in front of the envs composed after them (a PATH=/usr/bin export would shadow a venv's
# python), so detected software found there exports nothing.
SYSTEM_BIN_DIRS = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"})
SYSTEM_LIB_DIRS = frozenset({"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"})
_VERSION_HEAD = re.compile(r"[0-9]+(?:\.[0-9]+)*")  # ASCII digits: \d is any Unicode digit


@dataclass
class _Job:
    recipe: Recipe
    index: int  # the probe's position in the recipe's detect list
    probe: dict

    @property
    def where(self) -> str:
        return f"{self.recipe.name} (detect probe {self.index}, {self.probe.get('type')})"


def detect(names=None, interpreter: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> list[SoftwareEnv]:
    """Detect software on this host and register it (origin 'detected'); returns what was found.

    names: software names (default: every recipe). interpreter: the python whose packages
    are probed (default: the one running cr). timeout: seconds per probe.
    A previously detected env whose software changed in place (same location, another
    version) is replaced; one whose files are gone is dropped (envs.list_envs).
    """
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        from ..errors import CRError

        raise CRError(f"invalid probe timeout {timeout!r}", hint="give a positive number of seconds, e.g. --timeout 10")
    recipes = _recipes(names)
    platform = host.current_platform()
    markers = platform.markers()
    capabilities = host.capabilities(platform)
    interp = host.resolve_interpreter(interpreter)
    found = scan(recipes, markers, capabilities, interp, timeout, platform.fingerprint)
    return _register(found, platform.fingerprint)


def _recipes(names) -> list[Recipe]:
    from ..store.catalog import open_index
    from .recipe import load_recipe, load_recipes

    index = open_index()
    try:
        if names:
            return [load_recipe(n, index) for n in dict.fromkeys(names)]
        return list(load_recipes(index).values())
    finally:
        index.close()


def scan(recipes, markers: dict, capabilities, interpreter: str, timeout: float, fingerprint: str) -> list[SoftwareEnv]:
    """Run the applicable probes of recipes; the envs found (not registered), in recipe order."""
    jobs = {"python": [], "executable": [], "library": []}
    for recipe in recipes:
        try:
            probes = recipe.probes_for(markers, capabilities)
        except InvalidMeta as exc:  # a marker that cannot be evaluated here: this recipe only
            reporter().warning(f"detect {recipe.name}: {exc.message}; skipped its probes")
            continue
        for i, probe in probes:
            if probe.get("type") == "executable" and not recipe.trusted:
                _refuse_probe(recipe, i, probe)
                continue
            jobs.setdefault(probe.get("type"), []).append(_Job(recipe, i, probe))
    results: dict[int, list[SoftwareEnv]] = {}
    with ThreadPoolExecutor(max_workers=8) as pool, Matcher() as matcher:
        python_future = pool.submit(_python_probes, jobs["python"], interpreter, timeout, fingerprint) if jobs["python"] else None
        if jobs["executable"]:
            pool.submit(matcher.start)  # its start-up overlaps with the probes
        futures = [(job, pool.submit(_executable_probe, job, interpreter, timeout, fingerprint, matcher)) for job in jobs["executable"]]
        futures += [(job, pool.submit(_library_probe, job, timeout, fingerprint, matcher)) for job in jobs["library"]]
        for job, future in futures:
            results[id(job)] = future.result()
        if python_future is not None:
            for job, found in python_future.result():
                results[id(job)] = found
    out = []
    for recipe in recipes:
        for kind in ("python", "executable", "library"):
            for job in jobs[kind]:
                if job.recipe is recipe:
                    out.extend(results.get(id(job), []))
    return out


def _refuse_probe(recipe: Recipe, index: int, probe: dict) -> None:
    """An executable probe of an untrusted recipe runs a program the recipe names: not without
    the user's consent (cr.store.trust). The scan goes on without it."""
    command = " ".join([" | ".join([*probe.get("names", ()), *probe.get("paths", ())]), *probe.get("args", ())])
    reporter().warning(
        f"detect {recipe.name} (detect probe {index}, executable): not run: the recipe comes from repo "
        f"{recipe.repo!r}, which you have not trusted, and would run {command!r}; review it with "
        f"cr show software:{recipe.name}, then cr repo trust {recipe.repo}")


# -- version and exports helpers -------------------------------------------------------

def _version(raw: object, where: str) -> str | None:
    """raw as a PEP 440 version; a trailing non-PEP 440 part ('3.11.7+') is cut, with a warning.

    What a probe says is untrusted text: anything but a short string of printable ASCII is
    not a version (cr.store.refs.parse_version is what every later reader applies)."""
    from ..errors import InvalidRef
    from ..store.refs import parse_version

    if not isinstance(raw, str):
        reporter().warning(f"detect {where}: the probe gave {type(raw).__name__}, not a version; skipped it")
        return None
    raw = raw.strip()
    if len(raw) > MAX_VERSION:
        reporter().warning(f"detect {where}: {raw[:40]!r}... ({len(raw)} characters) is not a version; skipped it")
        return None
    try:
        parse_version(raw)
        return raw
    except InvalidRef:
        pass
    m = _VERSION_HEAD.match(raw)
    if not m:
        reporter().warning(f"detect {where}: {raw!r} is not a version; skipped it")
        return None
    reporter().warning(f"detect {where}: version {raw!r} is not PEP 440; recorded it as {m.group(0)}")
    return m.group(0)


def _dir_export(var: str, directory: str, system: frozenset) -> dict:
    directory = os.path.normpath(directory)
    if not directory or directory in system or _is_multiarch_lib(directory, system):
        return {}
    return {var: [directory]}


def _is_multiarch_lib(directory: str, system: frozenset) -> bool:
    """/usr/lib/x86_64-linux-gnu and friends are standard linker directories too."""
    parent, leaf = os.path.split(directory)
    return system is SYSTEM_LIB_DIRS and parent in ("/lib", "/usr/lib") and "-linux-" in leaf


# -- process helper --------------------------------------------------------------------

def _neutral_cwd() -> str:
    # Probes must not pick up modules or executables from wherever cr was started.
    return os.path.abspath(os.sep)


def _probe_env() -> dict:
    env = procs.clean_env()
    env["LC_ALL"] = "C"
    env["LANG"] = "C"
    return env


# -- regexes from recipes ----------------------------------------------------------------

class MatchFailed(Exception):
    """The recipe's regex could not be applied (invalid, or it ran past the probe's time)."""


# Runs in a fresh interpreter (-I -S: nothing of the environment, no site). One request
# per line (a regex, its flags, lists of lines); for each list it answers, on one line, the
# groups cr reads of the first line that matches (or null). Only these groups travel back.
_MATCH_SCRIPT = r"""
import json, re, sys
out = sys.stdout
out.write("ready\n")
out.flush()
for raw in sys.stdin.buffer:
    req = json.loads(raw.decode("ascii"))
    try:
        rx = re.compile(req["regex"], req["flags"])
    except Exception as e:
        out.write(json.dumps({"error": ("%s: %s" % (type(e).__name__, e))[:500]}) + "\n")
        out.flush()
        continue
    answers = []
    for lines in req["texts"]:
        got = None
        for line in lines:
            m = rx.search(line)
            if m:
                named = m.groupdict()
                got = {"named": dict((k, named.get(k)) for k in ("version", "location", "interpreter")),
                       "first": m.group(1) if rx.groups else m.group(0)}
                break
        answers.append(got)
    out.write(json.dumps({"matches": answers}) + "\n")
    out.flush()
"""
_MATCH_GROUPS = ("version", "location", "interpreter")
_MATCHER_STARTUP = 10.0  # seconds the matcher's interpreter may take to start, on top of a request's


def _lines(text: str) -> list[str]:
    """text's lines (without their ends), each cut to LINE_LIMIT characters."""
    return [line[:LINE_LIMIT].rstrip("\r") for line in text.split("\n")]


class Matcher:
    """Applies recipes' regexes in ONE child interpreter per scan, killed and started afresh
    when a request runs past its time.

    A recipe's regex is data from a repository, and some regexes backtrack for ever
    ('(a+)+$' on a line of a's ending in a b); Python's re cannot be stopped from another
    thread, so they run in a child. Requests from several threads take turns. Without an
    interpreter to start (sys.executable empty) they run in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._buf = bytearray()
        self._ready = False
        self._done = False

    def __enter__(self) -> "Matcher":
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._done = True
            self.close(locked=True)

    def start(self) -> None:
        """Start the child now (its start-up then overlaps with the probes)."""
        with self._lock:
            if self._proc is None and sys.executable and not self._done:
                try:
                    self._spawn()
                except OSError:
                    self._proc = None  # match() says why

    def _spawn(self) -> None:
        self._buf, self._ready = bytearray(), False
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _MATCH_SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env={"LC_ALL": "C"}, start_new_session=True, cwd=_neutral_cwd(),
        )

    def match(self, pattern: str, flags: int, texts: list[list[str]], timeout: float) -> list[dict | None]:
        """For each list of lines, the groups ('version', 'location', 'interpreter' and
        'first': group 1, or the whole match) of the first line pattern matches, or None;
        MatchFailed when the regex is invalid or runs for more than timeout s."""
        if not any(texts):
            return [None] * len(texts)
        if not sys.executable:
            return _match_here(pattern, flags, texts)
        payload = json.dumps({"regex": pattern, "flags": flags, "texts": texts}).encode("ascii") + b"\n"
        limit = 4096 + 12 * (len(_MATCH_GROUPS) + 1) * LINE_LIMIT * len(texts)
        with self._lock:
            try:
                if self._proc is None:
                    self._spawn()
                if not self._ready:
                    try:
                        self._line(time.monotonic() + _MATCHER_STARTUP, 64)
                    except Timeout:
                        raise EOFError(f"{sys.executable} did not start within {_MATCHER_STARTUP:g} s") from None
                    self._ready = True
                self._proc.stdin.write(payload)
                self._proc.stdin.flush()
                raw = self._line(time.monotonic() + timeout, limit)
            except Timeout:
                self.close(locked=True)
                raise MatchFailed(f"it ran for more than {round(timeout, 1):g} s (a regex that backtracks without end?)") from None
            except OSError as exc:
                self.close(locked=True)
                raise MatchFailed(f"cannot run {sys.executable} to apply it ({exc.strerror or exc})") from None
            except EOFError as exc:
                self.close(locked=True)
                raise MatchFailed(f"applying it failed ({exc})") from None
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            raise MatchFailed(f"it is not a valid regular expression ({data['error']})")
        matches = data.get("matches") if isinstance(data, dict) else None
        if not (isinstance(matches, list) and len(matches) == len(texts) and all(_match_shape(m) for m in matches)):
            raise MatchFailed("applying it gave no answer cr can read")
        return matches

    def _line(self, deadline: float, limit: int) -> bytes:
        """The child's next answer line (at most limit bytes); Timeout past deadline."""
        fd = self._proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                if len(self._buf) > limit:
                    raise EOFError(f"an answer over {limit} bytes")
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise Timeout()
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise EOFError("its interpreter stopped")
                self._buf += chunk
        line, _, rest = bytes(self._buf).partition(b"\n")
        self._buf = bytearray(rest)
        return line

    def close(self, locked: bool = False) -> None:
        if not locked:
            with self._lock:
                return self.close(locked=True)
        proc, self._proc = self._proc, None
        if proc is not None:
            procs.stop_group(proc)
            for pipe in (proc.stdin, proc.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass


def match_lines(pattern: str, flags: int, texts: list[list[str]], timeout: float, matcher: Matcher | None = None) -> list[dict | None]:
    """Matcher.match, in a matcher of its own unless one is given."""
    if matcher is not None:
        return matcher.match(pattern, flags, texts, timeout)
    with Matcher() as own:
        return own.match(pattern, flags, texts, timeout)


def _match_shape(m: object) -> bool:
    return m is None or (
        isinstance(m, dict) and isinstance(m.get("named"), dict)
        and all(isinstance(v, (str, type(None))) for v in [m.get("first"), *m["named"].values()])
    )


def _match_here(pattern: str, flags: int, texts: list[list[str]]) -> list[dict | None]:
    try:
        rx = re.compile(pattern, flags)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise MatchFailed(f"it is not a valid regular expression ({exc})") from None
    out: list[dict | None] = []
    for lines in texts:
        m = next((m for m in map(rx.search, lines) if m), None)
        out.append(None if m is None else {
            "named": {k: m.groupdict().get(k) for k in _MATCH_GROUPS},
            "first": m.group(1) if rx.groups else m.group(0),
        })
    return out


def _limit(probe: dict, timeout: float) -> float:
    """The probe's own timeout (else the scan's), capped at MAX_TIMEOUT."""
    value = probe.get("timeout", timeout)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        value = timeout
    return min(float(value), MAX_TIMEOUT)


# -- executable probes -----------------------------------------------------------------

def _candidates(probe: dict, interpreter: str, deadline: float, where: str) -> list[str]:
    """Executables a probe names: PATH lookups, absolute paths, {interpreter}, then paths globs
    (at most MAX_CANDIDATES: a glob such as /usr/bin/* would run every program there)."""
    out: list[str] = []
    for name in probe.get("names", ()):
        if not name or "\0" in name:
            continue
        if name == "{interpreter}":
            path = interpreter
        elif os.sep in name:
            path = name if os.path.isfile(name) and os.access(name, os.X_OK) else None
        else:
            path = shutil.which(name)
        if path:
            out.append(os.path.abspath(path))
    for pattern in probe.get("paths", ()):
        for path in _glob(pattern, deadline, where):
            if os.path.isfile(path) and os.access(path, os.X_OK):
                out.append(path)
    seen, unique = set(), []
    for path in out:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return unique


_WILDCARD = re.compile(r"[*?[]")


def _glob(pattern: str, deadline: float, where: str) -> list[str]:
    """The sorted matches of an absolute glob, bounded: at most MAX_FILES of them, none
    looked for past deadline, and no pattern with wildcards in more than MAX_WILD_PARTS
    path components ('/*/*/*/*/*' would walk the file system, which probes never do)."""
    if "\0" in pattern:
        return []
    if not os.path.isabs(pattern):
        reporter().warning(f"detect {where}: glob {pattern!r} is not an absolute path; not searched")
        return []
    if sum(bool(_WILDCARD.search(part)) for part in pattern.split(os.sep)) > MAX_WILD_PARTS:
        reporter().warning(f"detect {where}: glob {pattern!r} has wildcards in more than {MAX_WILD_PARTS} path components; not searched")
        return []
    found = []
    for path in glob.iglob(pattern):
        found.append(path)
        if len(found) >= MAX_FILES or time.monotonic() > deadline:
            break
    return sorted(found)


def _executable_probe(job: _Job, interpreter: str, timeout: float, fingerprint: str, matcher: Matcher | None = None) -> list[SoftwareEnv]:
    probe = job.probe
    limit = _limit(probe, timeout)
    deadline = time.monotonic() + limit
    candidates = _candidates(probe, interpreter, deadline, job.where)
    if len(candidates) > MAX_CANDIDATES:
        reporter().warning(f"detect {job.where}: it names {len(candidates)} executables; ran the first {MAX_CANDIDATES}")
        candidates = candidates[:MAX_CANDIDATES]
    args = [str(a) for a in probe.get("args", ())]
    env = _probe_env()

    def run(path: str):
        try:
            return procs.run_bounded([path, *args], limit, env=env, limit=OUTPUT_LIMIT, cwd=_neutral_cwd())
        except (Timeout, OSError, ValueError) as exc:  # ValueError: a NUL in an argument
            return exc

    # Candidates run side by side: wrappers such as pyenv's shims cost ~0.1 s each.
    if len(candidates) > 1:
        with ThreadPoolExecutor(max_workers=len(candidates)) as pool:
            answers = list(pool.map(run, candidates))
    else:
        answers = [run(path) for path in candidates]
    outputs: list[tuple[str, list[str], int, str]] = []
    for path, answer in zip(candidates, answers):
        cmd = " ".join([path, *args])
        if isinstance(answer, Timeout):
            reporter().warning(f"detect {job.recipe.name}: `{cmd}` did not answer within {limit:g} s; skipped it")
            continue
        if isinstance(answer, OSError):
            reporter().warning(f"detect {job.recipe.name}: cannot run {path} ({answer.strerror or answer}); skipped it")
            continue
        if isinstance(answer, ValueError):
            reporter().warning(f"detect {job.recipe.name}: cannot run {cmd!r} ({answer}); skipped it")
            continue
        code, out = answer
        outputs.append((path, _lines(out), code, cmd))
    if not outputs:
        return []
    try:
        matches = match_lines(probe.get("regex") or r"(\d+(?:\.\d+)+)", re.MULTILINE, [o[1] for o in outputs],
                              max(deadline - time.monotonic(), min(limit, 2.0)), matcher)
    except MatchFailed as exc:
        reporter().warning(f"detect {job.where}: the recipe's regex was not applied: {exc}; skipped it")
        return []
    found: list[SoftwareEnv] = []
    for (path, lines, code, cmd), m in zip(outputs, matches):
        if m is None:
            first = next((line for line in lines if line.strip()), None)
            reporter().warning(
                f"detect {job.recipe.name}: `{cmd}` "
                + (f"exited {code} and its output does not match" if code is not None
                   else f"was stopped and its first {OUTPUT_LIMIT // 1024} KiB of output do not match")
                + " the recipe's regex"
                + (f" (it said: {first.strip()[:120]!r})" if first else "")
            )
            continue
        groups = m["named"]
        version = _version(groups.get("version") or m["first"] or "", f"{job.recipe.name} ({path})")
        if not version:
            continue
        interp = (groups.get("interpreter") or "").strip()
        location = (groups.get("location") or "").strip()
        if "\0" in interp or "\0" in location:
            reporter().warning(f"detect {job.recipe.name}: `{cmd}` names a location with a NUL character; skipped it")
            continue
        interp = host.canonical_interpreter(interp) if interp else ""
        location = location or interp or os.path.realpath(path)
        exports = _dir_export("PATH", os.path.dirname(location), SYSTEM_BIN_DIRS)
        found.append(SoftwareEnv(
            name=job.recipe.name, version=version, origin="detected", source="system", platform=fingerprint,
            location=location, interpreter=interp, exports=exports, recipe_uid=job.recipe.uid,
        ))
    return found


# -- library probes --------------------------------------------------------------------

def _library_dirs() -> list[str]:
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    dirs += ["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"]
    dirs += sorted(glob.glob("/usr/lib/*-linux-gnu*")) + sorted(glob.glob("/lib/*-linux-gnu*"))
    return dirs


def _library_probe(job: _Job, timeout: float, fingerprint: str, matcher: Matcher | None = None) -> list[SoftwareEnv]:
    probe = job.probe
    files: list[str] = []
    dirs = None
    deadline = time.monotonic() + _limit(probe, timeout)
    for pattern in probe.get("globs", ()):
        if os.sep in pattern:
            files += _glob(pattern, deadline, job.where)
        elif pattern:
            dirs = dirs if dirs is not None else _library_dirs()
            for d in dirs:
                if os.path.isabs(d):
                    files += _glob(os.path.join(glob.escape(d), pattern), deadline, job.where)
        if len(files) >= MAX_FILES:
            reporter().warning(f"detect {job.where}: its globs match more than {MAX_FILES} files; looked at the first {MAX_FILES}")
            files = files[:MAX_FILES]
            break
    candidates: list[tuple[str, str]] = []
    seen: set[str] = set()
    for path in files:
        if time.monotonic() > deadline:
            reporter().warning(f"detect {job.where}: looking at the files its globs match took more than {_limit(probe, timeout):g} s; "
                               "looked at those seen so far")
            break
        real = os.path.realpath(path)
        if real in seen or not os.path.isfile(real):
            continue
        seen.add(real)
        candidates.append((path, real))
    if not candidates:
        return []
    try:
        matches = match_lines(probe.get("regex") or r"\.so\.(\d+(?:\.\d+)+)$", 0,
                              [[os.path.basename(p)[:LINE_LIMIT], os.path.basename(r)[:LINE_LIMIT]] for p, r in candidates],
                              max(deadline - time.monotonic(), min(_limit(probe, timeout), 2.0)), matcher)
    except MatchFailed as exc:
        reporter().warning(f"detect {job.where}: the recipe's regex was not applied: {exc}; skipped it")
        return []
    found: dict[str, SoftwareEnv] = {}
    for (path, real), m in zip(candidates, matches):
        if m is None:
            continue
        version = _version(m["named"].get("version") or m["first"] or "", f"{job.recipe.name} ({path})")
        if not version or version in found:
            continue
        found[version] = SoftwareEnv(
            name=job.recipe.name, version=version, origin="detected", source="system", platform=fingerprint,
            location=real, exports=_dir_export("LD_LIBRARY_PATH", os.path.dirname(real), SYSTEM_LIB_DIRS),
            recipe_uid=job.recipe.uid,
        )
    return list(found.values())


# -- python probes ---------------------------------------------------------------------

# Runs inside the probed interpreter (any CPython >= 3.8): no f-strings with '=', no
# walrus, stdlib only. Results go to a private copy of stdout, one JSON line per probe;
# fd 1 is pointed at stderr so a module that prints on import cannot corrupt them.
_PROBE_SCRIPT = r"""
import json, os, sys
out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]
import importlib, importlib.util
try:
    import importlib.metadata as md
except ImportError:
    md = None
req = json.loads(sys.stdin.readline())
extra = [p for p in req.get("extra_paths", []) if p and p not in sys.path]
base = list(sys.path)

def say(obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()

def entry_of(location, paths):
    best = ""
    for p in paths:
        ap = os.path.abspath(p) if p else ""
        if ap and (location == ap or location.startswith(ap.rstrip(os.sep) + os.sep)) and len(ap) > len(best):
            best = ap
    return best

def dist_version(names, entry):
    if md is None or not entry:
        return None
    for name in names:
        try:
            dists = list(md.Distribution.discover(name=name, path=[entry]))
        except Exception:
            dists = []
        if dists:
            d = dists[0]
            try:
                installer = (d.read_text("INSTALLER") or "").strip()
            except Exception:
                installer = ""
            return d.version, name, installer
    return None

def probe(p):
    top = p["module"].split(".")[0]
    spec = importlib.util.find_spec(top)
    via_extra = False
    if spec is None and extra:
        sys.path[:] = base + extra
        importlib.invalidate_caches()
        spec = importlib.util.find_spec(top)
        via_extra = spec is not None
        if not via_extra:
            sys.path[:] = base
    if spec is None:
        return {"found": False}
    if spec.submodule_search_locations:
        location = list(spec.submodule_search_locations)[0]
    elif spec.origin and spec.origin not in ("built-in", "frozen"):
        location = spec.origin
    else:
        location = ""
    location = os.path.abspath(location) if location else ""
    entry = entry_of(location, sys.path) if location else ""
    res = {"found": True, "location": location, "entry": entry, "via_extra": via_extra}
    names = p.get("distribution") or []
    if isinstance(names, str):
        names = [names]
    got = dist_version(names, entry)
    if got:
        res["version"], res["distribution"], res["installer"] = got
    elif p.get("attribute"):
        mod = importlib.import_module(p["module"])
        value = mod
        for part in p["attribute"].split("."):
            value = getattr(value, part)
        if callable(value):
            value = value()
        res["version"] = str(value)[:1000]
    else:
        res["error"] = "no version: no metadata for %s and no attribute to read" % (", ".join(names) or "its distribution")
    if via_extra:
        sys.path[:] = base
    return res

say({"interpreter": sys.executable, "version": "%d.%d.%d" % sys.version_info[:3]})
for i, p in enumerate(req["probes"]):
    try:
        r = probe(p)
    except BaseException as e:
        try:
            why = "%s: %s" % (type(e).__name__, e)
        except BaseException:
            why = "an exception that cannot be shown"
        r = {"found": False, "error": why[:1000]}
    r["i"] = i
    say(r)
"""


def _python_probes(jobs: list[_Job], interpreter: str, timeout: float, fingerprint: str) -> list[tuple[_Job, list[SoftwareEnv]]]:
    """Run python probes in one child interpreter; a hung or crashed probe is skipped and the
    rest run in a fresh child."""
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    results: list[tuple[_Job, list[SoftwareEnv]]] = []
    pending = list(jobs)
    while pending:
        answers, failed_at, actual = _run_batch(pending, interpreter, timeout, extra)
        if actual is None and not answers:  # the interpreter did not even start
            reporter().warning(f"detect: cannot run python probes with {interpreter}: {failed_at}; skipped "
                               + ", ".join(sorted({j.recipe.name for j in pending})))
            break
        for job, answer in zip(pending, answers):
            results.append((job, _python_env(job, answer, actual or interpreter, fingerprint)))
        done = len(answers)
        if done >= len(pending):
            break
        job = pending[done]
        reporter().warning(f"detect {job.recipe.name}: python probe for module {job.probe.get('module')!r} in {interpreter} {failed_at}; skipped it")
        results.append((job, []))
        pending = pending[done + 1:]
    return results


def _run_batch(jobs: list[_Job], interpreter: str, timeout: float, extra: list[str]):
    """(answers in order, why it stopped early, the child's sys.executable or None)."""
    payload = json.dumps({"probes": [j.probe for j in jobs], "extra_paths": extra}) + "\n"
    try:
        proc = subprocess.Popen(
            [interpreter, "-c", _PROBE_SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=_probe_env(), start_new_session=True, cwd=_neutral_cwd(),
        )
    except OSError as exc:
        return [], str(exc.strerror or exc), None
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        # One answer line per probe: a line longer than ANSWER_LIMIT is dropped as it is
        # read, and once enough lines came for every probe the rest is read and dropped
        # (the child writes on the descriptor it keeps, which a module it imports may find).
        budget = (len(jobs) + 1) * ANSWER_LIMIT
        try:
            while True:
                raw = proc.stdout.readline(ANSWER_LIMIT + 1)
                if not raw:
                    break
                if len(raw) > ANSWER_LIMIT and not raw.endswith(b"\n"):
                    while raw and not raw.endswith(b"\n"):  # the rest of that line
                        raw = proc.stdout.readline(ANSWER_LIMIT)
                    continue
                if budget > 0:
                    budget -= len(raw)
                    lines.put(raw)
        except (OSError, ValueError):
            pass
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        proc.stdin.write(payload.encode())
        proc.stdin.close()
    except OSError:
        pass
    answers: list[dict] = []
    actual = None
    why = "stopped without answering"
    # The first line (the header) gets extra time: it pays for the interpreter's start-up.
    deadline = time.monotonic() + min(timeout, MAX_TIMEOUT) + 5.0
    while len(answers) < len(jobs):
        try:
            raw = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            limit = _limit(jobs[len(answers)].probe, timeout) if actual is not None else timeout
            why = f"did not answer within {limit:g} s"
            procs.stop_group(proc)
            break
        if raw is None:
            why = "crashed the interpreter" if actual is not None else "it exited at once"
            break
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(data, dict):
            continue
        if actual is None and "interpreter" in data:
            given = data["interpreter"]
            actual = host.canonical_interpreter(given) if isinstance(given, str) and given and "\0" not in given else interpreter
        elif actual is not None and data.get("i") == len(answers) and not isinstance(data.get("i"), bool):
            answers.append(data)  # the answer to the next probe (what else a module prints there is dropped)
        else:
            continue
        if len(answers) < len(jobs):
            deadline = time.monotonic() + _limit(jobs[len(answers)].probe, timeout)
    else:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            procs.stop_group(proc)
    if proc.poll() is None:
        procs.stop_group(proc)
    return answers, why, actual


def _text(value: object, limit: int = 1000) -> str:
    """A field of the python-probe child's answer as text ('' for anything but a string):
    the child imports modules cr does not control, which may write to its answer channel."""
    return value[:limit] if isinstance(value, str) else ""


def _python_env(job: _Job, answer: dict, interpreter: str, fingerprint: str) -> list[SoftwareEnv]:
    module = job.probe.get("module")
    error, location = _text(answer.get("error")), _text(answer.get("location"), 4096)
    if error and answer.get("found"):
        reporter().warning(f"detect {job.recipe.name}: module {module!r} found at {location!r} but {error!r}")
        return []
    if error:
        reporter().warning(f"detect {job.recipe.name}: probing module {module!r} failed: {error!r}")
        return []
    if answer.get("found") is not True or not answer.get("version"):
        return []
    version = _version(answer["version"], f"{job.recipe.name} ({location})")
    if not version:
        return []
    if "\0" in location:
        return []
    # Importable by default: nothing to export. Found only through our PYTHONPATH: export it.
    entry = _text(answer.get("entry"), 4096)
    exports = {"PYTHONPATH": [entry]} if answer.get("via_extra") is True and entry and "\0" not in entry else {}
    installer = _text(answer.get("installer"), 64).lower()
    source = installer if re.fullmatch(r"[a-z0-9][a-z0-9._-]*", installer) else "system"
    return [SoftwareEnv(
        name=job.recipe.name, version=version, origin="detected", source=source,
        platform=fingerprint, location=location, interpreter=interpreter, exports=exports,
        recipe_uid=job.recipe.uid,
    )]


# -- registration ----------------------------------------------------------------------

def _register(found: list[SoftwareEnv], fingerprint: str) -> list[SoftwareEnv]:
    """Register found envs (one per id, first wins), rewriting only records that changed,
    and drop detected envs that the same location now answers with another version."""
    unique: dict[tuple[str, str], SoftwareEnv] = {}
    for env in found:
        unique.setdefault((env.name, env.id), env)
    by_name: dict[str, list[SoftwareEnv]] = {}
    for env in unique.values():
        by_name.setdefault(env.name, []).append(env)
    out = []
    for name, new_envs in by_name.items():
        old = {e.id: e for e in envs_mod.list_envs(name, platform=fingerprint) if e.origin == "detected"}
        new_ids = {e.id for e in new_envs}
        for env in new_envs:
            before = old.get(env.id)
            if before is not None:
                env.created = before.created
                if before.to_dict() == env.to_dict():
                    out.append(before)
                    continue
            out.append(envs_mod.register(env))
        for stale in old.values():
            if stale.id in new_ids:
                continue
            if any(stale.location == e.location and stale.interpreter == e.interpreter for e in new_envs):
                reporter().info(f"{stale.name} at {stale.location} is now {', '.join(e.version for e in new_envs if e.location == stale.location)}; dropped the record of {stale.version}")
                envs_mod.remove(stale)
    from ..store.refs import parse_version

    out.sort(key=lambda e: parse_version(e.version), reverse=True)
    out.sort(key=lambda e: e.name)
    return out
