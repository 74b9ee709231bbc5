"""Every public function of the model layer, enumerated: each one is either driven with bad input
(here, in test_validation's cases or in test_properties' hypothesis tests) or named below as an
unchecked fast path with the reason. A new public function without either fails
:func:`test_every_public_function_is_driven_with_bad_input`.

Here each function's valid example is called once, then with each argument in turn replaced by
values a reader might type by mistake: the result must hold only finite, non-negative numbers, or
the function must raise a ValueError naming the argument (:func:`test_properties.clean_or_named_error`).
"""

import importlib
import inspect
import math
import pathlib
import pkgutil
import re

import pytest

import helpers
from helpers import cost, gpus, models, planner, scaling, steptime, traffic
from test_properties import _numbers, clean_or_named_error
from test_validation import CASES

#: The layers above the model layer: they draw and wire, and are tested through the panels.
PRESENTATION = {"plots", "widgets", "book"}

#: Public functions that check nothing, on purpose, with the reason.
UNCHECKED = {
    **{f"calibration.{name}": "fits and predicts the package's own data rows (scripts/calibrate.py), not a reader's input"
       for name in ("best_layouts", "candidates", "errors", "fit", "fit_serving", "layout_row", "leave_one_family_out",
                    "fit_kv_block_bandwidth", "fit_host_seconds", "static_batch_memory", "host_runs", "megatron_flops_per_token", "predict", "predict_serving",
                    "published_seconds", "published_throughput", "run_model", "run_network", "serving_errors", "serving_leave_one_group_out")},
    **{f"units.{name}": "a checker: raising the ValueError is its whole job"
       for name in ("argument", "check_bool", "check_choice", "check_instance", "check_list", "check_positive",
                    "check_range", "check_result")},
    "units.renamed_keywords": "a decorator applied at import, to the package's own functions",
    "formats.lazy_constants": "builds a module __getattr__ at import, for the package's own modules",
    "compute.banded_seconds": "bands the terms of the serving step model's own output (serving.decode_seconds, "
                              "serving.batch_seconds), not a reader's input",
    "gpus.fitted_value": "averages the step models' own fitted parameters (steptime.Calibration, "
                        "serving.ServingCalibration), not a reader's input",
    "memory.check_split": "a checker: raising the ValueError is its whole job",
    "memory.check_ep": "a checker: raising the ValueError is its whole job",
    "memory.check_cp": "a checker: raising the ValueError is its whole job",
    **{name: "an array fast path of the step models (numpy broadcasting over thousands of layouts); its callers "
             "check their arguments (steptime.step_time, planner.plans, memory.training)"
       for name in ("comm.allreduce_expected", "comm.alpha_beta", "memory.first_stage_layers", "serving.cache_read_seconds",
                    "memory.inference_workspace", "memory.layer_activation_bytes", "memory.logit_activation_bytes",
                    "memory.shard", "memory.stage_activation_bytes", "planner.layout_memory", "serving.batch_seconds", "serving.batch_totals", "serving.experts_read",
                    "serving.weight_share_read", "steptime.interleaved", "steptime.picked", "steptime.stacked",
                    "steptime.terms")},
}

LLAMA = models.get("llama-2-7b")
H100 = gpus.get("H100")
LAYOUT = steptime.Layout(tp=2, dp=4, micro_batch=2, global_batch=64, seq_len=2048)
REPLICA = traffic.replica("llama-3-8b", "H100", prompt_len=512, output_len=128)
QWEN3 = pathlib.Path(helpers.__file__).parent / "data" / "configs" / "qwen3-8b.json"

