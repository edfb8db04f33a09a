"""Installation: run one recipe install method into a prefix and register the env, transactionally.

    install("onnx", ">=1.17")  ->  SoftwareEnv(name='onnx', version='1.23.2', origin='installed', ...)

The version is the newest that a usable method offers (marker and `requires` hold here)
and that satisfies the spec. Everything is built in ``CR_HOME/envs/.tmp-*`` and renamed to
``CR_HOME/envs/<name>/<env id>`` only once it is complete, with env.json already inside:
a failed, interrupted or killed install registers nothing and leaves no partial prefix
(temp dirs of dead installs are swept by the next install).

Methods:
- pip: ``<python> -m pip install --target <prefix> --report ...``; the report's exact
  versions and sha256 hashes are recorded; exports PYTHONPATH=<prefix> (+ PATH=<prefix>/bin).
- apt: never sudo. Not root: an error saying which command to run. Root: apt-get install
  -y, then the software is detected (apt installs system-wide, there is no prefix).
- download: url + sha256 (per version), cached and resumable, safely extracted.
- script: ``/bin/sh -e -c SCRIPT`` with PREFIX, VERSION, CR_RECIPE_DIR, CR_FINAL_PREFIX.

install() installs one software; its deps are the resolver's business (cr resolve).
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections import deque
from contextlib import contextmanager
from pathlib import Path

from ..errors import CRError, InvalidMeta
from ..events import reporter
from ..fsutil import atomic_write_json
from ..procs import clean_env, die_with_parent
from ..scratch import alive
from . import envs as envs_mod
from . import host
from .envs import ENV_FILE, PATH_VARS, SoftwareEnv
from .recipe import InstallMethod, Recipe, fill, load_recipe

TMP_PREFIX = ".tmp-"
_DEBIAN_UPSTREAM = re.compile(r"^(?:\d+:)?(\d+(?:\.\d+)*)")


def install(name: str, spec: str | None = None, offline: bool = False, interpreter: str | None = None) -> SoftwareEnv:
    """Install software `name` at the newest offered version satisfying spec; return its env.

    offline=True refuses anything that needs the network (pip, apt, a download not in the
    cache) with an error saying what is missing. interpreter: the python that pip installs
    for (default: the one running cr). An env already installed at that version is
    returned as it is. The method is chosen here (markers, capabilities, versions);
    install_locked() installs what a lock already chose.
    """
    recipe = load_recipe(name)
    platform = host.current_platform()
    capabilities = host.capabilities(platform)
    interp = host.resolve_interpreter(interpreter)
    markers = host.markers_for(platform, interp)
    methods = _usable_methods(recipe, markers, capabilities)
    version = _choose_version(recipe, methods, spec, markers)
    method = next(m for m in methods if version in m.versions)
    return _install_with(recipe, method, version, spec, offline, interp, platform.fingerprint)


def install_locked(entry: dict, interpreter: str, offline: bool = False, trusted: bool = False) -> SoftwareEnv:
    """Install one software entry of a lock exactly as the lock says: its method, packages and version.

    The recipe gives only what the lock does not record (its exports, its deps, the folder
    a script runs from). What the lock recorded runs when a trusted recipe offers exactly
    that (cr.store.trust); when only an untrusted one does, that recipe's trust decides.
    When no recipe offers it any more (the recipe was edited after the lock was resolved,
    or the lock came from elsewhere), the lock still wins, with a warning saying how to
    take the recipe's new choice (resolve again), but only with the user's consent
    (trusted=True, which --trust gives): nothing trusted vouches for it.
    """
    name, version = entry.get("name"), entry.get("version")
    source, recorded = entry.get("source"), entry.get("install")
    if not name or not version or not source or not isinstance(recorded, dict):
        raise CRError(f"the lock's entry for software {name or '?'} names no install method, packages and version",
                      hint="resolve again to get a complete lock: cr resolve REF")
    needed = _RECORDED_FIELDS.get(source)
    if needed is None or not all(recorded.get(k) for k in needed):
        what = f"method {source!r}" + (f" without {', '.join(k for k in needed if not recorded.get(k))}" if needed else "")
        raise CRError(f"the lock's entry for software {name} {version} names an incomplete install ({what})",
                      hint="resolve again to get a complete lock: cr resolve REF")
    method = InstallMethod(source, None, (version,), dict(recorded))
    recipe = _recipe_offering(name, source, version, recorded)
    if recipe is None:
        recipe = load_recipe(name)
        reporter().warning(
            f"the recipe of {name} ({recipe.path}) no longer offers what the lock recorded for {version} ({source}"
            + (f": {' '.join(method.packages_for(version))}" if recorded.get("packages") else "")
            + "); installing what the lock says. Resolve again (cr resolve REF) to take the recipe's current choice")
        if not trusted:
            from ..store.trust import Item, require

            detail = recorded.get("script") or recorded.get("url") or " ".join(method.packages_for(version))
            require([Item(recipe.repo or "?", f"software:{name}@{version} (as the lock recorded it)", f"{source} install", str(detail))],
                    f"installing {name} {version} as the lock says")
        recipe = dataclasses.replace(recipe, trusted=True)
    platform = host.current_platform()
    return _install_with(recipe, method, version, f"=={version}", offline, host.resolve_interpreter(interpreter),
                         platform.fingerprint)


def _recipe_offering(name: str, source: str, version: str, recorded: dict) -> Recipe | None:
    """The recipe of name that offers exactly the recorded install (a trusted one first), or None."""
    from ..store.catalog import open_index
    from .recipe import recipe_of

    index = open_index(kind="software", name=name)
    try:
        offering = []
        for comp in index.components(kind="software", name=name):
            recipe = recipe_of(comp, index)
            if any(_recorded_as(m, version) == recorded for m in recipe.install if m.method == source and version in m.versions):
                offering.append(recipe)
    finally:
        index.close()
    offering.sort(key=lambda r: not r.trusted)
    return offering[0] if offering else None


# What a lock entry's install record must hold for each method to be run as it says.
_RECORDED_FIELDS = {"pip": ("packages",), "apt": ("packages",), "download": ("url", "sha256"), "script": ("script",)}


def _recorded_as(method: InstallMethod, version: str) -> dict:
    """What a lock records of a method chosen at version (cr.resolve.lock.lock_dict)."""
    recorded = {k: v for k, v in method.spec.items() if k != "versions"}
    if "packages" in recorded:
        recorded["packages"] = method.packages_for(version)
    return recorded


def _install_with(recipe: Recipe, method: InstallMethod, version: str, spec: str | None, offline: bool, interp: str,
                  fingerprint: str) -> SoftwareEnv:
    """The one installation core: a method at a version, built in a staging dir, then registered.

    Nothing runs from an untrusted recipe (cr.store.trust): it raises Untrusted listing
    exactly what would have run. --offline never runs a script.
    """
    if not recipe.trusted:
        from ..store.trust import recipe_items, require

        require(recipe_items(recipe, methods=[method], probes=False), f"installing {recipe.name} {version}")
    if offline and method.method == "script":
        raise CRError(f"offline: installing {recipe.name} {version} would run its install script, and --offline never runs one",
                      hint=f"run without --offline, or install it yourself and run: cr detect software {recipe.name}")
    if method.method == "apt":
        return _install_apt(recipe, method, version, spec, offline, interp)
    env = SoftwareEnv(
        name=recipe.name, version=version, origin="installed", source=method.method, platform=fingerprint,
        interpreter=interp if method.method == "pip" else "", recipe_uid=recipe.uid,
    )
    for existing in envs_mod.list_envs(recipe.name, platform=fingerprint):
        if existing.id == env.id and existing.origin == "installed":
            reporter().info(f"{recipe.name} {version} is already installed ({existing.prefix})")
            return existing
    with _install_lock(recipe.name):
        return _build(recipe, method, version, env, offline, interp)


# -- choosing --------------------------------------------------------------------------

def _usable_methods(recipe: Recipe, markers: dict, capabilities) -> list[InstallMethod]:
    methods = recipe.methods_for(markers, capabilities)
    usable = [m for m in methods if m.method != "apt" or shutil.which("apt-get")]
    if usable:
        return usable
    where = f"{markers.get('sys_platform', '?')} {markers.get('platform_machine', '?')}, Python {markers.get('python_version', '?')}"
    if not recipe.install:
        raise CRError(
            f"software {recipe.name} cannot be installed by cr: its recipe has no install method",
            hint=f"install it yourself, then run: cr detect software {recipe.name}",
        )
    described = "; ".join(_describe_method(m) for m in recipe.install)
    raise CRError(
        f"software {recipe.name} cannot be installed on this platform ({where}): no install method of its recipe applies",
        hint=f"the recipe ({recipe.path}) offers: {described}",
    )


def _describe_method(m: InstallMethod) -> str:
    text = m.method
    if m.marker:
        text += f" where {m.marker}"
    if m.requires:
        text += f" (needs {', '.join(m.requires)})"
    if m.method == "apt" and not shutil.which("apt-get"):
        text += " (no apt-get here)"
    return text


def _choose_version(recipe: Recipe, methods: list[InstallMethod], spec: str | None, markers: dict) -> str:
    from ..store.refs import parse_spec, parse_version

    offered = sorted({v for m in methods for v in m.versions}, key=parse_version, reverse=True)
    if not offered:
        raise CRError(f"software {recipe.name}: its usable install methods list no versions", hint=f"fix the recipe {recipe.path}")
    if not spec:
        return offered[0]
    specifier = parse_spec(spec)
    for v in offered:
        if specifier.contains(parse_version(v), prereleases=True):
            return v
    raise CRError(
        f"no version of {recipe.name} that can be installed here satisfies {str(specifier)!r}; versions offered here: {', '.join(offered)}",
        hint=f"ask for one of those versions, or add the one you need to {recipe.path}",
    )


# -- the transaction -------------------------------------------------------------------

@contextmanager
def _install_lock(name: str):
    from filelock import FileLock

    root = envs_mod.envs_dir()
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f".lock-{name}")):
        yield


@contextmanager
def _staging(name: str):
    """A temp dir under CR_HOME/envs, deleted unless it was renamed into place."""
    root = envs_mod.envs_dir()
    root.mkdir(parents=True, exist_ok=True)
    _sweep(root)
    stage = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{name}-{os.getpid()}-", dir=root))
    try:
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _sweep(root: Path) -> None:
    """Delete temp dirs left by installs whose process is gone (killed, power loss)."""
    for d in root.glob(f"{TMP_PREFIX}*"):
        try:
            pid = int(d.name.rsplit("-", 2)[-2])
        except (ValueError, IndexError):
            continue
        if pid != os.getpid() and not alive(pid):
            shutil.rmtree(d, ignore_errors=True)


def _commit(env: SoftwareEnv, stage: Path) -> SoftwareEnv:
    """env.json into the stage, then the stage renamed to the env's directory, then register."""
    final = env.path
    if (final / ENV_FILE).exists():  # another cr installed the same env meanwhile
        return envs_mod.SoftwareEnv.from_dict(json.loads((final / ENV_FILE).read_text(encoding="utf-8")))
    if final.exists():  # a leftover without env.json: never registered, safe to replace
        shutil.rmtree(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(stage / ENV_FILE, env.to_dict(), durable=True)
    os.rename(stage, final)
    return envs_mod.register(env)


def _build(recipe: Recipe, method: InstallMethod, version: str, env: SoftwareEnv, offline: bool, interp: str) -> SoftwareEnv:
    final_prefix = env.path / "prefix"
    if offline and method.method == "pip":
        _refuse_offline_pip(recipe, method, version)
    with _staging(recipe.name) as stage:
        prefix = stage / "prefix"
        reporter().info(f"installing {recipe.name} {version} ({method.method})")
        if method.method == "pip":
            env.packages = _drop_lock_managed(recipe, prefix, _run_pip(recipe, method, version, interp, stage, offline))
            exports = {"PYTHONPATH": [str(final_prefix)]}
        elif method.method == "download":
            _run_download(recipe, method, version, prefix, offline)
            exports = {}
        elif method.method == "script":
            _run_script(recipe, method, version, prefix, final_prefix, offline)
            exports = {}
        else:
            raise InvalidMeta(f"{recipe.path}: unknown install method {method.method!r}")
        prefix.mkdir(parents=True, exist_ok=True)
        if (prefix / "bin").is_dir():
            exports.setdefault("PATH", []).append(str(final_prefix / "bin"))
        if method.method != "pip" and (prefix / "lib").is_dir() and any((prefix / "lib").glob("*.so*")):
            exports.setdefault("LD_LIBRARY_PATH", []).append(str(final_prefix / "lib"))
        env.exports = _recipe_exports(recipe, exports, str(final_prefix), version)
        env.prefix = env.location = str(final_prefix)
        env = _commit(env, stage)
    reporter().info(f"installed {recipe.name} {version} into {env.prefix}")
    return env


def _recipe_exports(recipe: Recipe, exports: dict, prefix: str, version: str) -> dict:
    """The method's default exports plus the recipe's `env` ({prefix}, {version} filled in)."""
    out = {k: list(v) for k, v in exports.items()}
    for var, template in recipe.env.items():
        value = fill(template, prefix=prefix, version=version)
        if var in PATH_VARS:
            items = [p for p in value.split(os.pathsep) if p]
            out[var] = items + [p for p in out.get(var, []) if p not in items]
        else:
            out[var] = value
    return out


# -- running commands ------------------------------------------------------------------

_PIP_NEWS = ("Collecting", "Downloading", "Processing", "Installing", "Successfully", "Building", "Using cached")


def _stream(cmd: list[str], task: str, env: dict | None = None, cwd: Path | None = None) -> tuple[int, list[str]]:
    """Run cmd (no stdin), telling the reporter as it goes; (exit code, its last 40 lines)."""
    tail: deque[str] = deque(maxlen=40)
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env, cwd=cwd, text=True, errors="replace", bufsize=1,
                                preexec_fn=die_with_parent())  # pip, apt, a script: gone when cr is killed
    except OSError as exc:
        raise CRError(f"cannot run {cmd[0]} ({exc.strerror or exc})", hint="check that it is installed and executable") from None
    steps = 0
    try:
        for line in proc.stdout:
            line = line.rstrip()
            if not line:
                continue
            tail.append(line)
            if line.startswith(_PIP_NEWS):
                steps += 1
                reporter().info(f"  {line.strip()}")
                reporter().progress(task, steps, None)
        proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc.returncode, list(tail)


