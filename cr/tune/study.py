"""The study: Optuna's sampler and its sqlite storage, driven by ask-and-tell.

    study = Study.open("lenet", space, objectives, constraints, seed=0)   # CR_HOME/tune/lenet.db
    search(study, runner, budget=8)

Why Optuna (docs/tune.md): its multi-objective TPE sampler (multivariate, with a
constraints function) proposes configurations from what earlier trials measured, and its
RDB storage on sqlite commits every trial as it starts and ends, so a search stopped by
Ctrl-C or kill -9 continues where it was: `cr tune` again opens the same file. What is
ours: the space (stacks a backend can load), the trial runner (run_action, one lock per
stack, validation once per stack), de-duplication (a configuration is measured once: a
repeated proposal is told the stored result, costing no budget), the budget, the
constraint rule, and the report (cr.results.pareto: ties within noise).

A study file belongs to one model and one space: opening it for another model (or other
options) is an error naming both, never a mix.
"""
from __future__ import annotations

import json
import random
import re
import uuid
import warnings
from dataclasses import dataclass

from ..errors import CRError
from ..events import reporter
from ..results import pareto
from .space import Config, Space

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_CONSTRAINT = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*(>=|<=)\s*(ref\s*([+-])\s*)?([0-9.eE+-]+)\s*$|^\s*([A-Za-z0-9_.]+)\s*(>=|<=)\s*ref\s*$")
INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class Constraint:
    metric: str
    op: str  # ">=" | "<="
    relative: bool  # the bound is the reference's value + offset
    offset: float

    @property
    def text(self) -> str:
        if self.relative:
            return f"{self.metric}{self.op}ref{'+' if self.offset >= 0 else '-'}{abs(self.offset):g}"
        return f"{self.metric}{self.op}{self.offset:g}"

    def bound(self, reference: float | None) -> float | None:
        if not self.relative:
            return self.offset
        return None if reference is None else reference + self.offset

    def violation(self, value: float, reference: float | None) -> float:
        """<= 0 when satisfied (Optuna's convention), by how much it is missed otherwise."""
        bound = self.bound(reference)
        if bound is None:
            return 1.0
        return bound - value if self.op == ">=" else value - bound


def parse_constraint(text: str) -> Constraint:
    m = _CONSTRAINT.match(text)
    if not m:
        raise CRError(f"--constraint {text!r}: expected METRIC>=VALUE, METRIC<=VALUE or METRIC>=ref-OFFSET",
                      hint="e.g. --constraint 'top1>=ref-0.01' (within 1 point of the reference) or --constraint top1>=0.95")
    if m.group(6):
        metric, op, rel, sign, num = m.group(6), m.group(7), True, "+", "0"
    else:
        metric, op, rel, sign, num = m.group(1), m.group(2), bool(m.group(3)), m.group(4) or "+", m.group(5)
    pareto.objective(metric)  # names the metrics there are
    try:
        value = float(num)
    except ValueError:
        raise CRError(f"--constraint {text!r}: {num!r} is not a number", hint="e.g. --constraint 'top1>=ref-0.01'") from None
    return Constraint(metric, op, rel, -value if sign == "-" else value)


def storage_path(name: str):
    from ..paths import cr_home

    if not _NAME.match(name or ""):
        raise CRError(f"tune name {name!r}: expected letters, digits, '.', '_' or '-' (at most 100)", hint="e.g. --name lenet-cpu")
    return cr_home() / "tune" / f"{name}.db"


def _optuna():
    try:
        import optuna
    except ImportError:
        raise CRError("cr tune needs Optuna, which is not installed", hint="pip install 'reefkit[tune]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", category=FutureWarning, module="optuna")
    return optuna


