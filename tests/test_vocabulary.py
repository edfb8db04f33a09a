"""One results vocabulary (cr.results.summary): a run is labelled the same way by
`cr results list/show`, the built dashboard and a campaign's worker description, and the
label names the settings that ran (defaults, measurement knobs and columns of their own
left out; the backend's options in)."""
from __future__ import annotations

import json
import re

from cr.dashboard import sample
from cr.results.summary import (
    config_differences, config_key, config_label, describe_difference, platform_description, value_text,
)

from helpers.dashboard import _load_js, _rows  # noqa: E402  (the site's data format, read as its own tests read it)


def _ok(done):
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _row(text: str, field: str) -> str:
    """The value of FIELD in `cr results show`'s plain table (FIELD, then at least two spaces)."""
    found = re.search(rf"^{re.escape(field)}\s{{2,}}(.*)$", text, re.MULTILINE)
    assert found, f"no {field} row in:\n{text}"
    return found.group(1).rstrip()


def test_one_run_has_one_config_and_platform_label_in_the_cli_the_dashboard_and_a_campaign(run_cr, cr_home, tmp_path):
    from cr.campaign.jobs import describe
    from cr.platform import current

    done = _ok(run_cr("benchmark", "model", "lenet-digits", "--backend", "onnxruntime", "--threads", "2",
                      "-O", "inter_op_threads=1", "--min-duration", "0", "--min-queries", "20", "--json", timeout=300))
    record = json.loads(done.stdout)
    uid = record["uid"]
    config = "single-stream threads=2 batch=1 inter_op_threads=1"  # the knobs (min_duration_s, ...) are not settings
    platform = describe(current())  # what a campaign worker on this machine says it is
    where = f"{record['platform']['os']}/{record['platform']['arch']}"
    assert f"({where}, " in platform and platform == platform_description(record["platform"])

    shown = _ok(run_cr("results", "show", uid)).stdout
    assert _row(shown, "configuration") == config
    assert _row(shown, "platform") == f"{platform} (fingerprint {record['platform']['fingerprint']})"
    listed = _ok(run_cr("results", "list")).stdout
    line = next(x for x in listed.splitlines() if x.startswith(uid))
    assert f"  {platform}  " in line
    assert json.loads(_ok(run_cr("results", "list", "--json")).stdout)[0]["platform_description"] == platform
    compared = _ok(run_cr("results", "compare", uid, uid))
    assert f"  {config}  {platform}  " in compared.stderr

    site = tmp_path / "site"
    _ok(run_cr("dashboard", "build", "--results", cr_home / "results", "--out", site))
    rows = [r for r in _rows(_load_js(site / "data" / "index.js", "CR_DATA_INDEX")) if r["bench_uid"] == uid]
    assert len(rows) == 1
    assert rows[0]["platform_label"] == platform
    # the site shows the scenario and the rest of the label in one cell ("Scenario, config")
    assert f"{rows[0]['scenario']} {rows[0]['config']}" == config


def _bench(**config) -> dict:
    rec = sample.benchmark_record("m", "onnxruntime", "onnx", "fp32", sample.XEON, [1, 2, 3], uid="0" * 16,
                                  started="2026-12-01T10:00:00.000Z")
    rec["config"].update(config)
    return rec