#: A valid call of every public function not driven elsewhere (keyword arguments).
EXAMPLES = {
    "calibration.band": dict(gpu="H100", dtype="bf16"),
    "claims.finding": dict(claim_id="adam-2x"),
    "memory.activation_value_bytes": dict(dtype="tf32"),
    "compare.frame": dict(estimates=()),
    "claims.get": dict(claim_id="weights-175b"),
    "formats.native_on": dict(dtype="nvfp4", vendor="AMD"),
    "claims.title": dict(claim_id="gpt3-175b"),
    "compute.decode_step": dict(model="llama-2-7b", batch_size=4, context_len=1024, weight_dtype="int8", tp=2),
    "compute.run_time": dict(plan=planner.plan("llama-2-7b", "H100", 8), tokens=1e11, goodput=0.9),
    "cost.assumption": dict(name="spot_discount"),
    "cost.break_even_months": dict(table=cost.rent_vs_buy("H100", 8)),
    "cost.break_even_utilization": dict(curve=cost.serving_cost_curve("llama-3-8b", "H100"), api_usd_per_million=0.5),
    "cost.price": dict(gpu="H100", kind="cloud_hour"),
    "cost.rent_or_buy": dict(gpu="H100", n_gpus=8, years=2, utilization=0.6),
    "cost.serving_costs": dict(model="llama-3-8b", gpu="H100", prompt_len=512, output_len=128),
    "cost.serving_cost_per_million_tokens": dict(model="llama-3-8b", gpu="H100", tp=1, batch_size=8,
                                                 weight_dtype="fp8"),
    "cost.training_cost": dict(model="llama-2-7b", tokens=1e11, gpu="H100", n_gpus=8, pricing="on_demand"),
    "engine.default_batch": dict(gpu=H100),
    "formats.computes_in": dict(dtype="fp8"),
    "formats.dequantized_as": dict(dtype="int4"),
    "gpus.get_all": dict(argument_name="gpu_names", names=["H100", "A100 80GB"]),
    "memory.as_model": dict(model="llama-2-7b"),
    "memory.kv_cache_bytes": dict(model="llama-3-8b", context_len=4096, kv_dtype="fp8"),
    "memory.kv_share": dict(model=LLAMA, tp=2),
    "memory.communication_reserve": dict(tp=8, gpu="H100"),
    "memory.longest_context_table": dict(model="llama-2-7b", batch_size=2, gpu_names=["H100", "L4"]),
    "memory.quantized_weight_bytes": dict(model=LLAMA, weight_dtype="int4"),
    "models.from_config": dict(config=QWEN3, name="my-qwen"),
    "compare.serving_estimates_for": dict(model="llama-3-8b", gpu="L40S", tp=2, weight_dtypes=("bf16", "int4"),
                                          batch_size=8, context_len=4096),
    "planner.batch_tokens": dict(model="llama-2-70b", tokens=2e12),
    "planner.context_degrees": dict(seq_len=131072),
    "steptime.short_step_note": dict(seconds=0.1),
    "planner.catalog": dict(model="llama-2-7b", jobs=[("H100", (8, 64)), ("L40S", (4,))], tokens=1e12),
    "planner.layout_bytes": dict(model=LLAMA, layout=LAYOUT),
    "planner.plan": dict(model="llama-2-7b", gpu="H100", n_gpus=16),
    "planner.plans": dict(model="llama-2-7b", gpu="A100 80GB", counts=(8, 64), seq_len=4096, tokens=1e12),
    "planner.training_dtype": dict(gpu=H100, dtype="fp8"),
    "roofline.decode_intensity": dict(model="llama-2-7b", batch_size=8, context_len=2048, weight_dtype="fp8"),
    "roofline.table": dict(model="llama-2-7b", gpu="H100", dtype="bf16"),
    "select.largest_trainable": dict(gpu="H100", n_gpus=8),
    "scaling.sweep": dict(step=lambda n: scaling.Step(1.0, 0.1 * n, 0.05 * n), counts=(1, 2, 4)),
    "scenarios.get": dict(scenario_id="superpod-64"),
    "scenarios.answer": dict(scenario_id="edge-a4000"),
    "scenarios.largest_pretraining": dict(budget_usd=5e4, deadline_days=30, gpu_names=["H100"]),
    "serving.decode_seconds": dict(model="llama-3-8b", gpu="L40S", tp=2, batch_size=16, context_len=4096),
    "serving.decode_steps": dict(model="mixtral-8x7b", gpu="H100", tp=2, batch_size=8, context_len=2048),
    "serving.kernel_family": dict(gpu="RTX 4090", dtype="int4"),
    "serving.prefill_seconds": dict(model="llama-3-8b", gpu="H100", prompt_len=3000, chunk_tokens=1024),
    "serving.prefill_steps": dict(model="llama-3-8b", gpu="A100 80GB", prompt_len=2048, tp=2, batch_size=2),
    "serving.serving_formats": dict(gpu="L4"),
    "serving.static_batch_seconds": dict(model="llama-2-7b", gpu="H100", batch_size=32, prompt_len=128,
                                         output_len=128),
    "serving.static_batch_steps": dict(model="llama-2-7b", gpu="H100", tp=2, batch_size=32, prompt_len=128,
                                       output_len=128),
    "serving.static_batch_throughput": dict(model="llama-2-7b", gpu="H100", batch_size=32, prompt_len=128,
                                            output_len=128),
    "serving.tensor_parallel_time": dict(model="llama-2-7b", gpu="H100", tp=2, tokens=16),
    "steptime.attention_kernel_for": dict(gpu="V100"),
    "steptime.grad_bytes_default": dict(dtype="bf16"),
    "steptime.max_vpp": dict(n_layers=80, pp=8),
    "steptime.network_for": dict(gpu="A100 80GB"),
    "steptime.server": dict(name="AWS p4d.24xlarge"),
    "steptime.step_time": dict(model="llama-2-7b", gpu="H100", layout=LAYOUT),
    "trends.lineup": dict(names=("H100", "B200-HGX-192GB")),
    "traffic.batch_curve": dict(model="llama-3-8b", gpu="H100", tp=1, context_len=2048, weight_dtype="fp8"),
    "traffic.closed_loop": dict(r=REPLICA, concurrency=16, token_budget=4096),
    "traffic.limits": dict(r=REPLICA, ttft_s=0.5, tpot_s=0.05, max_utilization=0.9),
    "traffic.load": dict(r=REPLICA, requests_per_s=2.0),
    "traffic.replica": dict(model="llama-3-8b", gpu="A100 80GB", tp=2, prompt_len=1024, output_len=256,
                            weight_dtype="int8", reserve_output=True, max_batch=512),
    "traffic.saturated": dict(r=REPLICA),
    "traffic.peak_note": dict(model="mixtral-8x7b", gpu="H100", tp=8, weight_dtype="fp8"),
    "traffic.replicas": dict(model="llama-3-8b", gpu="A100 80GB", tp=2, prompt_len=1024, output_len=256,
                             weight_dtypes=("int8", "bf16")),
    "validation.ddp_runs": dict(overlap=0.5),
    "validation.same_layout_ratio": dict(family="megatron-bridge-llama", gpu="GB300-NVL72", other="GB200-NVL72"),
}

