"""`cr run --stream FOLDER` with hostile frames: a few-KB PNG that says 12,000 x 12,000 pixels is
not decoded (bounded memory), a link out of the folder is not followed, and one unusable
frame is skipped with a warning naming it (--strict stops at it with one Error: line)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import _env

PIL = pytest.importorskip("PIL")


def _frames(tmp_path):
    from PIL import Image

    folder = tmp_path / "frames"
    folder.mkdir()
    Image.new("RGB", (320, 240), (200, 120, 40)).save(folder / "a-good.png")
    Image.new("1", (12000, 12000)).save(folder / "b-bomb.png")  # a few KB on disk
    secret = tmp_path / "outside.png"
    Image.new("RGB", (32, 32)).save(secret)
    (folder / "c-link.png").symlink_to(secret)
    (folder / "d-broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    Image.new("RGB", (320, 240), (10, 20, 30)).save(folder / "e-good.png")
    return folder


_CHILD = """
import json, sys
from cr.runtime.stream import run_stream
entries, summary = run_stream(sys.argv[1], lambda image: ({"top": [], "shape": list(image.shape)}, 0.001))
status = open("/proc/self/status").read()
hwm = int([l for l in status.splitlines() if l.startswith("VmHWM:")][0].split()[1]) * 1024
print(json.dumps({"entries": entries, "summary": summary, "hwm": hwm}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads VmHWM from /proc")
def test_bad_frames_are_skipped_named_and_never_decoded(tmp_path):
    folder = _frames(tmp_path)
    assert (folder / "b-bomb.png").stat().st_size < 100_000
    done = subprocess.run([sys.executable, "-c", _CHILD, str(folder)], capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [e["id"] for e in out["entries"]] == ["a-good.png", "e-good.png"]
    skipped = {s["id"]: s["why"] for s in out["summary"]["skipped"]}
    assert set(skipped) == {"b-bomb.png", "c-link.png", "d-broken.png"}
    assert "12000 x 12000 pixels" in skipped["b-bomb.png"]
    assert "link out of the stream folder" in skipped["c-link.png"]
    assert "cannot be read as an image" in skipped["d-broken.png"]
    assert out["hwm"] < 200 * 2**20, f"peak RSS {out['hwm'] / 2**20:.0f} MiB"  # decoded, the bomb alone is 432 MB


def test_strict_stops_at_the_first_bad_frame(tmp_path):
    from cr.errors import CRError
    from cr.runtime.stream import run_stream

    folder = _frames(tmp_path)
    with pytest.raises(CRError, match="b-bomb.png is 12000 x 12000 pixels"):
        run_stream(str(folder), lambda image: ({"top": []}, 0.0), strict=True)
    (folder / "a-good.png").unlink()
    (folder / "e-good.png").unlink()
    with pytest.raises(CRError, match="gave no usable frame"):
        run_stream(str(folder), lambda image: ({"top": []}, 0.0))


@pytest.mark.slow
def test_the_cli_warns_for_each_skipped_frame_and_strict_is_one_error(run_cr, tmp_path):
    pytest.importorskip("ai_edge_litert")
    folder = _frames(tmp_path)
    args = ("run", "model", "ssdlite-mobilenet-v2-person", "--backend", "tflite", "--stream", folder)
    done = run_cr(*args, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "2 frames of" in done.stdout
    warnings = [ln for ln in done.stderr.splitlines() if ln.startswith("Warning: skipped")]
    assert len(warnings) == 3 and any("b-bomb.png" in w for w in warnings), done.stderr
    strict = run_cr(*args, "--strict", timeout=300)
    errors = [ln for ln in strict.stderr.splitlines() if ln.startswith("Error: ")]
    assert strict.returncode == 1 and len(errors) == 1 and "b-bomb.png" in errors[0], strict.stdout + strict.stderr
    assert "Traceback" not in strict.stderr