def test_the_label_names_the_settings_that_ran_and_nothing_else():
    plain = _bench()
    assert config_label(plain) == "single-stream batch=1"  # the model's own batch, as run
    # measurement knobs change the precision of a figure, not the figure: not in the label, not in the key
    knobs = _bench(min_duration_s=60, warmup_max_s=9, max_duration_s=90, seed=7, fidelity=True)
    assert config_label(knobs) == config_label(plain) and config_key(knobs) == config_key(plain)
    tuned = _bench(threads=4, batch_size=8, engine="loadgen", inputs="synthetic", include_preprocess=True,
                   backend_options={"intra_op_threads": 2})
    assert config_label(tuned) == ("single-stream threads=4 batch=8 engine=loadgen inputs=synthetic "
                                   "include_preprocess=true intra_op_threads=2")
    # two runs that differ only in a backend option have two labels (and two keys)
    other = _bench(threads=4, batch_size=8, engine="loadgen", inputs="synthetic", include_preprocess=True,
                   backend_options={"intra_op_threads": 1})
    assert config_label(other) != config_label(tuned) and config_key(other) != config_key(tuned)
    assert [d[0] for d in config_differences(tuned, other)] == ["backend_options"]
    # a parameter of one scenario only shows in that scenario
    server = _bench(scenario="server", target_qps=50.0, latency_bound_ms=10, samples_per_query=8)
    assert config_label(server) == "server batch=1 target_qps=50 latency_bound_ms=10"
    # another action's parameters (here a user action's) are settings too; the dataset has a column of its own
    custom = _bench(my_knob="fast")
    custom["action"] = "my-action"
    assert config_label(custom) == "single-stream batch=1 split=test my_knob=fast"
    assert config_label(custom, beside=("scenario", "split"), empty="") == "batch=1 my_knob=fast"
    val = sample.validate_record("m", "onnxruntime", "onnx", "fp32", sample.XEON, 0.9, uid="1" * 16,
                                 started="2026-12-01T10:00:00.000Z")
    assert config_label(val) == "split=test"  # the samples it judged; iou_threshold=0.5 is the default
    val["config"].update(split=None, iou_threshold=0.5, parity_atol=0.01)
    assert config_label(val) == "defaults" and config_label(val, empty="") == ""


def test_differences_and_values_are_worded_like_labels():
    assert describe_difference("batch_size", 1, 8) == "batch 1 vs 8"
    assert describe_difference("threads", None, 2) == "threads unset vs 2"
    assert describe_difference("include_preprocess", None, True) == "include_preprocess unset vs true"
    assert [value_text(v) for v in (2.0, 0.1234567, True, None, {"b": 1, "a": [2]})] == [
        "2", "0.123457", "true", "null", '{"a":[2],"b":1}']
    assert value_text("x" * 100) == "x" * 60
    from cr.results.causes import likely_causes

    # compare's likely causes name a field as labels do (batch, not batch_size)
    causes = likely_causes(_bench(), _bench(batch_size=8, include_preprocess=True))
    assert [c["detail"] for c in causes] == ["batch 1 (A) vs 8 (B)", "include_preprocess unset (A) vs true (B)"]
    assert len(config_label(_bench(note="y" * 500, other="z" * 500))) <= 200


def test_the_platform_label_tells_machines_apart():
    pi = dict(sample.PI4)
    assert platform_description(pi) == "Raspberry Pi 4 Model B (linux/aarch64, 4 cores)"
    assert platform_description({**pi, "arch": "armv7l"}) == "Raspberry Pi 4 Model B (linux/armv7l, 4 cores)"
    assert platform_description(sample.XEON) == "Intel Xeon (linux/x86_64, 2 cores)"  # no (R), no 'Processor'
    gpus = {**sample.XEON, "accelerators": [{"name": "NVIDIA A100"}, {"name": "NVIDIA A100"}, {"name": "NVIDIA T4"}]}
    assert platform_description(gpus) == "Intel Xeon (linux/x86_64, 2 cores) + NVIDIA A100 x2, NVIDIA T4"
    emulated = {**pi, "cpu": {"cores": 1}, "emulated": "qemu-user", "host_arch": "x86_64"}
    assert platform_description(emulated) == ("Raspberry Pi 4 Model B (linux/aarch64, 1 core) "
                                              "[emulated: qemu-user aarch64 on x86_64]")
    phone = {"os": "android", "arch": "aarch64", "android": {"manufacturer": "Google", "model": "Pixel 7"}}
    assert platform_description(phone) == "Google Pixel 7 (android/aarch64)"
    # a record from elsewhere may hold anything: a label, never an exception
    for hostile in (None, [], {"board": 5, "cpu": "x", "accelerators": [3, {"name": None}], "os": {}},
                    {"cpu": {"model": 7, "cores": True}}):
        assert platform_description(hostile) == "unknown machine"
