"""Solution archives (DESIGN.md "Archive"): pack a solution and everything it needs into one
deterministic zip; verify and unpack one into a registered repository.

    from cr.archive import pack, unpack
    path = pack("solution:iris-logreg-onnxruntime")        # ./iris-logreg-onnxruntime-1.0.0.cr.zip
    info = unpack(path)                                     # CR_HOME/archives/iris-logreg-onnxruntime-1.0.0

The format is described in cr/archive/format.py and docs/archives.md.
"""
from __future__ import annotations

# Imported eagerly (they are light: zipfile, hashlib): the functions must be bound here
# after their submodules, or `cr.archive.pack` would name the module pack.py.
from .format import FORMAT, ArchiveError
from .limits import Limits
from .pack import pack
from .unpack import unpack

__all__ = ["FORMAT", "ArchiveError", "Limits", "pack", "unpack", "read_manifest"]


def read_manifest(path) -> dict:
    """The manifest of an archive (checked for shape only: unpack verifies the rest)."""
    import zipfile
    import zlib
    from pathlib import Path

    from .format import MANIFEST, parse_manifest
    from .limits import DEFAULT

    path = Path(path)
    try:
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo(MANIFEST)
            if info.file_size > DEFAULT.max_manifest_bytes:
                raise ArchiveError(f"refused {path.name}: {MANIFEST} is {info.file_size} bytes, over the limit of "
                                   f"{DEFAULT.max_manifest_bytes}", hint="is it a NAME-VERSION.cr.zip made by cr pack?")
            with zf.open(info) as src:
                data = src.read(DEFAULT.max_manifest_bytes + 1)
    except (zipfile.BadZipFile, KeyError, OSError, EOFError, zlib.error) as exc:
        raise ArchiveError(f"cannot read {MANIFEST} of {path.name} ({exc})", hint="is it a NAME-VERSION.cr.zip made by cr pack?") from None
    return parse_manifest(data, path.name)
