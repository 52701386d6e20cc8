"""Planning from Python: the version, plan texts, ops and their errors (no GPU needed)."""
import os
import re
import subprocess
from pathlib import Path

import pytest

import magicube

ROOT = Path(__file__).resolve().parents[2]


def test_version_matches_the_library_and_the_header():
    assert magicube.__version__ == magicube.version()
    header = (ROOT / "include/magicube/magicube.h").read_text()
    assert re.search(r'#define MAGICUBE_VERSION_STRING "([^"]+)"', header).group(1) == magicube.__version__


def test_plan_text():
    text = magicube.plan("spmm.s8xs8.v8.i32.sm_90")
    assert text.startswith("plan spmm.s8xs8.v8.n")
    assert "kernel    magicube_spmm_s8s8_v8" in text
    assert "bounds    max_exact_k" in text
    assert magicube.plan("sddmm.u3xs7.v2.i32.sm_90").startswith("plan sddmm.u3xs7.v2.")


@pytest.mark.skipif(not os.environ.get("MAGICUBE_CLI"), reason="MAGICUBE_CLI (build/bin/magicube) not set")
def test_plan_is_what_the_cli_prints():
    cli = subprocess.run([os.environ["MAGICUBE_CLI"], "plan", "--lhs=s12", "--rhs=u4", "--v=4", "--arch=sm_80"],
                         capture_output=True, text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, check=True)
    text = magicube.plan("spmm.s12xu4.v4.i32.sm_80")
    assert cli.stdout.startswith(text)


@pytest.mark.parametrize("spec, needle", [
    ("spmm.s17xs8.v8.i32.sm_90", "s17"),
    ("spmm.s8xs8.v3.i32.sm_90", "3"),
    ("gemm.s8xs8.v8.i32.sm_90", "gemm"),
    ("spmm.s8xs8.v8.i32.sm_70", "sm_70"),
    ("", "spec"),
])
def test_bad_specs_raise_error_naming_the_field(spec, needle):
    with pytest.raises(magicube.Error) as e:
        magicube.plan(spec)
    assert e.value.kind == "invalid"
    assert needle in str(e.value)


def test_non_string_spec():
    with pytest.raises(magicube.Error):
        magicube.plan(42)


def test_op_texts_and_queries():
    op = magicube.Op("spmm.s8xu4.v8.f16+rc+colbias.sm_90")
    assert re.match(r"spmm\.s8xu4\.v8\.n\d+", op.spec)  # every knob pinned
    assert op.chosen_by.startswith("chosen by: ")
    assert op.kernel_name.startswith("magicube_spmm_s8u4_v8")
    assert op.output_dtype_name == "float16"
    assert op.v == 8 and not op.is_sddmm
    assert op.candidate >= 0
    assert op.max_reduction_length > 0
    again = magicube.Op(op.spec, candidate=op.candidate)
    assert again.plan == op.plan and again.chosen_by == "chosen by: flags"
    assert magicube.Op("sddmm.s8xs8.v4.i64.sm_80").is_sddmm
    with pytest.raises(magicube.Error, match="candidate"):
        magicube.Op("spmm.s8xs8.v8.i32.sm_90", candidate=10_000)


def test_library_path():
    assert Path(magicube.library_path()).name.startswith("libmagicube.so")
