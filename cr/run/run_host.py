"""The run action's host hook (actions/run/meta.json "host").

`cr run ... --stream SRC` reads frames with software the model's own lock does not name
(imageio and its ffmpeg plugin for a video or a camera, Pillow for a folder of frames or
annotated frames): the hook adds what the source needs to the run's requirements, so the
lock resolved for the run includes it, `--install` installs it, and the runtime child can
import it. Without it, `cr install software imageio-ffmpeg` put the reader in a prefix the
run's environment never composed, and the same error came back.
"""
from __future__ import annotations

from .hooks import ActionHost


class RunHost(ActionHost):
    def requirements(self, run) -> tuple[str, ...]:
        source = run.params.get("stream")
        if source is None:
            return ()
        from ..runtime.stream import requirements

        return requirements(str(source), annotate=bool(run.params.get("annotate")))
