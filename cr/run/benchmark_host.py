"""The benchmark action's host hook (actions/benchmark/meta.json "host").

Around run_action: settings that cannot work are refused before a run starts
(cr.runtime.harness.Settings); the MLPerf LoadGen engine is software of its own, resolved
like the backend; its logs are kept beside the result (the -o file's NAME.loadgen/), else
in CR_HOME/logs/loadgen/, and named in the record's "loadgen_logs": the result's validity
rests on them, so they outlive the run.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from .hooks import ActionHost

LOADGEN = "software:mlcommons-loadgen"


class BenchmarkHost(ActionHost):
    def check(self, run) -> None:
        if run.entry_point is None:  # another entry reads its own settings
            from ..runtime.harness import Settings

            Settings.from_params(run.params).check()

    def requirements(self, run) -> tuple[str, ...]:
        return (LOADGEN,) if run.params.get("engine") == "loadgen" else ()

    def before_launch(self, run, job, record: dict) -> None:
        if run.params.get("engine") != "loadgen":
            return
        if run.output:
            log_dir = Path(run.output).with_name(Path(run.output).stem + ".loadgen")
            if log_dir.exists():
                shutil.rmtree(log_dir)
        else:
            import secrets

            from ..paths import ensure_home

            stamp = run.started.replace(":", "").replace("-", "").split(".")[0]
            log_dir = ensure_home() / "logs" / "loadgen" / f"{stamp}-{secrets.token_hex(4)}"
        log_dir.mkdir(parents=True)
        job.log_dir = str(log_dir.resolve())
        run.state["log_dir"] = log_dir

    def after_child(self, run, record: dict, result: dict) -> None:
        if "log_dir" in run.state:
            record["loadgen_logs"] = str(run.state["log_dir"])
