"""The job: what the host asks the runtime child to do (the parent <-> child contract).

    job = Job(action="benchmark", entry="cr.runtime.actions.benchmark:main", params={...},
              model=Job.component(model_info, meta=variant_meta), backend={...})
    job.to_dict()        # what cr.run.launch writes to job.json
    Job.from_dict(data)  # what the child reads back: format and fields checked

An action entry (``module:function`` in actions/NAME/meta.json) receives ``job.to_dict()``:
a plain dict, so user-defined actions need nothing of reefkit to read it. Keys:

    format    JOB_FORMAT (taken when absent); a child refuses any other with a clear error
    action    the action's name (benchmark, validate, run, compile, ...)
    entry     module:function the child imports and calls
    params    the action's parameters, already merged and validated by the host
    model     {ref, meta (the variant's effective meta), dir} | None
    dataset   {ref, meta, dir, split, [limit], [optional]} | None
    backend   {name, entry, origin, options} | None
    runs      {backend: outputs} (the parity comparison) | None
    log_dir   where an engine keeps its logs (MLPerf LoadGen) | None
    out_dir, out_file   where a conversion writes its output (compile) | None

Standard library only: the child imports it before anything else.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from ..errors import CRError

JOB_FORMAT = 1


class JobError(CRError):
    """A job the runtime cannot take: another format, a missing or mistyped field."""


@dataclass
class Job:
    entry: str
    action: str | None = None
    params: dict = field(default_factory=dict)
    model: dict | None = None
    dataset: dict | None = None
    backend: dict | None = None
    runs: dict | None = None
    log_dir: str | None = None
    out_dir: str | None = None
    out_file: str | None = None
    format: int = JOB_FORMAT

    @staticmethod
    def component(info: dict, meta: dict | None = None, **extra) -> dict:
        """{ref, meta, dir} of a component as cr.store.catalog.show() describes it (meta: the
        variant's effective meta instead of the component's own), plus extra keys."""
        return {"ref": info["ref"], "meta": info["meta"] if meta is None else meta, "dir": info["path"], **extra}

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> Job:
        """The job data describes; JobError naming the field when it is not a job of JOB_FORMAT."""
        if not isinstance(data, dict):
            raise JobError(f"the job is a {type(data).__name__}, not an object", hint="the host writes jobs with Job.to_dict()")
        fmt = data.get("format", JOB_FORMAT)  # a job written by hand for debugging may leave it out
        if fmt != JOB_FORMAT:
            raise JobError(f"job format {fmt!r} is not the format this runtime reads ({JOB_FORMAT})",
                           hint="the host and the runtime come from different reefkit versions: run both from one installation")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise JobError(f"the job has unknown field(s) {', '.join(unknown)}",
                           hint=f"a job of format {JOB_FORMAT} has: {', '.join(sorted(known))}")
        if not isinstance(data.get("entry"), str) or ":" not in data["entry"]:
            raise JobError(f"job field entry is {data.get('entry')!r}, not module:function",
                           hint="the action meta's entry names the function the runtime calls, e.g. cr.runtime.actions.benchmark:main")
        data = {**data, "params": {} if data.get("params") is None else data["params"]}
        for name in ("params", "model", "dataset", "backend", "runs"):
            value = data.get(name)
            if value is not None and not isinstance(value, dict):
                raise JobError(f"job field {name} is a {type(value).__name__}, not an object")
        return cls(**{**data, "format": fmt})
