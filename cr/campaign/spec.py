"""A campaign component -> its jobs: the deterministic expansion, each job with a content-hash id.

    campaign = load("campaign:digits-sweep")
    jobs = expand(campaign)          # [CampaignJob(id, solution, overrides, platform, target, repetition)]

Expansion: for every solution (refs, or tag queries), every combination of the matrix
(the Cartesian product of its keys in sorted key order, values in their given order),
include entries added (unless already there), exclude entries removed, every platform
target and every repetition. A job's id hashes what decides its result: the solution's
uid and content sha256, the overrides, the platform target, the repetition, the actions
and the campaign's params, so the same job is the same id on every machine and every run
(a rerun skips it when its result is stored), and editing a solution makes new jobs.
"""
from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import asdict, dataclass, field

from ..errors import CRError, NotFound

MATRIX_KEYS = ("backend", "variant", "precision", "dataset", "split", "threads", "batch_size", "scenario", "engine",
               "backend_options")
# matrix keys that are parameters of the actions (the rest choose what runs: run_action's kw)
PARAM_KEYS = ("threads", "batch_size", "scenario", "engine")
# matrix keys that choose what runs (run_declared's keywords); with a pipeline key, a job that
# sets one runs in the environment of its own target (cr.run.solution.run_declared)
TARGET_KEYS = ("backend", "variant", "precision", "dataset", "split", "backend_options")
# "pipeline.STEP.PARAM": a parameter of the model's pipeline step STEP (its first step of that op)
PIPELINE = "pipeline."
ANY = "any"


def is_matrix_key(key: str) -> bool:
    return key in MATRIX_KEYS or (isinstance(key, str) and key.startswith(PIPELINE))


def key_order(key: str) -> tuple:
    """The order of a job's keys: MATRIX_KEYS's, then the pipeline keys by name."""
    return (MATRIX_KEYS.index(key), "") if key in MATRIX_KEYS else (len(MATRIX_KEYS), key)


def pipeline_overrides(overrides: dict) -> dict:
    """{"resize.interpolation": "nearest"} of a job's {"pipeline.resize.interpolation": "nearest"}."""
    return {k[len(PIPELINE):]: v for k, v in overrides.items() if isinstance(k, str) and k.startswith(PIPELINE)}


@dataclass
class Campaign:
    ref: str
    name: str
    uid: str
    meta: dict
    meta_path: str


# field -> (the types it may hold, in words): what CampaignJob.from_dict checks
_FIELDS = {
    "id": ((str,), "a string"), "solution": ((str,), "a string"), "solution_uid": ((str,), "a string"),
    "solution_sha256": ((str,), "a string"), "overrides": ((dict,), "an object"), "platform": ((str,), "a string"),
    "target": ((dict,), "an object"), "repetition": ((int,), "an integer"),
    "actions": ((list, type(None)), "a list or null"), "params": ((dict,), "an object"),
}


