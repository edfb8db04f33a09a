"""Campaigns whose jobs vary the stack (backend, threads, pipeline steps, dataset split): each
job runs in the environment of its own target, resolved once per distinct stack; one knob for
threads, with the count the backend ran with in every record; pipeline overrides applied to a
copy of the model's steps; the summary joins each job's benchmark and validation and a FAIL
fails the campaign. Real frameworks (lenet-digits on onnxruntime, torch, tflite)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from conftest import make_component, make_repo

QUICK = {"min_duration_s": 0, "min_queries": 10, "warmup_queries": 0, "max_duration_s": 0, "warmup_until_stable": False}


@pytest.fixture
def repo(tmp_path, run_cr):
    r = make_repo(tmp_path / "comps", "comps")
    assert run_cr("repo", "add", r).returncode == 0
    return r


def campaign(repo: Path, name: str = "stacks", **fields) -> Path:
    meta = {"solutions": ["solution:lenet-digits-onnxruntime"], "params": {"benchmark": QUICK}, **fields}
    return make_component(repo, "campaign", name, **meta)


def _refused(done, *words):
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [x for x in done.stderr.splitlines() if x.startswith("Error:")]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, (word, done.stderr)


@pytest.mark.slow
def test_a_cross_stack_campaign_runs_every_job_in_its_own_environment_resolving_each_stack_once(repo, monkeypatch):
    from cr.campaign.jobs import joined
    from cr.campaign.runner import run_campaign
    from cr.resolve import resolver
    from cr.results.store import default_store

    campaign(repo, matrix={"backend": ["onnxruntime", "torch", "tflite"], "threads": [1, 2]}, actions=["benchmark"])
    resolved = Counter()
    real = resolver.resolve

    def counting(requirements, universe, *a, **kw):  # what the resolver is asked for: one stack
        resolved[tuple(sorted(str(r) for r in requirements))] += 1
        return real(requirements, universe, *a, **kw)

    monkeypatch.setattr(resolver, "resolve", counting)
    run = run_campaign("stacks")
    rows = joined(run.summary(), run.jobs)
    assert [r["state"] for r in rows] == ["done"] * 6, [r.get("error") for r in rows]
    assert resolved and max(resolved.values()) == 1, resolved  # each distinct stack resolved once, then cached
    assert len(resolved) <= 3  # the solution's own (onnxruntime), torch's, tflite's
    # the same campaign again (--rerun): a lock made before a later job registered the software
    # it detected is resolved once more (the lock's cache key covers the registered software),
    # never once per job
    resolved.clear()
    again = run_campaign("stacks", rerun=True)
    assert not again.failed_any() and max(resolved.values(), default=0) <= 1, resolved
    store = default_store()
    for row in rows:
        for uid in row["results"]:
            record = store.get(uid)
            backend, info = record["backend"]["name"], record["backend"]["info"]
            assert backend == row["varied"]["backend"]
            # the count the backend ran with is the one the record is labelled with
            assert record["config"]["threads"] == row["varied"]["threads"] == info["threads"], (backend, info)
            if backend == "onnxruntime":
                assert record["config"]["backend_options"]["intra_op_threads"] == row["varied"]["threads"]
                if row["varied"]["threads"] == 2:  # the solution's intra_op_threads=1 gave way, and says so
                    assert record["config"]["threads_overrode"] == {"backend_options.intra_op_threads": 1}
            else:
                assert "intra_op_threads" not in (record["config"]["backend_options"] or {})
                assert record["lock"]["root"] == "model:lenet-digits@1.0.0"


def test_threads_and_the_backends_own_thread_option_in_one_job_are_refused(repo, run_cr):
    path = campaign(repo, matrix={"threads": [2], "backend_options": [{"intra_op_threads": 1}]})
    _refused(run_cr("campaign", "run", "stacks"), str(path), "/matrix/threads", "threads=2", "intra_op_threads=1")
    assert run_cr("results", "list", "--json").stdout.strip() in ("[]", "")
    done = run_cr("benchmark", "solution", "lenet-digits-onnxruntime", "--threads", "2", "-O", "intra_op_threads=1")
    _refused(done, "threads=2", "intra_op_threads=1")


def test_a_pipeline_key_naming_no_step_names_the_steps_the_pipeline_has(repo, run_cr):
    path = campaign(repo, matrix={"pipeline.resize.interpolation": ["nearest"]})
    _refused(run_cr("campaign", "show", "stacks"), str(path), "/matrix/pipeline.resize.interpolation",
             "no resize step", "scale, cast, reshape, softmax")
    campaign(repo, "param", matrix={"pipeline.scale.colour": [1]})
    _refused(run_cr("campaign", "show", "param"), "pipeline.scale.colour", "factor, offset")


def test_a_dataset_that_does_not_exist_is_named(repo, run_cr):
    path = campaign(repo, matrix={"dataset": ["dataset:no-such-digits"]})
    _refused(run_cr("campaign", "run", "stacks"), str(path), "/matrix/dataset", "no-such-digits")


def test_pipeline_and_split_overrides_run_on_a_copy_and_a_failed_validation_fails_the_campaign(repo, run_cr):
    meta = repo.parent / "model-before.json"
    shipped = Path(__file__).resolve().parent.parent / "repo" / "model" / "lenet-digits" / "1.0.0" / "meta.json"
    meta.write_text(shipped.read_text())
    campaign(repo, matrix={"pipeline.scale.factor": [0.0625, 0.0], "split": ["test"]}, actions=["validate"])
    done = run_cr("campaign", "run", "stacks", "--json", timeout=300)
    assert done.returncode == 1, done.stderr
    rows = json.loads(done.stdout)
    by_factor = {r["varied"]["pipeline.scale.factor"]: r for r in rows}
    assert by_factor[0.0625]["state"] == "done" and by_factor[0.0625]["validation"] == "PASS"
    assert by_factor[0.0]["state"] == "failed" and by_factor[0.0]["validation"] == "FAIL"  # all-zero inputs: one class
    assert by_factor[0.0]["top1"] < 0.5 < by_factor[0.0625]["top1"]
    assert "validation FAIL: top1" in by_factor[0.0]["error"]
    # the study's paired test: the first job is the baseline; all-zero inputs lose ~0.88 top-1 on the same 360 samples
    assert by_factor[0.0625]["significance"]["verdict"] == "baseline"
    sig = by_factor[0.0]["significance"]
    assert sig["baseline"] == by_factor[0.0625]["job"] and sig["verdict"] == "significant", sig
    assert sig["mcnemar_p"] < 1e-6 and sig["interval"][1] < 0 < -sig["delta"]
    assert any("scale" in step for step in sig["pipeline"]), sig["pipeline"]
    assert "Error: 1 job(s) of campaign:stacks" in done.stderr and "pipeline.scale.factor=0" in done.stderr
    records = {r: json.loads(run_cr("results", "show", by_factor[r]["results"][0], "--json").stdout) for r in by_factor}
    assert records[0.0]["config"]["pipeline_overrides"] == {"scale.factor": 0.0}
    assert records[0.0]["config"]["split"] == "test"
    assert records[0.0]["pipeline"]["sha256"] != records[0.0625]["pipeline"]["sha256"]  # the digest of what ran
    assert {"op": "scale", "factor": 0.0} in records[0.0]["pipeline"]["preprocess"]
    assert shipped.read_text() == meta.read_text()  # the model's own pipeline is untouched
    # the status view joins the same figures
    status = json.loads(run_cr("campaign", "status", "stacks", "--json").stdout)
    assert {r["job"]: r["validation"] for r in status} == {r["job"]: r["validation"] for r in rows}
    table = run_cr("campaign", "status", "stacks").stdout
    assert "PIPELINE.SCALE.FACTOR" in table and "FAIL" in table and "PASS" in table
    assert "SIGNIFICANCE" in table and "significant (p" in table and "McNemar" in table  # the column and its rule


def test_a_job_whose_stack_lacks_software_fails_naming_it_and_install(repo, monkeypatch):
    from cr.campaign import spec
    from cr.campaign.jobs import run_here
    from cr.resolve import plan

    campaign(repo, matrix={"backend": ["torch"]})
    (job,) = spec.expand(spec.load("stacks"))
    real = plan.lock

    def torch_missing(ref, *a, **kw):  # this machine as one without torch installed
        the_lock = real(ref, *a, **kw)
        if any("torch" in r for r in kw.get("requires") or ()):
            the_lock = {**the_lock, "missing": ["torch"]}
        return the_lock

    monkeypatch.setattr(plan, "lock", torch_missing)
    outcome = run_here(job, job.solution, init=False)
    assert outcome["status"] == "failed" and outcome["records"] == []
    assert "backend torch" in outcome["error"]["message"] and "not installed here: torch " in outcome["error"]["message"]
    assert "--install" in outcome["error"]["hint"] and "cr install --lock" in outcome["error"]["hint"]
