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
"""
from __future__ import annotations

import glob
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..events import reporter
from . import envs as envs_mod
from . import host
from .envs import SoftwareEnv
from .recipe import Recipe

DEFAULT_TIMEOUT = 10.0
# Directories every program already searches: exporting them would put system copies
# in front of the envs composed after them (a PATH=/usr/bin export would shadow a venv's
# python), so detected software found there exports nothing.
SYSTEM_BIN_DIRS = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"})
SYSTEM_LIB_DIRS = frozenset({"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"})
_VERSION_HEAD = re.compile(r"\d+(?:\.\d+)*")


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
        for i, probe in recipe.probes_for(markers, capabilities):
            if probe.get("type") == "executable" and not recipe.trusted:
                _refuse_probe(recipe, i, probe)
                continue
            jobs.setdefault(probe.get("type"), []).append(_Job(recipe, i, probe))
    results: dict[int, list[SoftwareEnv]] = {}
    with ThreadPoolExecutor(max_workers=8) as pool:
        python_future = pool.submit(_python_probes, jobs["python"], interpreter, timeout, fingerprint) if jobs["python"] else None
        exe_futures = [(job, pool.submit(_executable_probe, job, interpreter, timeout, fingerprint)) for job in jobs["executable"]]
        for job in jobs["library"]:
            results[id(job)] = _library_probe(job, fingerprint)
        for job, future in exe_futures:
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

def _version(raw: str, where: str) -> str | None:
    """raw as a PEP 440 version; a trailing non-PEP 440 part ('3.11.7+') is cut, with a warning."""
    from packaging.version import InvalidVersion, Version

    raw = raw.strip()
    try:
        Version(raw)
        return raw
    except InvalidVersion:
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

class ProbeTimeout(Exception):
    pass


def run_bounded(cmd: list[str], timeout: float, env: dict | None = None, stdin_text: str | None = None) -> tuple[int, str]:
    """(exit code, stdout+stderr) of cmd; ProbeTimeout after timeout s, its whole process group killed.

    The child gets its own session so that a hanging grandchild (a shell wrapper's
    child) is killed with it and cannot keep our pipes open.
    """
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=_neutral_cwd(),
    )
    try:
        out, _ = proc.communicate(stdin_text.encode() if stdin_text is not None else None, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise ProbeTimeout() from None
    return proc.returncode, out.decode("utf-8", "replace")


def _kill_group(proc: subprocess.Popen, drain: bool = True) -> None:
    """Kill proc's whole process group; drain its pipes unless another thread reads them."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        if drain:
            proc.communicate(timeout=5)
        else:
            proc.wait(timeout=5)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def _neutral_cwd() -> str:
    # Probes must not pick up modules or executables from wherever cr was started.
    return os.path.abspath(os.sep)


def _probe_env() -> dict:
    env = host._clean_env()
    env["LC_ALL"] = "C"
    env["LANG"] = "C"
    return env


# -- executable probes -----------------------------------------------------------------

def _candidates(probe: dict, interpreter: str) -> list[str]:
    """Executables a probe names: PATH lookups, absolute paths, {interpreter}, then paths globs."""
    out: list[str] = []
    for name in probe.get("names", ()):
        if name == "{interpreter}":
            path = interpreter
        elif os.sep in name:
            path = name if os.path.isfile(name) and os.access(name, os.X_OK) else None
        else:
            path = shutil.which(name)
        if path:
            out.append(os.path.abspath(path))
    for pattern in probe.get("paths", ()):
        for path in sorted(glob.glob(pattern)):
            if os.path.isfile(path) and os.access(path, os.X_OK):
                out.append(path)
    seen, unique = set(), []
    for path in out:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return unique


