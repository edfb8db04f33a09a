"""An OCI image layout (image-spec v1.1) written with tarfile, gzip, hashlib and json.

Reproducible by construction: every tar entry has mtime 0, uid/gid 0 and no user or group
names, entries are sorted by path, gzip carries no name and mtime 0, and JSON is written
with sorted keys. Same inputs -> same layer digests -> same manifest digest.

    layout = Layout(DIR)                    # DIR must not exist or be empty
    layer = layout.add_layer(files, "base") # files: {image path: host path or LayerEntry}
    digest = layout.finish(config, ref_name)

``docker_archive(layout_dir, file, tag)`` wraps a finished layout into the tar that
``docker load`` (25+) and ``podman load`` read: the layout itself plus Docker's
manifest.json pointing at the same blobs.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import CRError

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
INDEX = "application/vnd.oci.image.index.v1+json"
REF_NAME = "org.opencontainers.image.ref.name"


@dataclass(frozen=True)
class Bytes:
    """A file made here (not copied from the host): its content and mode."""
    data: bytes
    mode: int = 0o644


@dataclass(frozen=True)
class Link:
    """A symbolic link in the image."""
    target: str


def canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class _Hashing(io.RawIOBase):
    """A write-through file that hashes and counts what passes."""

    def __init__(self, f):
        self.f, self.h, self.size = f, hashlib.sha256(), 0

    def writable(self):
        return True

    def write(self, b):
        self.f.write(b)
        self.h.update(b)
        self.size += len(b)
        return len(b)


def _info(name: str, kind: bytes, mode: int, size: int = 0, link: str = "") -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode, ti.size, ti.linkname = kind, mode & 0o7777, size, link
    ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = 0, 0, 0, "", ""
    return ti


def tree(src: Path, dest: str, skip=("__pycache__",)) -> dict:
    """{image path: host path} of every directory, file and link under src, placed at dest
    (device nodes, sockets and FIFOs are left out: the runtime makes /dev)."""
    src, dest = Path(src), dest.rstrip("/")
    out = {dest: src} if dest else {}
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d not in skip]
        rel = os.path.relpath(root, src)
        base = dest if rel == "." else f"{dest}/{rel}"
        for name in dirs + files:
            if name.endswith(".pyc"):
                continue
            out[f"{base}/{name}"] = Path(root) / name
    return out


def write_layer(entries: dict, out) -> tuple[str, str, int]:
    """Write entries ({image path: host Path | Bytes | Link}) as a gzipped tar to the binary
    file out; returns (diff_id, digest, size): the sha256 of the tar and of the gzip."""
    names = {}
    for path, what in entries.items():
        p = path.strip("/")
        parts = p.split("/")
        for i in range(1, len(parts)):  # every parent directory is an entry of its own
            names.setdefault("/".join(parts[:i]), None)
        names[p] = what
    zipped = _Hashing(out)
    with gzip.GzipFile(filename="", mode="wb", fileobj=zipped, mtime=0, compresslevel=6) as gz:
        raw = _Hashing(gz)
        with tarfile.open(fileobj=raw, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for name in sorted(names):
                what = names[name]
                if what is None:
                    tar.addfile(_info(name, tarfile.DIRTYPE, 0o755))
                elif isinstance(what, Bytes):
                    tar.addfile(_info(name, tarfile.REGTYPE, what.mode, len(what.data)), io.BytesIO(what.data))
                elif isinstance(what, Link):
                    tar.addfile(_info(name, tarfile.SYMTYPE, 0o777, link=what.target))
                else:
                    st = os.lstat(what)
                    if stat.S_ISLNK(st.st_mode):
                        tar.addfile(_info(name, tarfile.SYMTYPE, 0o777, link=os.readlink(what)))
                    elif stat.S_ISDIR(st.st_mode):
                        tar.addfile(_info(name, tarfile.DIRTYPE, st.st_mode))
                    elif stat.S_ISREG(st.st_mode):
                        with open(what, "rb") as f:
                            tar.addfile(_info(name, tarfile.REGTYPE, st.st_mode, st.st_size), f)
    return "sha256:" + raw.h.hexdigest(), "sha256:" + zipped.h.hexdigest(), zipped.size


class Layout:
    """An OCI image layout being written into an empty directory."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.blobs = self.root / "blobs" / "sha256"
        self.blobs.mkdir(parents=True, exist_ok=True)
        self.layers: list[dict] = []

    def _blob(self, data: bytes, media: str) -> dict:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        (self.blobs / digest[7:]).write_bytes(data)
        return {"mediaType": media, "digest": digest, "size": len(data)}

    def add_layer(self, entries: dict, comment: str) -> dict:
        part = self.blobs / f".layer-{len(self.layers)}.part"
        with open(part, "wb") as f:
            diff_id, digest, size = write_layer(entries, f)
        part.replace(self.blobs / digest[7:])
        layer = {"mediaType": LAYER, "digest": digest, "size": size, "diff_id": diff_id, "comment": comment}
        self.layers.append(layer)
        return layer

    def finish(self, config: dict, arch: str, ref_name: str, annotations: dict | None = None) -> dict:
        """Write config, manifest, index.json and oci-layout; returns the manifest's descriptor."""
        config = {**config, "architecture": arch, "os": "linux",
                  "rootfs": {"type": "layers", "diff_ids": [l["diff_id"] for l in self.layers]},
                  "history": [{"created_by": l["comment"]} for l in self.layers]}
        cfg = self._blob(canonical(config), CONFIG)
        manifest = {"schemaVersion": 2, "mediaType": MANIFEST, "config": cfg,
                    "layers": [{k: l[k] for k in ("mediaType", "digest", "size")} for l in self.layers]}
        if annotations:
            manifest["annotations"] = dict(annotations)
        desc = self._blob(canonical(manifest), MANIFEST)
        desc = {**desc, "platform": {"architecture": arch, "os": "linux"}, "annotations": {REF_NAME: ref_name}}
        (self.root / "index.json").write_bytes(canonical({"schemaVersion": 2, "mediaType": INDEX, "manifests": [desc]}))
        (self.root / "oci-layout").write_bytes(canonical({"imageLayoutVersion": "1.0.0"}))
        return {**desc, "config": cfg}


