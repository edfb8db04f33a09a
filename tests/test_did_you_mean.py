"""A mistyped component name or backend names the close matches in its Error line."""
from __future__ import annotations

import pytest

from cr.errors import similar


@pytest.mark.parametrize("args, expected", [
    (("show", "model:lenet-digit"), "Error: no component model:lenet-digit (did you mean lenet-digits?)"),
    (("show", "solution:lenet-digits-onnxruntim"),
     "Error: no component solution:lenet-digits-onnxruntim (did you mean lenet-digits-onnxruntime?)"),
    (("benchmark", "model", "lenet-digits", "--backend", "onnxruntme"),
     "Error: unknown backend 'onnxruntme' (did you mean onnxruntime?)"),
])
def test_a_typo_gets_a_did_you_mean(run_cr, args, expected):
    done = run_cr(*args)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and lines[0] == expected, done.stderr
    assert lines[1].startswith("Hint: ") and len(lines) == 2


def test_nothing_close_names_nothing(run_cr):
    done = run_cr("show", "model:zzz")
    assert done.returncode == 1 and done.stderr.splitlines()[0] == "Error: no component model:zzz"


def test_similar_ranks_the_closest_first_and_drops_the_far():
    assert similar("tflit", ["torch", "tflite", "tensorflow"]) == ["tflite"]
    assert similar("lenet-digits-v2", ["lenet-digits", "lenet-digits-v1", "iris"]) == ["lenet-digits-v1", "lenet-digits"]
    assert similar("abc", ["onnxruntime"]) == []