def _executable_probe(job: _Job, interpreter: str, timeout: float, fingerprint: str) -> list[SoftwareEnv]:
    probe = job.probe
    limit = float(probe.get("timeout", timeout))
    regex = re.compile(probe.get("regex") or r"(\d+(?:\.\d+)+)", re.MULTILINE)
    candidates = _candidates(probe, interpreter)
    env = _probe_env()

    def run(path: str):
        try:
            return run_bounded([path, *probe.get("args", ())], limit, env=env)
        except (ProbeTimeout, OSError) as exc:
            return exc

    # Candidates run side by side: wrappers such as pyenv's shims cost ~0.1 s each.
    if len(candidates) > 1:
        with ThreadPoolExecutor(max_workers=len(candidates)) as pool:
            answers = list(pool.map(run, candidates))
    else:
        answers = [run(path) for path in candidates]
    found: list[SoftwareEnv] = []
    for path, answer in zip(candidates, answers):
        cmd = [path, *probe.get("args", ())]
        if isinstance(answer, ProbeTimeout):
            reporter().warning(f"detect {job.recipe.name}: `{' '.join(cmd)}` did not answer within {limit:g} s; skipped it")
            continue
        if isinstance(answer, OSError):
            reporter().warning(f"detect {job.recipe.name}: cannot run {path} ({answer.strerror or answer}); skipped it")
            continue
        code, out = answer
        m = regex.search(out)
        if not m:
            first = out.strip().splitlines()[:1]
            reporter().warning(
                f"detect {job.recipe.name}: `{' '.join(cmd)}` exited {code} and its output does not match the recipe's regex"
                + (f" (it said: {first[0][:120]})" if first else "")
            )
            continue
        groups = m.groupdict()
        raw = groups.get("version") or (m.group(1) if m.re.groups else m.group(0))
        version = _version(raw or "", f"{job.recipe.name} ({path})")
        if not version:
            continue
        interp = (groups.get("interpreter") or "").strip()
        interp = host.canonical_interpreter(interp) if interp else ""
        location = (groups.get("location") or "").strip() or interp or os.path.realpath(path)
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


def _library_probe(job: _Job, fingerprint: str) -> list[SoftwareEnv]:
    probe = job.probe
    regex = re.compile(probe.get("regex") or r"\.so\.(\d+(?:\.\d+)+)$")
    files: list[str] = []
    dirs = None
    for pattern in probe.get("globs", ()):
        if os.sep in pattern:
            files += sorted(glob.glob(pattern))
        else:
            dirs = dirs if dirs is not None else _library_dirs()
            for d in dirs:
                files += sorted(glob.glob(os.path.join(glob.escape(d), pattern)))
    found: dict[str, SoftwareEnv] = {}
    seen: set[str] = set()
    for path in files:
        real = os.path.realpath(path)
        if real in seen or not os.path.isfile(real):
            continue
        seen.add(real)
        m = regex.search(os.path.basename(path)) or regex.search(os.path.basename(real))
        if not m:
            continue
        version = _version(m.groupdict().get("version") or (m.group(1) if m.re.groups else m.group(0)), f"{job.recipe.name} ({path})")
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
        res["version"] = str(value)
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
        r = {"found": False, "error": "%s: %s" % (type(e).__name__, e)}
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
        for raw in proc.stdout:
            lines.put(raw)
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
    deadline = time.monotonic() + timeout + 5.0
    while len(answers) < len(jobs):
        try:
            raw = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            limit = float(jobs[len(answers)].probe.get("timeout", timeout)) if actual is not None else timeout
            why = f"did not answer within {limit:g} s"
            _kill_group(proc, drain=False)
            break
        if raw is None:
            why = "crashed the interpreter" if actual is not None else "it exited at once"
            break
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        if actual is None and "interpreter" in data:
            actual = host.canonical_interpreter(data["interpreter"]) if data["interpreter"] else interpreter
        else:
            answers.append(data)
        if len(answers) < len(jobs):
            deadline = time.monotonic() + float(jobs[len(answers)].probe.get("timeout", timeout))
    else:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _kill_group(proc, drain=False)
    if proc.poll() is None:
        _kill_group(proc, drain=False)
    return answers, why, actual


def _python_env(job: _Job, answer: dict, interpreter: str, fingerprint: str) -> list[SoftwareEnv]:
    if answer.get("error") and answer.get("found"):
        reporter().warning(f"detect {job.recipe.name}: module {job.probe.get('module')!r} found at {answer.get('location')} but {answer['error']}")
        return []
    if answer.get("error"):
        reporter().warning(f"detect {job.recipe.name}: probing module {job.probe.get('module')!r} failed: {answer['error']}")
        return []
    if not answer.get("found") or not answer.get("version"):
        return []
    version = _version(answer["version"], f"{job.recipe.name} ({answer.get('location')})")
    if not version:
        return []
    # Importable by default: nothing to export. Found only through our PYTHONPATH: export it.
    exports = {"PYTHONPATH": [answer["entry"]]} if answer.get("via_extra") and answer.get("entry") else {}
    return [SoftwareEnv(
        name=job.recipe.name, version=version, origin="detected", source=(answer.get("installer") or "system").lower(),
        platform=fingerprint, location=answer.get("location", ""), interpreter=interpreter, exports=exports,
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