class Study:
    """One tune's Optuna study, its identity (model, space, objectives) and its caches."""

    def __init__(self, name: str, study, objectives: list, constraints: list[Constraint], space: Space):
        self.name = name
        self.optuna = study
        self.objectives = objectives
        self.constraints = constraints
        self.space = space
        self.uid = study.user_attrs["uid"]
        self.path = storage_path(name)

    # -- the cache the runner keeps validations in
    def get(self, key: str):
        return self.optuna.user_attrs.get(key)

    def set(self, key: str, value) -> None:
        self.optuna.set_user_attr(key, value)

    @property
    def tag(self) -> dict:
        return {"name": self.name, "uid": self.uid}

    @classmethod
    def open(cls, name: str, space: Space, objectives: list, constraints: list[Constraint], seed: int = 0,
             sampler: str = "tpe", startup: int | None = None) -> "Study":
        """Open (resume) or create the study NAME in CR_HOME/tune; CRError when the file holds
        another model's or another space's study."""
        optuna = _optuna()
        path = storage_path(name)
        identity = {"model": space.model, "space": space.to_dict(), "objectives": [o.name for o in objectives],
                    "constraints": [c.text for c in constraints]}
        existing = None
        if path.exists():
            existing = _identity(path, name)
            if existing is not None:
                _same(existing, identity, name, path)
        path.parent.mkdir(parents=True, exist_ok=True)
        storage = optuna.storages.RDBStorage(f"sqlite:///{path}")
        directions = ["maximize" if o.better == "higher" else "minimize" for o in objectives]
        made = _sampler(optuna, sampler, seed, startup, len(space.configs()))
        study = optuna.create_study(study_name=name, storage=storage, directions=directions, sampler=made,
                                    load_if_exists=True)
        if "uid" not in study.user_attrs:
            study.set_user_attr("uid", uuid.uuid4().hex[:16])
            study.set_user_attr("identity", identity)
        return cls(name, study, objectives, constraints, space)

    # -- trials
    def trials(self) -> list:
        return self.optuna.get_trials(deepcopy=False)

    def recover(self) -> int:
        """Trials left running by a killed process are told failed (interrupted; measured again
        when proposed). Their number."""
        optuna = _optuna()
        n = 0
        for t in self.trials():
            if t.state == optuna.trial.TrialState.RUNNING:
                self.optuna._storage.set_trial_user_attr(t._trial_id, INTERRUPTED, True)
                self.optuna._storage.set_trial_state_values(t._trial_id, optuna.trial.TrialState.FAIL)
                n += 1
        return n

    def measured(self) -> dict:
        """config key -> the finished trial that measured it (not a duplicate, not interrupted)."""
        out = {}
        for t in self.trials():
            a = t.user_attrs
            if "config" in a and "duplicate_of" not in a and not a.get(INTERRUPTED) and t.state.is_finished():
                out.setdefault(a["config"]["key"], t)
        return out

    def dead(self) -> dict:
        """stack key -> the trial that found the stack cannot run here (set-up or validation failed)."""
        out = {}
        for t in self.measured().values():
            if (t.user_attrs.get("outcome") or {}).get("stack_failed"):
                out.setdefault(t.user_attrs["config"]["key"].rsplit("/", 2)[0], t)  # the config key less /tN/bM
        return out