#: Functions whose documented answer to "no limit" or "never served" is infinity (a queue at or
#: beyond saturation, a constraint not set): their numbers may be inf, never NaN or negative.
UNBOUNDED = {"traffic.limits", "traffic.load"}

#: What a reader might pass by mistake.
BAD = [None, "x", True, -1, 0, 0.5, math.nan, math.inf, -math.inf, 2**64, [1]]


def _public() -> dict[str, int]:
    """'module.function' -> number of parameters, for every public function of the model layer."""
    out = {}
    for info in pkgutil.iter_modules(helpers.__path__):
        if info.name.startswith("_") or info.name in PRESENTATION:
            continue
        module = importlib.import_module(f"helpers.{info.name}")
        for name, f in inspect.getmembers(module, inspect.isfunction):
            if f.__module__ == module.__name__ and not name.startswith("_"):
                out[f"{info.name}.{name}"] = len(inspect.signature(f).parameters)
    return out


def _elsewhere() -> set[str]:
    """Functions driven with bad input by test_validation's cases and test_properties' tests."""
    done = {f"{f.__module__.rsplit('.', 1)[-1]}.{f.__name__}" for f, _, _ in CASES}
    source = (pathlib.Path(__file__).parent / "test_properties.py").read_text(encoding="utf-8")
    return done | set(re.findall(r"clean_or_named_error\((\w+\.\w+)", source))


def _function(name: str):
    module, function = name.split(".")
    return getattr(importlib.import_module(f"helpers.{module}"), function)


def test_every_public_function_is_driven_with_bad_input():
    public = {name for name, n in _public().items() if n > 0}  # nothing to spoil without arguments
    missing = public - set(EXAMPLES) - set(UNCHECKED) - _elsewhere()
    assert not missing, f"public functions no bad-input test drives: {sorted(missing)}"
    stale = (set(EXAMPLES) | set(UNCHECKED)) - public
    assert not stale, f"listed here but no longer public: {sorted(stale)}"


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_spoiled_arguments_give_a_clean_result_or_a_named_error(name):
    f, valid = _function(name), EXAMPLES[name]
    check = _unbounded_or_named_error if name in UNBOUNDED else clean_or_named_error
    check(f, (valid, None))
    for argument in valid:
        for value in BAD:
            check(f, (valid | {argument: value}, argument))


def _unbounded_or_named_error(f, case):
    """:func:`clean_or_named_error` for :data:`UNBOUNDED` functions: numbers non-negative, inf allowed."""
    kwargs, name = case
    try:
        result = f(**kwargs)
    except ValueError as error:
        assert name is not None and name in str(error), (name, kwargs.get(name), str(error))
        return
    for x in _numbers(result):
        assert x >= 0, (f.__name__, kwargs, result)  # NaN fails too