def read_layout(root: Path) -> tuple[dict, dict, dict]:
    """(index descriptor, manifest, config) of the one image of the layout at root."""
    root = Path(root)
    index = json.loads((root / "index.json").read_bytes())
    desc = index["manifests"][0]
    blob = lambda d: json.loads((root / "blobs" / "sha256" / d["digest"].split(":", 1)[1]).read_bytes())  # noqa: E731
    manifest = blob(desc)
    return desc, manifest, blob(manifest["config"])


def docker_archive(layout_dir: Path, file: Path, tag: str) -> None:
    """The layout at layout_dir as a `docker save` tar at file (docker load, podman load)."""
    layout_dir = Path(layout_dir)
    _, manifest, _ = read_layout(layout_dir)
    blob = lambda d: "blobs/sha256/" + d["digest"].split(":", 1)[1]  # noqa: E731
    docker = [{"Config": blob(manifest["config"]), "RepoTags": [tag], "Layers": [blob(l) for l in manifest["layers"]]}]
    entries = {"manifest.json": Bytes(canonical(docker))}
    for path in sorted(layout_dir.rglob("*")):
        if path.is_file():
            entries[path.relative_to(layout_dir).as_posix()] = path
    part = Path(str(file) + ".part")
    try:
        with tarfile.open(part, "w", format=tarfile.PAX_FORMAT) as tar:
            for name in sorted(entries):
                what = entries[name]
                if isinstance(what, Bytes):
                    tar.addfile(_info(name, tarfile.REGTYPE, 0o644, len(what.data)), io.BytesIO(what.data))
                else:
                    with open(what, "rb") as f:
                        tar.addfile(_info(name, tarfile.REGTYPE, 0o644, what.stat().st_size), f)
        part.replace(file)
    except OSError as exc:
        part.unlink(missing_ok=True)
        raise CRError(f"cannot write {file}: {exc.strerror or exc}", hint="choose a writable place with room for the image") from None


def unpack(layout_dir: Path, dest: Path) -> dict:
    """Apply the image's layers in order onto dest (an empty directory): the root a runtime
    would see (whiteouts are not handled: images written here have none). Returns the config."""
    _, manifest, config = read_layout(layout_dir)
    dest = Path(dest)
    for layer in manifest["layers"]:
        with tarfile.open(Path(layout_dir) / "blobs" / "sha256" / layer["digest"].split(":", 1)[1], "r:gz") as tar:
            tar.extractall(dest, filter="tar" if hasattr(tarfile, "data_filter") else None)
    return config


def sandbox_command(root: Path, config: dict, args: list[str] | None = None, env: dict | None = None) -> list[str]:
    """The command that runs the image's default command (or args, after its Entrypoint) in
    the unpacked root: util-linux's unshare (no network: only loopback; own PID and mount
    namespaces, its own /proc) and chroot, with exactly the image's environment (plus env).
    What `podman run --network=none` does, without a container engine (needs root); the
    host's /dev is bound in, inside the new mount namespace only (a runtime makes its own)."""
    cfg = config.get("config") or {}
    argv = list(cfg.get("Entrypoint") or []) + list(cfg.get("Cmd") if args is None else args)
    variables = list(cfg.get("Env") or []) + [f"{k}={v}" for k, v in sorted((env or {}).items())]
    workdir = cfg.get("WorkingDir") or "/"
    inner = 'r=$0; mount --rbind /dev "$r/dev" && exec chroot "$r" "$@"'
    return ["unshare", "--net", "--pid", "--fork", "--mount", f"--mount-proc={Path(root) / 'proc'}",
            "/bin/sh", "-c", inner, str(root),
            "/usr/bin/env", "-i", *variables, "/bin/sh", "-c", 'cd "$0" && exec "$@"', workdir, *argv]
