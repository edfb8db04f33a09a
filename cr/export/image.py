"""What goes into a solution's OCI image, and in which layers (docs/containers.md).

    base      the Debian root of scripts/image-root.sh (python3, libc, libstdc++, libgomp)
    deps      reefkit's own dependencies (click, jsonschema, ...) in /opt/reefkit/venv
    reefkit   the cr package and its data folders (repo/, recipes/, actions/, dashboard/)
    software  exactly the distributions of the solution's lock (and what they require)
    solution  /etc/reefkit/image.json: the solution, the lock and its sha256

The lower layers change least often, so images of several solutions share them. Every
distribution is copied from where the lock says it lives on this machine (importlib.metadata
lists its files), so the image holds the versions the lock names and nothing is
downloaded: the interpreter is the base root's Debian python3, which must have the lock's
Python minor version (the wheels' ABI).
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import re
import subprocess
import time
from pathlib import Path

from ..errors import CRError, NotFound
from . import oci

VENV = "/opt/reefkit/venv"
HOME = "/var/lib/reefkit"
INFO = "/etc/reefkit/image.json"
ARCHES = {"amd64": "x86_64", "arm64": "aarch64"}
BASE_ENV = "REEFKIT_IMAGE_ROOT"  # a prepared base root instead of scripts/image-root.sh's


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def host_arch() -> str:
    machine = os.uname().machine
    return {v: k for k, v in ARCHES.items()}.get(machine, machine)


# ---------------------------------------------------------------------------- the lock


def find_lock(solution_ref: str, arch: str) -> tuple[dict, list[Path]]:
    """The software of the solution's locks made on an `arch` machine (joined over the locks
    of its newest such machine: benchmark and validate may each have one) and their files.
    CRError when there is none, naming the architectures that have one."""
    from ..paths import cr_home
    from ..resolve.lock import load_lock

    kind, rest = solution_ref.split(":", 1)
    name, _, version = rest.partition("@")
    folder = cr_home() / "locks" / kind / name / version
    machine = ARCHES[arch]
    found, other = [], set()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            lock = load_lock(path)
        except CRError:
            continue
        if (lock.get("platform") or {}).get("arch") != machine:
            other.add((lock.get("platform") or {}).get("arch") or "?")
        elif lock.get("status") == "ready" and not lock.get("planned_for"):
            found.append((lock.get("created") or "", path, lock))
    if not found:
        seen = f" (there are locks for {', '.join(sorted(other))})" if other else ""
        raise CRError(f"{solution_ref} has no lock for {arch} ({machine}){seen}",
                      hint=f"make one on an {arch} machine first: cr init solution {name}")
    found.sort(key=lambda t: t[0])
    newest = found[-1][2]
    fingerprint = newest["platform"]["fingerprint"]
    mine = [t for t in found if t[2]["platform"]["fingerprint"] == fingerprint]
    software: dict[str, dict] = {}
    for _, _, lock in mine:
        for sw in lock["software"]:
            software[sw["name"]] = sw  # newest lock last: its entry wins
    joined = {**newest, "software": [software[n] for n in sorted(software)]}
    return joined, [p for _, p, _ in mine]


# ---------------------------------------------------------------------------- distributions


def _site_dirs(sw: dict) -> list[str]:
    dirs = list((sw.get("exports") or {}).get("PYTHONPATH") or [])
    loc = sw.get("location") or ""
    if loc:
        p = Path(loc)
        dirs += [str(p.parent), str(p)] if p.is_dir() else [str(p.parent)]
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def _find(name: str, paths: list[str]) -> md.Distribution | None:
    want = _norm(name)
    for dist in md.distributions(path=paths):
        if _norm(dist.metadata["Name"] or "") == want:
            return dist
    return None


def _owner(location: str, paths: list[str]) -> md.Distribution | None:
    """The distribution whose files include location (sklearn/ -> scikit-learn)."""
    for dist in md.distributions(path=paths):
        base = Path(dist.locate_file(""))
        for f in dist.files or ():
            if str(base / f).startswith(location.rstrip("/") + "/"):
                return dist
    return None


def _closure(roots: list[md.Distribution], paths: list[str], have: set[str]) -> tuple[list, list[str]]:
    """The distributions roots need (their requirements without extras, markers evaluated
    here), found in paths; and the names of those not found. `have` are left out."""
    from packaging.requirements import Requirement

    todo, out, missing = list(roots), [], []
    seen = set(have)
    while todo:
        dist = todo.pop()
        key = _norm(dist.metadata["Name"])
        if key in seen:
            continue
        seen.add(key)
        out.append(dist)
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker and not req.marker.evaluate({"extra": ""}):
                continue
            if _norm(req.name) in seen:
                continue
            dep = _find(req.name, paths)
            if dep is None:
                missing.append(req.name)
            else:
                todo.append(dep)
    return sorted(out, key=lambda d: _norm(d.metadata["Name"])), sorted(set(missing))


def _dist_files(dist: md.Distribution, site: str) -> dict:
    """{image path: host path} of the files of an installed distribution, placed in site;
    scripts and data outside its site-packages and byte-code are left out."""
    base = Path(dist.locate_file(""))
    out = {}
    for f in dist.files or ():
        rel = Path(f.as_posix()) if not str(f).startswith("..") else None
        if rel is None or rel.suffix == ".pyc" or "__pycache__" in rel.parts or rel.name in ("RECORD", "direct_url.json"):
            continue
        src = base / rel
        if src.is_file() or src.is_symlink():
            out[f"{site}/{rel.as_posix()}"] = src
    return out


# ---------------------------------------------------------------------------- the layers


def base_root(arch: str, script: Path | None = None) -> Path:
    """The cached Debian base root for arch (REEFKIT_IMAGE_ROOT, else scripts/image-root.sh)."""
    given = os.environ.get(BASE_ENV)
    if given:
        root = Path(given)
        if not (root / "usr" / "bin" / "python3").exists():
            raise CRError(f"{BASE_ENV}={given} holds no usr/bin/python3", hint="point it at a root made by scripts/image-root.sh")
        return root
    from ..paths import data_dir

    script = script or Path(data_dir("repo")).parent / "scripts" / "image-root.sh"
    if not script.is_file():
        raise CRError("the Debian base root is not built and scripts/image-root.sh is not here",
                      hint=f"build one from a reefkit checkout (sudo scripts/image-root.sh {arch}) and set {BASE_ENV} to its path")
    run = subprocess.run([str(script), arch], capture_output=True, text=True)
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["failed"])[-2:]
        raise CRError(f"building the {arch} base root failed: {' '.join(last)}", hint=f"run {script} {arch} to see why")
    return Path(run.stdout.strip().splitlines()[-1])


def _python_minor(root: Path) -> str:
    found = sorted(p.name for p in (root / "usr" / "lib").glob("python3.*") if (p / "os.py").exists())
    if not found:
        raise CRError(f"no Python in the base root {root}", hint="rebuild it: scripts/image-root.sh")
    return found[-1][len("python"):]


def _reefkit_layer(site: str) -> dict:
    from ..paths import DATA_FOLDERS, data_dir

    entries = oci.tree(Path(__file__).resolve().parents[1], f"{site}/cr")
    for k in [k for k in entries if k.startswith(f"{site}/cr/_data")]:
        del entries[k]  # an installed reefkit's own copy: replaced by data_dir's below
    for name in DATA_FOLDERS:
        entries.update(oci.tree(Path(data_dir(name)), f"{site}/cr/_data/{name}"))
    dist = md.distribution("reefkit")
    info = f"{site}/reefkit-{dist.version}.dist-info"
    entries[f"{info}/METADATA"] = oci.Bytes((dist.read_text("METADATA") or "").encode())
    entries[f"{info}/entry_points.txt"] = oci.Bytes((dist.read_text("entry_points.txt") or "").encode())
    entries[f"{VENV}/bin/cr"] = oci.Bytes(
        f"#!{VENV}/bin/python\nimport sys\nfrom cr.cli.main import main\nsys.exit(main())\n".encode(), 0o755)
    return entries


def build(solution_ref: str, out_dir: Path, arch: str, tag: str | None = None, reporter=None) -> dict:
    """Write the OCI image of solution_ref (kind:name@version) for arch into out_dir (empty
    or absent). Returns a summary: digest, config digest, layers (digest, size, comment),
    lock sha256, seconds."""
    from packaging.requirements import Requirement

    t0 = time.monotonic()
    if arch not in ARCHES:
        raise CRError(f"--arch {arch}: not an image architecture", hint=f"give one of {', '.join(ARCHES)}")
    lock, lock_files = find_lock(solution_ref, arch)
    outside = [c["ref"] for c in lock.get("components") or [] if c.get("repo") != "builtin"]
    if outside:  # the image carries reefkit's built-in repository only (docs/containers.md)
        raise CRError(f"{', '.join(outside)} of the lock come from outside reefkit's built-in repository: not yet carried into an image",
                      hint="ship the solution as an archive instead (cr pack solution NAME), or add it to the built-in repository")
    root = base_root(arch)
    minor = _python_minor(root)
    py = next((s for s in lock["software"] if s["name"] == "python"), None)
    locked_py = (py or {}).get("version") or (lock.get("platform") or {}).get("python") or ""
    if ".".join(locked_py.split(".")[:2]) != minor:
        raise CRError(f"{solution_ref}'s lock is for Python {locked_py}; the {arch} base root has Python {minor}",
                      hint="lock the solution with a Python of the base root's minor version (cr init solution NAME under it), or build the root of a suite that has the lock's")
    site = f"{VENV}/lib/python{minor}/site-packages"

    # reefkit's dependencies, from the interpreter running this export
    host_paths = [p for p in __import__("sys").path if os.path.isdir(p)]
    me = md.distribution("reefkit")
    deps = []
    for text in me.requires or ():
        req = Requirement(text)
        if req.marker and not req.marker.evaluate({"extra": ""}):
            continue
        d = _find(req.name, host_paths)
        if d is None:
            raise CRError(f"reefkit's dependency {req.name} is not installed here", hint="pip install reefkit's dependencies first")
        deps.append(d)
    dep_dists, _ = _closure(deps, host_paths, {"reefkit"})
    have = {_norm(d.metadata["Name"]) for d in dep_dists} | {"reefkit"}

    # the lock's software: each pip-installed distribution and what it requires
    roots, where, versions = [], [], {}
    for sw in lock["software"]:
        if sw["name"] == "python":
            continue
        if sw.get("source") != "pip":
            raise CRError(f"software {sw['name']} {sw['version']} of the lock comes from {sw.get('source')!r}: only pip-installed software goes into an image",
                          hint="lock the solution with software installed by pip (cr install software NAME)")
        paths = _site_dirs(sw)
        dist = _find(sw["name"], paths) or _owner(sw.get("location") or "", paths)
        if dist is None:
            raise CRError(f"software {sw['name']} {sw['version']} of the lock is not on this machine (looked in {', '.join(paths) or 'nowhere'})",
                          hint=f"install what the lock names here first: cr init solution {solution_ref.split(':', 1)[1].split('@')[0]}")
        if dist.version != sw["version"]:
            raise CRError(f"software {sw['name']}: the lock names {sw['version']}, this machine has {dist.version} at {dist.locate_file('')}",
                          hint="resolve again (cr init solution NAME), then export")
        roots.append(dist)
        where += paths
        versions[sw["name"]] = sw["version"]
    sw_dists, missing = _closure(roots, list(dict.fromkeys(where + host_paths)), have)

    lock_bytes = oci.canonical(lock)
    lock_sha = hashlib.sha256(lock_bytes).hexdigest()
    info = {"solution": solution_ref, "arch": arch, "lock_sha256": lock_sha, "lock": lock,
            "software": versions, "packages": {d.metadata["Name"]: d.version for d in sw_dists},
            "not_found": missing}
    layout = oci.Layout(Path(out_dir))
    emit = reporter or (lambda *_: None)
    emit("base", str(root))
    base = oci.tree(root, "")
    for special in ("dev", "proc", "sys"):  # the runtime mounts them: empty directories only
        base = {k: v for k, v in base.items() if not k.startswith(f"/{special}/")}
    base.pop("/.reefkit-root", None)
    layout.add_layer(base, f"Debian base root ({root.name})")
    emit("deps", f"{len(dep_dists)} distributions")
    venv = {f"{VENV}/pyvenv.cfg": oci.Bytes(f"home = /usr/bin\ninclude-system-site-packages = false\nversion = {minor}\n".encode()),
            f"{VENV}/bin/python": oci.Link("/usr/bin/python3"), f"{VENV}/bin/python3": oci.Link("python")}
    for d in dep_dists:
        venv.update(_dist_files(d, site))
    layout.add_layer(venv, "reefkit's dependencies: " + " ".join(f"{d.metadata['Name']}=={d.version}" for d in dep_dists))
    emit("reefkit", me.version)
    layout.add_layer(_reefkit_layer(site), f"reefkit {me.version}")
    emit("software", " ".join(f"{k} {v}" for k, v in versions.items()))
    soft = {}
    for d in sw_dists:
        soft.update(_dist_files(d, site))
    layout.add_layer(soft, "locked software: " + " ".join(f"{d.metadata['Name']}=={d.version}" for d in sw_dists))
    layout.add_layer({INFO: oci.Bytes(oci.canonical(info)), f"{HOME}/.keep": oci.Bytes(b"")}, f"{solution_ref}: lock {lock_sha[:12]}")
    name = solution_ref.split(":", 1)[1]
    sol_name, _, version = name.partition("@")
    tag = tag or f"reefkit/{sol_name}:{version}"
    config = {"config": {
        "Env": [f"PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                f"CR_HOME={HOME}", "LANG=C.UTF-8", f"REEFKIT_IMAGE={INFO}", "PYTHONUNBUFFERED=1"],
        "Entrypoint": ["cr"], "Cmd": ["benchmark", "solution", sol_name], "WorkingDir": HOME,
        "Labels": {"dev.reefkit.solution": solution_ref, "dev.reefkit.lock-sha256": lock_sha},
    }}
    desc = layout.finish(config, arch, tag, {"org.opencontainers.image.title": solution_ref})
    return {"digest": desc["digest"], "config_digest": desc["config"]["digest"], "tag": tag, "arch": arch,
            "solution": solution_ref, "lock_sha256": lock_sha, "lock_files": [str(p) for p in lock_files],
            "software": versions, "not_found": missing,
            "layers": [{"digest": l["digest"], "size": l["size"], "comment": l["comment"]} for l in layout.layers],
            "size": sum(l["size"] for l in layout.layers), "seconds": round(time.monotonic() - t0, 2)}


def check_target(path: Path, what: str) -> None:
    """CRError when path exists and is not an empty directory (nothing there is touched)."""
    if path.is_dir() and not any(path.iterdir()):
        return
    if path.exists() or path.is_symlink():
        kind = "directory" if path.is_dir() else "file"
        raise CRError(f"{what} {path} exists and is not empty ({kind})",
                      hint="give a new or empty directory; nothing in the existing one was changed")


def export_solution(ref: str, oci_dir: str | None = None, docker_archive: str | None = None,
                    arch: str | None = None, tag: str | None = None, reporter=None) -> dict:
    """cr export solution: the image as an OCI layout at oci_dir and/or a `docker save` tar
    at docker_archive. A failure leaves nothing behind (what existed stays as it was)."""
    import shutil
    import tempfile

    from ..store.catalog import show

    if not oci_dir and not docker_archive:
        raise CRError("nothing to write", hint="give --oci DIR and/or --docker-archive FILE")
    info = show(ref if ":" in ref else f"solution:{ref}", verify=False)
    if info["kind"] != "solution":
        raise NotFound(f"{info['ref']} is a {info['kind']}, not a solution", hint="cr find solution lists them")
    target = Path(oci_dir) if oci_dir else None
    if target is not None:
        check_target(target, "--oci")
    if docker_archive:
        f = Path(docker_archive)
        if f.exists() or f.is_symlink():
            raise CRError(f"--docker-archive {f} exists", hint="give a new file name; the existing file was not changed")
        if not f.parent.is_dir():
            raise CRError(f"--docker-archive {f}: folder {f.parent} does not exist", hint="create it first")
    made = target is not None and not target.exists()
    work = target if target is not None else Path(tempfile.mkdtemp(prefix="cr-oci-", dir=str(Path(docker_archive).parent)))
    try:
        summary = build(info["ref"], work, arch or host_arch(), tag, reporter)
        if docker_archive:
            oci.docker_archive(work, Path(docker_archive), summary["tag"])
            summary["docker_archive"] = str(docker_archive)
        if target is not None:
            summary["oci"] = str(target)
        return summary
    except BaseException:
        if target is None or made:
            shutil.rmtree(work, ignore_errors=True)
        elif target is not None:  # it was empty: empty it again
            for child in target.iterdir():
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()
        raise
    finally:
        if target is None:
            shutil.rmtree(work, ignore_errors=True)