def _last_lines(tail: list[str], n: int = 4) -> str:
    errors = [ln.strip() for ln in tail if ln.lstrip().startswith("ERROR:") or ln.lstrip().startswith("E:")]
    lines = errors[-n:] if errors else [ln.strip() for ln in tail[-n:]]
    return " | ".join(lines) if lines else "(no output)"


def _run_pip(recipe: Recipe, method: InstallMethod, version: str, interp: str, stage: Path, offline: bool) -> list[dict]:
    packages = method.packages_for(version)
    if offline:
        _refuse_offline_pip(recipe, method, version)
    report = stage / "pip-report.json"
    cmd = [interp, "-m", "pip", "install", "--target", str(stage / "prefix"), "--report", str(report),
           "--no-input", "--disable-pip-version-check"]
    if method.spec.get("index_url"):
        cmd += ["--index-url", method.spec["index_url"]]
    for url in method.spec.get("extra_index_urls", ()):
        cmd += ["--extra-index-url", url]
    if method.spec.get("no_deps"):
        cmd.append("--no-deps")
    cmd += packages
    code, tail = _stream(cmd, f"pip install {' '.join(packages)}", env=clean_env())
    if code != 0 and any("no such option: --report" in ln for ln in tail):
        # pip < 22.2 has no --report: install anyway, without the record of hashes
        reporter().warning(f"the pip of {interp} is older than 22.2: the env will not record package hashes")
        i = cmd.index("--report")
        cmd = cmd[:i] + cmd[i + 2:]
        shutil.rmtree(stage / "prefix", ignore_errors=True)
        code, tail = _stream(cmd, f"pip install {' '.join(packages)}", env=clean_env())
    if code != 0:
        raise CRError(
            f"pip could not install {' '.join(packages)} (software {recipe.name} {version}): {_last_lines(tail)}",
            hint=method.spec.get("hint") or f"check what pip offers for this Python and platform: {interp} -m pip index versions {_project(packages[0])}",
        )
    return _report_packages(report)