@dataclass
class CampaignJob:
    """One job of a campaign: a solution, its overrides, a platform target and a repetition.

    It crosses to workers as to_dict() (plain JSON types) and is read back by from_dict(),
    which checks every field (the runtime's cr.runtime.job.Job is another layer's job: what
    the host asks the measured child to do)."""

    id: str
    solution: str  # the exact ref, kind:name@version
    solution_uid: str
    solution_sha256: str
    overrides: dict
    platform: str  # the target's name
    target: dict  # {"marker": ..., "requires": [...]}
    repetition: int
    actions: list | None  # None: every action the solution declares
    params: dict = field(default_factory=dict)  # action -> params over the declared ones

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> "CampaignJob":
        """The job data describes; CRError naming the field that is missing, unknown or of
        another type (data comes from another machine)."""
        if not isinstance(data, dict):
            raise CRError(f"a campaign job is an object, found {type(data).__name__}",
                          hint="the coordinator sends CampaignJob.to_dict(); run it and its workers from one reefkit version")
        unknown = sorted(str(k) for k in data if k not in _FIELDS)
        if unknown:
            raise CRError(f"campaign job field(s) {', '.join(unknown)}: unknown",
                          hint=f"a campaign job has: {', '.join(_FIELDS)}")
        for name, (types, words) in _FIELDS.items():
            if name not in data:
                if name == "params":
                    continue
                raise CRError(f"campaign job field {name}: missing", hint=f"a campaign job has: {', '.join(_FIELDS)}")
            value = data[name]
            if not isinstance(value, types) or isinstance(value, bool):
                raise CRError(f"campaign job field {name}: expected {words}, found {type(value).__name__} {value!r:.60}",
                              hint="the coordinator sends CampaignJob.to_dict(); run it and its workers from one reefkit version")
        return cls(**data)

    @property
    def setting(self) -> str:
        """The overrides in the results vocabulary's words: 'threads=2 batch=8' (or 'as declared')."""
        from ..results.summary import field_name, value_text

        parts = []
        for key in sorted((k for k in self.overrides if is_matrix_key(k)), key=key_order):
            if key in self.overrides:
                value = self.overrides[key]
                shown = json.dumps(value, sort_keys=True, separators=(",", ":")) if isinstance(value, dict) else value_text(value)
                parts.append(f"{field_name(key)}={shown}")
        return " ".join(parts) or "as declared"

    @property
    def uses_gpu(self) -> bool:
        """A job whose target needs a GPU takes one of the worker's GPU slots (not its machine slot)."""
        return bool({"gpu", "nvidia-gpu", "cuda"} & set(self.target.get("requires") or []))


def load(ref: str) -> Campaign:
    """The campaign component of ref (a name, campaign:NAME[@SPEC]); NotFound / CRError naming it."""
    from ..store.catalog import show

    ref = ref if ":" in ref else f"campaign:{ref}"
    try:
        info = show(ref, verify=False)
    except NotFound:
        _explain_invalid(ref)
        raise
    if info["kind"] != "campaign":
        raise CRError(f"{info['ref']} is a {info['kind']}, not a campaign", hint="cr find campaign lists them")
    return Campaign(info["ref"], info["name"], info["meta"]["uid"], info["meta"], info["meta_path"])


def _explain_invalid(ref: str) -> None:
    """InvalidMeta naming the file and the JSON pointer when ref is missing because its meta is invalid."""
    from ..errors import InvalidMeta
    from ..store.authoring import check

    try:
        report = check(ref)
    except CRError:
        return
    if report.problems:
        raise InvalidMeta(f"{ref} is not valid: {report.problems[0]}",
                          hint="fix the campaign's meta (docs/campaigns.md lists its fields); cr check shows every problem")


def field_where(campaign: Campaign, pointer: str) -> str:
    """'FILE: /pointer': how an error names a field of the campaign's file (the Slurm
    executor names a target's slurm settings so)."""
    return f"{campaign.meta_path}: {pointer}"


_where = field_where


def solutions(campaign: Campaign) -> list[dict]:
    """The campaign's solutions (show() infos), in the order given, each once."""
    from ..store.catalog import find, show

    found: dict[str, dict] = {}
    for i, item in enumerate(campaign.meta.get("solutions") or []):
        if isinstance(item, str):
            ref = item if ":" in item else f"solution:{item}"
            try:
                info = show(ref, verify=False)
            except NotFound as exc:
                raise NotFound(f"{_where(campaign, f'/solutions/{i}')}: unknown solution {item!r}: {exc.message}",
                               hint="edit that entry of the campaign's meta.json to one that cr find solution lists") from None
            if info["kind"] != "solution":
                raise CRError(f"{_where(campaign, f'/solutions/{i}')}: {info['ref']} is a {info['kind']}, not a solution",
                              hint="list solutions only (cr find solution)")
            found.setdefault(info["ref"], info)
        else:
            comps = find("solution", tags=item["tags"])
            if not comps:
                raise NotFound(f"{_where(campaign, f'/solutions/{i}')}: no solution has the tags {', '.join(item['tags'])}",
                               hint="cr find solution --tags ... shows what a query matches")
            for comp in comps:
                info = show(comp.ref, verify=False)
                found.setdefault(info["ref"], info)
    return list(found.values())