def _sampler(optuna, kind: str, seed: int, startup: int | None, grid: int):
    """Constraints reach the samplers through each trial's set_constraint (Optuna 5)."""
    if kind == "tpe":
        n = startup if startup is not None else 1  # the stack screen (screen()) is the start
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, n_startup_trials=n)
    if kind == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=max(4, min(20, grid // 4)))
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise CRError(f"--sampler {kind!r}: expected tpe, nsga2 or random", hint="tpe is the default")


def _identity(path, name: str) -> dict | None:
    """The identity stored in an existing study file (None: the file has no study of that name yet)."""
    import sqlite3

    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = con.execute("SELECT a.value_json FROM study_user_attributes a JOIN studies s ON a.study_id = s.study_id "
                              "WHERE s.study_name = ? AND a.key = 'identity'", (name,)).fetchone()
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise CRError(f"{path} is not a readable tune study ({exc})",
                      hint=f"move it aside, or choose another --name than {name!r}") from None
    return json.loads(row[0]) if row else None


def _same(stored: dict, wanted: dict, name: str, path) -> None:
    if stored.get("model") != wanted["model"]:
        raise CRError(f"tune {name!r} ({path}) belongs to {stored.get('model')}, not {wanted['model']}",
                      hint=f"give another --name for {wanted['model']} (the study of {stored.get('model')} is kept)")
    for key, what in (("space", "search space"), ("objectives", "objectives"), ("constraints", "constraints")):
        if stored.get(key) != wanted[key]:
            raise CRError(f"tune {name!r} ({path}) was started with other {what}: {_short(stored.get(key))}, now {_short(wanted[key])}",
                          hint="run it again with the same options to continue it, or give another --name for a new search")


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) < 200 else text[:197] + "..."


# ----------------------------------------------------------------------------------- search

def _distributions(optuna, space: Space) -> dict:
    """The stack is categorical; threads and batch size are ordered (their index in the
    space's sorted lists), so the sampler can learn that a neighbour behaves alike."""
    return {"stack": optuna.distributions.CategoricalDistribution([s.key for s in space.stacks]),
            "threads": optuna.distributions.IntDistribution(0, len(space.threads) - 1),
            "batch": optuna.distributions.IntDistribution(0, len(space.batch_sizes) - 1)}


def _params(space: Space, config: Config) -> dict:
    return {"stack": config.stack.key, "threads": space.threads.index(config.threads),
            "batch": space.batch_sizes.index(config.batch_size)}


def _config(space: Space, params: dict) -> Config:
    return Config(space.stack(params["stack"]), space.threads[params["threads"]], space.batch_sizes[params["batch"]])


def screen(study: Study) -> int:
    """A new study starts with one trial per stack (the fewest threads, the middle batch size),
    queued before the sampler's own proposals: every stack is seen (and validated) once
    before the sampler concentrates on the promising ones. The number queued."""
    if study.trials():
        return 0
    space = study.space
    allowed = {c.key for c in space.configs()}
    n = 0
    for stack in space.stacks:
        options = [c for c in space.configs() if c.stack == stack]
        if not options:
            continue
        middle = space.batch_sizes[len(space.batch_sizes) // 2]
        pick = min(options, key=lambda c: (c.threads, abs(space.batch_sizes.index(c.batch_size) - space.batch_sizes.index(middle))))
        if pick.key in allowed:
            study.optuna.enqueue_trial(_params(space, pick))
            n += 1
    return n


def _charged(trial) -> bool:
    """Whether a trial counts against the budget: it measured (or tried to measure) a
    configuration whose stack runs here. Finding that a stack cannot run here at all (its
    backend never loaded the variant, its set-up or validation failed) measured nothing,
    and later proposals of that stack are answered from it at no cost."""
    o = trial.user_attrs.get("outcome") or {}
    return (o.get("device_s") or 0) > 0 and not o.get("stack_failed")


def search(study: Study, runner, budget: int, seed: int = 0, defer: bool = False, refine: bool = True) -> dict:
    """Propose and measure configurations until ``budget`` trials have spent device time
    (across every run of this study) or every configuration a live stack offers is measured.
    A repeated proposal, or one of a stack found unable to run here, is told the stored
    result and costs nothing; one outside the space (after excludes) is told failed. Returns
    counts; Ctrl-C marks the running trial interrupted and re-raises. defer: accuracy is only
    constrained, so a stack is validated only once one of its points could be picked.
    refine: before asking the sampler, measure an unmeasured neighbour of the current front
    (neighbour())."""
    optuna = _optuna()
    space = study.space
    allowed = {c.key: c for c in space.configs()}
    dists = _distributions(optuna, space)
    rng = random.Random(seed)
    measured = study.measured()
    dead = study.dead()
    spent = sum(_charged(t) for t in measured.values())
    streak = 0
    ran = 0

    def left() -> list[Config]:
        return [c for k, c in allowed.items() if k not in measured and c.stack.key not in dead]

    while spent < budget and left():
        waiting = any(t.state == optuna.trial.TrialState.WAITING for t in study.trials())
        near = None if waiting or not refine else neighbour(study, measured, dead, allowed)
        if near is not None:  # the front's unmeasured neighbour first: where the front moves
            study.optuna.enqueue_trial(_params(space, near))
        elif streak >= 3 and not waiting:  # the sampler keeps proposing what it has: one it has not, at random
            pick = rng.choice(left())
            study.optuna.enqueue_trial(_params(space, pick))
            streak = 0
        trial = study.optuna.ask(dists)
        config = _config(space, trial.params)
        key = config.key
        trial.set_user_attr("config", {"key": key, **config.to_dict()})
        earlier = measured.get(key) or dead.get(config.stack.key)
        if key not in allowed:
            trial.set_user_attr("duplicate_of", None)
            trial.set_user_attr("error", "excluded from the search space")
            study.optuna.tell(trial, state=optuna.trial.TrialState.FAIL)
            streak += 1
            continue
        if earlier is not None:
            _tell_again(study, trial, earlier)
            streak += 1
            continue
        streak = 0
        try:
            outcome = runner.run(config, trial.number, (lambda values: could_matter(study, measured, values)) if defer else None,
                                 lambda values: not any(v > 0 for v in violations(study, values)))
        except BaseException:
            study.optuna._storage.set_trial_user_attr(trial._trial_id, INTERRUPTED, True)
            study.optuna.tell(trial, state=optuna.trial.TrialState.FAIL)
            raise
        _tell(study, trial, outcome)
        frozen = study.optuna._storage.get_trial(trial._trial_id)
        measured[key] = frozen
        if outcome.stack_failed:
            dead[config.stack.key] = frozen
        spent += _charged(frozen)
        ran += 1
        reporter().progress(f"tune {study.name}", spent, budget, "trials")
    return {"ran_now": ran, "charged": spent, "measured": len(measured), "of": len(allowed)}


def run_grid(study: Study, runner) -> dict:
    """Measure every configuration of the space (the --verify baseline), resumable like a search."""
    optuna = _optuna()
    dists = _distributions(optuna, study.space)
    measured = study.measured()
    dead = study.dead()
    configs = study.space.configs()
    for config in configs:
        if config.key in measured or config.stack.key in dead:
            continue
        study.optuna.enqueue_trial(_params(study.space, config))
        trial = study.optuna.ask(dists)
        trial.set_user_attr("config", {"key": config.key, **config.to_dict()})
        try:
            outcome = runner.run(config, trial.number, None, lambda values: not any(v > 0 for v in violations(study, values)))
        except BaseException:
            study.optuna._storage.set_trial_user_attr(trial._trial_id, INTERRUPTED, True)
            study.optuna.tell(trial, state=optuna.trial.TrialState.FAIL)
            raise
        _tell(study, trial, outcome)
        measured[config.key] = trial
        if outcome.stack_failed:
            dead[config.stack.key] = trial
        reporter().progress(f"grid {study.name}", len(measured), len(configs), "settings")
    return {"measured": len(measured), "of": len(configs)}


def neighbour(study: Study, measured: dict, dead: dict, allowed: dict) -> Config | None:
    """An unmeasured configuration one step from a front point (same stack; the next or
    previous batch size or thread count), breadth first: from the front point with the
    fewest measured neighbours, the best-ranked among those; None when the front's
    neighbourhood is measured (then the sampler proposes)."""
    space = study.space
    pts = []
    for key, t in measured.items():
        o = t.user_attrs.get("outcome") or {}
        if o.get("status") == "ok" and (o.get("unchecked") or not any(v > 0 for v in t.user_attrs.get("constraints") or [])):
            pts.append({"id": key, "values": {ob.name: o["values"][ob.name] for ob in study.objectives}})
    if not pts:
        return None
    best = None  # (measured neighbours, rank, the first unmeasured neighbour)
    for rank, key in enumerate(pareto.analyse(pts, study.objectives)["front"]):
        c = allowed.get(key)
        if c is None or c.stack.key in dead:
            continue
        ti, bi = space.threads.index(c.threads), space.batch_sizes.index(c.batch_size)
        steps = [(ti, bi - 1), (ti, bi + 1), (ti - 1, bi), (ti + 1, bi)]
        near = [Config(c.stack, space.threads[t], space.batch_sizes[b]) for t, b in steps
                if 0 <= t < len(space.threads) and 0 <= b < len(space.batch_sizes)]
        near = [n for n in near if n.key in allowed]
        todo = [n for n in near if n.key not in measured]
        if todo and (best is None or (len(near) - len(todo), rank) < best[:2]):
            best = (len(near) - len(todo), rank, todo[0])
    return None if best is None else best[2]


def could_matter(study: Study, measured: dict, values: dict) -> bool:
    """Whether a point's accuracy could change a decision: no feasible, accuracy-checked
    point measured so far dominates it on the objectives (cr.results.pareto's rule)."""
    mine = {"values": values}
    for t in measured.values():
        o = t.user_attrs.get("outcome") or {}
        if o.get("status") != "ok" or o.get("unchecked") or any(v > 0 for v in t.user_attrs.get("constraints") or []):
            continue
        if pareto.dominates({"values": o["values"]}, mine, study.objectives):
            return False
    return True


def _tell(study: Study, trial, outcome) -> None:
    optuna = _optuna()
    trial.set_user_attr("outcome", outcome.to_dict())
    if outcome.status != "ok":
        study.optuna.tell(trial, state=optuna.trial.TrialState.FAIL)
        return
    held = [0.0] * len(study.constraints) if outcome.unchecked else violations(study, outcome.values)
    trial.set_user_attr("constraints", held)
    for c, v in zip(study.constraints, held):
        trial.set_constraint(c.text, v)
    study.optuna.tell(trial, [outcome.values[o.name]["value"] for o in study.objectives])


def _tell_again(study: Study, trial, earlier) -> None:
    """A repeated configuration: the stored result, told again (so the sampler learns), at no cost."""
    optuna = _optuna()
    trial.set_user_attr("duplicate_of", earlier.number)
    if "constraints" in earlier.user_attrs:
        trial.set_user_attr("constraints", earlier.user_attrs["constraints"])
        for c, v in zip(study.constraints, earlier.user_attrs["constraints"]):
            trial.set_constraint(c.text, v)
    if earlier.state == optuna.trial.TrialState.COMPLETE:
        study.optuna.tell(trial, list(earlier.values))
    else:
        study.optuna.tell(trial, state=optuna.trial.TrialState.FAIL)


def reference_value(study: Study, metric: str) -> float | None:
    """The reference's value of metric: the validation of the model's first fp32 variant
    (cached in the study by check_metrics)."""
    ref = study.get("reference")
    if not ref:
        return None
    v = (study.get(f"validation:{ref}") or {}).get("values", {}).get(metric)
    return None if v is None else v["value"]


def violations(study: Study, values: dict) -> list[float]:
    out = []
    for c in study.constraints:
        v = values.get(c.metric)
        out.append(1.0 if v is None else c.violation(v["value"], reference_value(study, c.metric)))
    return out
