"""One vocabulary of number formats: the roles each can play, what it stores, what it computes in."""

import pytest

from helpers import compute, formats, gpus, memory, models, serving, steptime, units


def test_every_list_of_formats_derives_from_the_table():
    assert memory.WEIGHT_DTYPES == formats.names("weights")
    assert memory.KV_DTYPES == formats.names("kv_cache")
    assert compute.TRAINING_COMPUTE_DTYPES == steptime.STEP_DTYPES == formats.names("training")
    assert memory.TRAINING_STATE_DTYPES == tuple(d for d in formats.names("training") if d != "fp8")
    assert gpus.COMPUTE_DTYPES == formats.names("tensor_core")
    assert units.DTYPES == formats.names() and set(units.DTYPE_BITS) == set(units.DTYPES)
    assert "fp8-e5m2" not in units.DTYPES  # a gradient format inside FP8 recipes, nothing is stored in it
    assert {"nvfp4", "mxfp4"} <= set(memory.WEIGHT_DTYPES) and "tf32" not in memory.WEIGHT_DTYPES
    with pytest.raises(ValueError, match="role='biases' is not supported"):
        formats.names("biases")


def test_old_names_still_answer_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="memory.TRAIN_DTYPES is now helpers.memory.TRAINING_STATE_DTYPES"):
        assert memory.TRAIN_DTYPES == memory.TRAINING_STATE_DTYPES
    with pytest.warns(DeprecationWarning, match="TRAINING_DTYPES is now helpers.compute.TRAINING_COMPUTE_DTYPES"):
        assert compute.TRAINING_DTYPES == compute.TRAINING_COMPUTE_DTYPES
    with pytest.raises(AttributeError, match="has no attribute 'TRAIN_DTYPE'"):
        memory.TRAIN_DTYPE


def test_importing_the_package_reads_no_data_file():
    """The format lists are read on first use, not at import (no import-time side effects)."""
    import subprocess
    import sys
    code = ("import pandas; calls = []; real = pandas.read_csv\n"
            "pandas.read_csv = lambda *a, **k: calls.append(a) or real(*a, **k)\n"
            "import helpers, helpers.widgets, helpers.validation, helpers.plots\n"
            "print(len(calls))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def test_fp4_formats_store_their_block_scales():
    """NVFP4: E2M1 values with one E4M3 scale per 16 (4.5 bits); MXFP4: one E8M0 scale per 32 (4.25 bits).
    E2M1 keeps no infinities: its values run 0, 0.5, 1, 1.5, 2, 3, 4, 6."""
    bits = formats.storage_bits()
    assert bits["nvfp4"] == 4 + 8 / 16 and bits["mxfp4"] == 4 + 8 / 32 and bits["int4"] == 4 + 32 / 128
    table = formats._table()
    assert table.loc["fp4", "max_normal"] == 6 and table.loc["fp4", "smallest_normal"] == 1
    m = models.get("llama-3-70b")
    linear = m.n_params - m.embedding_params
    assert memory.quantized_weight_bytes(m, "nvfp4") == pytest.approx(linear * 4.5 / 8 + m.embedding_params * 2)


def test_fp4_weights_compute_in_fp4_on_blackwell_and_dequantize_elsewhere():
    """On a B200 the tensor cores read NVFP4 (9 PFLOP/s dense) and nothing is dequantized; an H100 has no
    FP4 tensor cores, so the same weights are unpacked like int4 and multiplied in BF16."""
    assert serving.compute_dtype("B200", "nvfp4") == "fp4" and serving.kernel_family("B200", "nvfp4") == ""
    assert gpus.get("B200").peak_flops("fp4") == 9000e12
    assert serving.compute_dtype("H100", "mxfp4") == "bf16" and serving.kernel_family("H100", "mxfp4") == "int4"
    assert serving.compute_dtype("A100 80GB", "fp8") == "bf16" and serving.kernel_family("A100 80GB", "fp8") == ""
    assert serving.compute_dtype("V100", "bf16") == "fp16"
    assert serving.serving_formats("B200") == ("bf16", "fp8", "int8", "int4", "nvfp4", "mxfp4")
    assert serving.serving_formats("A100 80GB") == ("bf16", "int8", "int4")
    b200 = {d: compute.decode_throughput("llama-3-70b", "B200", weight_dtype=d).expected for d in ("fp8", "nvfp4")}
    assert b200["nvfp4"] > 1.3 * b200["fp8"]  # fewer bytes and no dequantization on the way


def test_nvfp4_is_native_on_nvidia_only():
    """An MI355X has FP4 tensor cores, but its block-scaled instructions take MXFP4's E8M0 scales per
    32 values, not NVFP4's E4M3 scales per 16: it serves MXFP4 as it is, and NVFP4 weights would be
    unpacked like int4, so the selector never offers them there."""
    assert formats.native_on("nvfp4", "NVIDIA") and not formats.native_on("nvfp4", "AMD")
    assert formats.native_on("mxfp4", "AMD") and formats.native_on("fp8", "AMD")
    assert serving.compute_dtype("MI355X", "mxfp4") == "fp4" and serving.kernel_family("MI355X", "mxfp4") == ""
    assert serving.compute_dtype("MI355X", "nvfp4") == "bf16" and serving.kernel_family("MI355X", "nvfp4") == "int4"
    assert "nvfp4" not in serving.serving_formats("MI355X") and "mxfp4" in serving.serving_formats("MI355X")
    with pytest.raises(ValueError, match="dtype"):
        formats.native_on("fp5", "AMD")


def test_the_tensor_parallel_degree_is_tp_everywhere_and_n_gpus_still_answers():
    """Serving functions called the tensor-parallel degree ``n_gpus``; it is ``tp`` now, as in
    training layouts, and the old keyword works for one release with a warning."""
    from helpers import engine
    new = compute.decode_throughput("llama-3-70b", "H100", tp=2, weight_dtype="fp8")
    with pytest.warns(DeprecationWarning, match=r"decode_throughput\(n_gpus=...\) is now tp=..."):
        assert compute.decode_throughput("llama-3-70b", "H100", n_gpus=2, weight_dtype="fp8") == new
    with pytest.raises(ValueError, match="give tp= or its old name n_gpus=, not both"):
        compute.decode_throughput("llama-3-70b", "H100", n_gpus=2, tp=2)
    b = engine.budget("llama-3-70b", "L40S", tp=2, weight_dtype="fp8")
    with pytest.warns(DeprecationWarning, match="EngineBudget.n_gpus is now EngineBudget.tp"):
        assert b.n_gpus == b.tp == 2