# A campaign is counted before it is built: a matrix of 10^12 combinations would otherwise be
# materialised (gigabytes, then a MemoryError). 100,000 jobs is days of benchmarks on one machine.
MAX_JOBS = 100_000


def _key(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _points(campaign: Campaign) -> list[dict]:
    """The matrix's combinations, then each `include` entry not already among them (one set
    lookup each: 20,000 entries took 80 s when each was compared with every point)."""
    matrix = campaign.meta.get("matrix") or {}
    keys = sorted(matrix, key=key_order)
    points = [dict(zip(keys, values)) for values in itertools.product(*(matrix[k] for k in keys))]
    seen = {_key(p) for p in points}
    for entry in campaign.meta.get("include") or []:
        point = {k: v for k, v in entry.items() if is_matrix_key(k)}
        if point and _key(point) not in seen:
            seen.add(_key(point))
            points.append(point)
    return points


def count_points(campaign: Campaign) -> int:
    """How many settings _points would give, at most, without building them."""
    matrix = campaign.meta.get("matrix") or {}
    product = 1
    for values in matrix.values():
        product *= len(values) if isinstance(values, list) else 1
    return product + len(campaign.meta.get("include") or [])


def check_size(campaign: Campaign, solutions_count: int) -> int:
    """The number of combinations (before excludes); CRError naming it when above MAX_JOBS."""
    settings, targets = count_points(campaign), len(platforms(campaign))
    repeat = int(campaign.meta.get("repeat") or 1)
    total = solutions_count * settings * targets * repeat
    if total > MAX_JOBS:
        raise CRError(f"{_where(campaign, '/matrix')}: the campaign expands to {total:,} combinations ({solutions_count} "
                      f"solution(s) x {settings:,} setting(s) x {targets} platform(s) x {repeat} repeat(s)), more than "
                      f"{MAX_JOBS:,}", hint="sweep fewer values at once (several campaigns), or narrow the matrix")
    return total


class _Rules:
    """The `exclude` entries, grouped by the keys they name: a job is looked up once per group
    (a set lookup), not compared with every entry."""

    def __init__(self, rules: list[dict]):
        self.groups: dict[tuple, set] = {}
        for rule in rules:
            keys = tuple(sorted(rule))
            self.groups.setdefault(keys, set()).add(tuple(_key(rule[k]) for k in keys))

    def excludes(self, point: dict, solution: str, platform: str) -> bool:
        full = {**point, "platform": platform}
        name = solution.split(":", 1)[-1].split("@", 1)[0]
        # solution:NAME@1.0.0 is matched by 'NAME', 'solution:NAME' and 'solution:NAME@1.0.0'
        forms = dict.fromkeys((solution, name, f"solution:{name}", solution.split("@", 1)[0]))
        for keys, values in self.groups.items():
            if any(k != "solution" and k not in full for k in keys):
                continue
            for form in (forms if "solution" in keys else (None,)):
                if tuple(_key(form if k == "solution" else full[k]) for k in keys) in values:
                    return True
        return False


def platforms(campaign: Campaign) -> dict[str, dict]:
    return dict(campaign.meta.get("platforms") or {}) or {ANY: {}}


def check_overrides(campaign: Campaign, sol: dict, point: dict) -> None:
    """CRError for an override the solution's backend does not have, naming its options."""
    from ..runtime import registry
    from ..runtime.backends.base import check_options

    backend = point.get("backend") or sol["meta"].get("backend")
    if not backend:
        return
    try:
        entry = registry.find(backend)
    except CRError as exc:
        raise CRError(f"{_where(campaign, '/matrix/backend')}: {exc.message}", hint=exc.hint) from None
    own = sol["meta"].get("backend_options") or {}
    if backend != sol["meta"].get("backend"):  # another backend keeps only the solution's thread count (as threads)
        from ..run.target import carried_options

        own = carried_options(sol["meta"], entry)
    options = {**own, **(point.get("backend_options") or {})}  # what the run gets: cr.run.target.prepare merges them
    if options:
        try:
            check_options(registry.load_class(entry), options)
        except CRError as exc:
            where = "/matrix/backend_options" if point.get("backend_options") else "/matrix/backend"
            whose = f" (solution {sol['ref']}" + (f" declares backend_options {sorted(own)}" if own else "") + ")"
            raise CRError(f"{_where(campaign, where)}: {exc.message}{whose}", hint=exc.hint) from None
    if point.get("backend_options"):  # a campaign you have not trusted cannot name native code to load
        from ..run.target import code_option_items
        from ..store import trust
        from ..store.catalog import show

        trust.require(code_option_items(show(campaign.ref, verify=False), entry, point["backend_options"]),
                      f"expanding {campaign.ref}")


def check_target(campaign: Campaign, sol: dict, point: dict) -> None:
    """CRError (naming the campaign's file and the matrix key) for a job that cannot run as
    asked, before anything runs: a dataset that is not here, a precision no variant has and
    no conversion makes for the job's backend, a pipeline key naming no step of the model's
    pipeline, `threads` and the backend's own thread option both set to different values."""
    from ..run.target import prepare, threads_option
    from ..runtime import registry

    backend = point.get("backend") or sol["meta"].get("backend")
    options = point.get("backend_options") or {}
    if backend and "threads" in point:
        alias = threads_option(registry.find(backend))
        given = {k: options[k] for k in (alias, "threads") if k and options.get(k) is not None}
        clash = {k: v for k, v in given.items() if str(v) != str(point["threads"])}
        if clash:
            raise CRError(f"{_where(campaign, '/matrix/threads')}: threads={point['threads']} and backend_options "
                          + " ".join(f"{k}={v}" for k, v in clash.items()) + " in one job: one setting, two values",
                          hint=f"vary threads only (it sets {alias or 'the backend threads'}), or only the backend option")
    which = "pipeline" if pipeline_overrides(point) else next(
        (k for k in ("dataset", "split", "variant", "backend") if k in point), None)
    if "precision" in point:
        from ..run.precision import PRECISIONS, backend_formats, conversions, existing
        from ..store.catalog import show

        if point["precision"] not in PRECISIONS:
            raise CRError(f"{_where(campaign, '/matrix/precision')}: unknown precision {point['precision']!r}",
                          hint=f"use one of {', '.join(PRECISIONS)}")
        try:
            model = show(sol["meta"]["model"], verify=False, prefer_repo=sol["repo"])
            formats = backend_formats(backend)
            if existing(model, formats, point["precision"]) is None and next(
                    iter(conversions(model, formats, point["precision"])), None) is None:
                from ..run.precision import variant_for

                variant_for(model["ref"], backend, point["precision"])  # raises the error naming what it has
        except CRError as exc:
            raise CRError(f"{_where(campaign, '/matrix/precision')}: {exc.message}", hint=exc.hint) from None
    if which is None:
        return
    try:
        prepare(sol["ref"], "validate", point.get("backend"), point.get("variant"), point.get("dataset"),
                point.get("split"), options or None, layered=False, pipeline=pipeline_overrides(point) or None)
    except CRError as exc:
        key = next((k for k in point if str(k).startswith(PIPELINE) and k[len(PIPELINE):] in exc.message), None) \
            or ("dataset" if "dataset" in point and str(point["dataset"]) in exc.message else which)
        raise type(exc)(f"{_where(campaign, '/matrix/' + key)}: {exc.message}", hint=exc.hint) from None


def job_id(sol: dict, overrides: dict, platform: str, target: dict, repetition: int, actions, params: dict) -> str:
    """16 hex digits of the sha256 of what decides the job's result (never a counter or a time)."""
    from ..store.content import component_sha256

    doc = {"solution": sol["meta"]["uid"], "sha256": component_sha256(sol["meta"]), "overrides": overrides,
           "platform": platform, "target": target, "repetition": repetition, "actions": actions, "params": params}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def expand(campaign: Campaign) -> list[CampaignJob]:
    """Every job of the campaign, in a deterministic order; CRError when there is none."""
    from ..store.content import component_sha256

    rules = campaign.meta.get("exclude") or []
    targets = platforms(campaign)
    repeat = int(campaign.meta.get("repeat") or 1)
    actions = campaign.meta.get("actions")
    params = with_sustained(campaign, campaign.meta.get("params") or {})
    sols = solutions(campaign)
    if not sols:
        raise CRError(f"{_where(campaign, '/solutions')}: the campaign names no solution",
                      hint='add "solutions": ["solution:NAME"] (cr find solution lists them)')
    check_size(campaign, len(sols))
    points = _points(campaign)
    excluded = _Rules(rules)
    jobs: list[CampaignJob] = []
    checked: set[tuple] = set()  # (solution, backend, options) already checked: one registry scan each
    for sol in sols:
        sha = component_sha256(sol["meta"])
        for point in points:
            kept = [(name, target) for name, target in targets.items() if not excluded.excludes(point, sol["ref"], name)]
            if not kept:  # excluded everywhere: never checked (an excluded combination may be one that cannot run)
                continue
            what = (sol["ref"], point.get("backend"), _key(point.get("backend_options")))
            if what not in checked:
                check_overrides(campaign, sol, point)
                checked.add(what)
            what = (sol["ref"], _key({k: v for k, v in point.items() if k in TARGET_KEYS or k == "threads"
                                      or str(k).startswith(PIPELINE)}))
            if what not in checked:
                check_target(campaign, sol, point)
                checked.add(what)
            for name, target in kept:
                target = {k: target[k] for k in ("marker", "requires") if target.get(k)}
                for rep in range(repeat):
                    jid = job_id(sol, point, name, target, rep, actions, params)
                    jobs.append(CampaignJob(jid, sol["ref"], sol["meta"]["uid"], sha, dict(point), name, target, rep, actions, params))
    if not jobs:
        raise CRError(f"{_where(campaign, '/exclude')}: every combination is excluded: the campaign expands to no job",
                      hint="remove or narrow an exclude entry (cr campaign show NAME --jobs shows the expansion)")
    return jobs


# The campaign option "sustained": "5m" travels in every job's params under this key (not an
# action: run_kwargs reads actions only), so it is in the job id; cr.campaign.jobs.run_here
# runs the sustained benchmark after the declared actions (docs/sustained.md).
SUSTAINED = "sustained"


def with_sustained(campaign: Campaign, params: dict) -> dict:
    """params with the campaign's sustained phase ({"sustained_s": seconds, ...}); CRError
    naming the campaign's file and /sustained for a bad duration."""
    value = campaign.meta.get("sustained")
    if value is None:
        return params
    from ..durations import parse_duration
    from ..runtime.sustained import window_for

    where = _where(campaign, "/sustained")
    seconds = parse_duration(value, where)
    window_for(seconds, None, where)
    return {**params, SUSTAINED: {"sustained_s": seconds}}


def run_kwargs(job: CampaignJob) -> tuple[dict, dict]:
    """(overrides per action for run_declared, its keywords: backend, variant, precision,
    dataset, split, backend_options, pipeline ({"resize.interpolation": ...})) of a job."""
    from ..run.hooks import actions_for
    from ..store.catalog import show

    kw = {k: job.overrides[k] for k in TARGET_KEYS if k in job.overrides}
    if pipeline_overrides(job.overrides):
        kw["pipeline"] = pipeline_overrides(job.overrides)
    given = {k: job.overrides[k] for k in PARAM_KEYS if k in job.overrides}
    overrides = {}
    for action in actions_for("solution"):  # every action a solution may declare (their metas' applies_to)
        props = (show(f"action:{action}", verify=False)["meta"].get("parameters") or {}).get("properties") or {}
        overrides[action] = {**(job.params.get(action) or {}), **{k: v for k, v in given.items() if k in props}}
    return overrides, kw