def _lock_managed_distributions(recipe: Recipe) -> set[str]:
    """Python distributions of the software this recipe depends on (transitively, through recipes).

    The lock resolves those separately (a detected numpy, say), so a copy pip put into this
    prefix would shadow the locked version on PYTHONPATH and make the lock lie.
    """
    from ..store.catalog import open_index
    from .recipe import load_recipes

    index = open_index()
    try:
        recipes = load_recipes(index)
    finally:
        index.close()
    names, queue, seen = set(), [d.name for d in recipe.deps], set()
    while queue:
        dep = queue.pop()
        if dep in seen or dep == recipe.name or dep not in recipes:
            continue
        seen.add(dep)
        for probe in recipes[dep].detect:
            dists = probe.get("distribution") or []
            names.update(_normalise(d) for d in ([dists] if isinstance(dists, str) else dists))
        queue.extend(d.name for d in recipes[dep].deps)
    return names


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _drop_lock_managed(recipe: Recipe, prefix: Path, packages: list[dict]) -> list[dict]:
    """Remove from prefix the distributions the lock provides itself; returns the packages kept."""
    managed = _lock_managed_distributions(recipe) if recipe.deps else set()
    if not managed:
        return packages
    kept = []
    for pkg in packages:
        if _normalise(pkg.get("name", "")) not in managed:
            kept.append(pkg)
            continue
        for info in prefix.glob("*.dist-info"):
            meta = info / "METADATA"
            try:
                head = meta.read_text(encoding="utf-8", errors="replace").split("\n\n", 1)[0]
            except OSError:
                continue
            m = re.search(r"^Name:\s*(\S+)", head, re.M)
            if not m or _normalise(m.group(1)) != _normalise(pkg["name"]):
                continue
            record = info / "RECORD"
            files = []
            if record.is_file():
                files = [line.split(",", 1)[0] for line in record.read_text(encoding="utf-8").splitlines() if line]
            for rel in files:
                target = (prefix / rel).resolve()
                if prefix.resolve() in target.parents and target.is_file():
                    target.unlink()
            shutil.rmtree(info, ignore_errors=True)
        reporter().info(f"  left out {pkg['name']} {pkg.get('version', '')}: the lock provides it (software dependency of {recipe.name})")
    _prune_empty_dirs(prefix)
    return kept


