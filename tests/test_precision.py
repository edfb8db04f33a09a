"""cr.run.precision.variant_for: a model at a precision a backend runs, an existing variant or
one cr compile makes once (then found as a version), and the precision matrix key."""
from __future__ import annotations

import pytest

from conftest import make_component, make_repo
from cr.errors import CRError
from cr.run.precision import variant_for


def test_existing_variants_are_found_without_compiling():
    fp32 = variant_for("model:lenet-digits", "onnxruntime", "fp32")
    assert (str(fp32), fp32.model_ref, fp32.compiled) == ("onnx", "model:lenet-digits@1.0.0", False)
    int8 = variant_for("model:lenet-digits@1.0.0", "tflite", "int8")
    assert (str(int8), int8.model_ref, int8.compiled) == ("tflite-int8", "model:lenet-digits@1.0.0", False)
    assert str(variant_for("model:lenet-digits", "torch", "fp32")) == "torchscript"


def test_a_precision_no_conversion_can_make_names_the_variants_and_the_conversions():
    with pytest.raises(CRError) as err:
        variant_for("model:lenet-digits", "onnxruntime", "fp16")
    assert "no variant of model:lenet-digits@1.0.0 is fp16" in err.value.message
    assert "tflite-int8 (tflite, int8)" in err.value.hint and "onnx ->" in err.value.hint
    with pytest.raises(CRError) as err:
        variant_for("model:lenet-digits", "torch", "int8")
    assert "backend 'torch'" in err.value.message
    with pytest.raises(CRError) as err:
        variant_for("model:lenet-digits", "onnxruntime", "int4")
    assert "unknown precision 'int4'" in err.value.message and "int8-dynamic" in err.value.hint


@pytest.mark.slow
def test_a_missing_precision_is_compiled_once_then_found_as_a_version():
    from cr.results.store import default_store

    made = variant_for("model:lenet-digits", "onnxruntime", "int8-dynamic")
    assert made.compiled and made.model_ref == "model:lenet-digits@1.0.0+onnx.int8.dynamic" and str(made) == "onnx"
    compiles = len(default_store().list(action="compile"))
    again = variant_for("model:lenet-digits", "onnxruntime", "int8-dynamic")
    assert (str(again), again.model_ref, again.compiled) == ("onnx", made.model_ref, False)
    assert len(default_store().list(action="compile")) == compiles == 1  # the second call compiled nothing
    plain = variant_for("model:lenet-digits", "onnxruntime", "int8")  # any int8 the backend loads: that one
    assert plain.model_ref == made.model_ref


def test_a_precision_matrix_key_no_conversion_can_make_is_refused_before_anything_runs(tmp_path, run_cr):
    repo = make_repo(tmp_path / "comps", "comps")
    path = make_component(repo, "campaign", "prec", solutions=["solution:lenet-digits-onnxruntime"],
                          matrix={"precision": ["fp32", "fp16"]})
    assert run_cr("repo", "add", repo).returncode == 0
    done = run_cr("campaign", "run", "prec")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    errors = [x for x in done.stderr.splitlines() if x.startswith("Error:")]
    assert len(errors) == 1 and str(path) in errors[0] and "/matrix/precision" in errors[0] and "fp16" in errors[0]
    assert run_cr("results", "list", "--json").stdout.strip() in ("[]", "")