def _prune_empty_dirs(root: Path) -> None:
    for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        try:
            d.rmdir()
        except OSError:
            pass


def _refuse_offline_pip(recipe: Recipe, method: InstallMethod, version: str) -> None:
    raise CRError(
        f"offline: installing {recipe.name} {version} needs pip to download {' '.join(method.packages_for(version))} from the package index",
        hint=f"run without --offline; if it is already installed in the interpreter, run: cr detect software {recipe.name}",
    )


def _project(requirement: str) -> str:
    return re.split(r"[=<>!~\[; ]", requirement, maxsplit=1)[0]


def _report_packages(report: Path) -> list[dict]:
    """[{name, version, sha256, url}] of every distribution pip installed, from its --report."""
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    out = []
    for item in data.get("install", []):
        meta = item.get("metadata", {})
        info = item.get("download_info", {}) or {}
        archive = info.get("archive_info", {}) or {}
        sha = (archive.get("hashes") or {}).get("sha256", "")
        if not sha and str(archive.get("hash", "")).startswith("sha256="):
            sha = archive["hash"].split("=", 1)[1]
        out.append({"name": meta.get("name", ""), "version": meta.get("version", ""), "sha256": sha, "url": info.get("url", "")})
    return sorted(out, key=lambda p: p["name"].lower())


def _run_download(recipe: Recipe, method: InstallMethod, version: str, prefix: Path, offline: bool) -> None:
    from . import download

    spec = method.spec
    index = recipe.install.index(method) if method in recipe.install else "?"
    url = fill(spec["url"], version=version)
    sha = spec["sha256"]
    if isinstance(sha, dict):
        if version not in sha:
            raise InvalidMeta(f"{recipe.path}: /install/{index}/sha256: no sha256 for version {version}", hint="every version of a download method needs its sha256")
        sha = sha[version]
    filename = fill(spec["filename"], version=version) if spec.get("filename") else None
    path = download.fetch(url, sha, filename, offline=offline, what=f"{recipe.name} {version}")
    download.extract(path, prefix, spec.get("archive"), int(spec.get("strip_components", 0)), filename)


def _run_script(recipe: Recipe, method: InstallMethod, version: str, prefix: Path, final_prefix: Path, offline: bool) -> None:
    prefix.mkdir(parents=True, exist_ok=True)
    build = prefix.parent / "build"
    build.mkdir(exist_ok=True)
    env = clean_env()
    env.update({
        "PREFIX": str(prefix), "VERSION": version, "CR_FINAL_PREFIX": str(final_prefix),
        "CR_RECIPE_DIR": str(Path(recipe.path).parent) if recipe.path else "",
    })
    code, tail = _stream(["/bin/sh", "-e", "-c", method.spec["script"]], f"install {recipe.name}", env=env, cwd=build)
    if code != 0:
        raise CRError(
            f"the install script of {recipe.name} {version} failed (exit {code}): {_last_lines(tail)}",
            hint=method.spec.get("hint") or f"see the script in {recipe.path}",
        )


# -- apt -------------------------------------------------------------------------------

def _install_apt(recipe: Recipe, method: InstallMethod, version: str, spec: str | None, offline: bool, interp: str) -> SoftwareEnv:
    """apt installs system-wide: run it (as root only), then detect what it installed."""
    from .detect import detect

    packages = method.packages_for(version)
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", *packages]
    present = _satisfying(detect([recipe.name], interpreter=interp), recipe.name, spec)
    if present:
        # apt cannot install a second copy next to the system's: what is there is the answer
        reporter().info(f"{recipe.name} {present[0].version} is already present ({present[0].location})")
        return present[0]
    if offline:
        raise CRError(
            f"offline: installing {recipe.name} needs apt to download {' '.join(packages)}",
            hint=f"run without --offline, or install it yourself and run: cr detect software {recipe.name}",
        )
    if spec:
        _check_apt_candidate(recipe, packages[0], spec)
    if os.geteuid() != 0:
        raise CRError(
            f"installing {recipe.name} needs root (apt); cr never runs sudo: run `sudo {' '.join(cmd)}` yourself",
            hint=f"then run: cr detect software {recipe.name}",
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    code, tail = _stream(cmd, f"apt-get install {' '.join(packages)}", env=env)
    if code != 0 and any("Unable to locate package" in ln or "no installation candidate" in ln for ln in tail):
        reporter().info("apt does not know the package yet: running apt-get update")
        _stream(["apt-get", "update"], "apt-get update", env=env)
        code, tail = _stream(cmd, f"apt-get install {' '.join(packages)}", env=env)
    if code != 0:
        raise CRError(f"apt-get could not install {' '.join(packages)} (software {recipe.name}): {_last_lines(tail)}",
                      hint=method.spec.get("hint") or f"run `{' '.join(cmd)}` yourself to see apt's full output")
    found = _satisfying(detect([recipe.name], interpreter=interp), recipe.name, spec)
    if not found:
        raise CRError(
            f"apt installed {' '.join(packages)}, but cr detect finds no {recipe.name}" + (f" matching {spec!r}" if spec else ""),
            hint=f"run cr detect software {recipe.name} to see what is found, and check the recipe's detect probes ({recipe.path})",
        )
    env = found[0]
    env.source = "apt"
    return envs_mod.register(env)


def _satisfying(found: list[SoftwareEnv], name: str, spec: str | None) -> list[SoftwareEnv]:
    from ..store.refs import parse_spec, parse_version

    found = [e for e in found if e.name == name]
    if spec:
        found = [e for e in found if parse_spec(spec).contains(parse_version(e.version), prereleases=True)]
    return found


def _check_apt_candidate(recipe: Recipe, package: str, spec: str) -> None:
    """Refuse early when the version apt would install does not satisfy spec."""
    from ..store.refs import parse_spec, parse_version

    if not shutil.which("apt-cache"):
        return
    try:
        done = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return
    m = re.search(r"Candidate:\s*(\S+)", done.stdout)
    if not m or m.group(1) == "(none)":
        return
    upstream = _DEBIAN_UPSTREAM.match(m.group(1))
    if upstream and not parse_spec(spec).contains(parse_version(upstream.group(1)), prereleases=True):
        raise CRError(
            f"apt would install {package} {m.group(1)} here, which does not satisfy {recipe.name} {spec!r}",
            hint="apt installs the distribution's version only; use another install method or relax the version",
        )
