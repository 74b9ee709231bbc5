"""Bad input, clear messages: every public function of the model layer answers a wrong type, a
negative or zero size, NaN or infinity, an unknown name, a split that does not divide the model
or an impossible combination with a ValueError naming the argument, the value and what is allowed."""

import re

import pytest

from helpers import comm, compare, compute, gpus, memory, models, precision, roofline, scaling, trends, units
from helpers.estimate import Estimate

NAN, INF = float("nan"), float("inf")
H100 = gpus.get("H100")
LLAMA = models.get("llama-2-7b")


#: Valid arguments of scaling.data_parallel_step and comm.multinode_allreduce_time, to spoil one at a time.
DP = dict(gradient_bytes=1e9, compute_seconds=0.5, n_gpus=8, gpu_link="nvlink4")
MN = dict(n_bytes=1e9, n_nodes=2, gpus_per_node=8, intra="nvlink4", inter="ib-ndr")


def step(n):
    return scaling.data_parallel_step(1e9, 0.5, n, "nvlink4")


CASES = [
    # wrong types: strings, bools, None where numbers are expected
    (memory.training, dict(model="llama-2-7b", micro_batch_size="8"),
     r"micro_batch_size must be a positive integer, got '8'"),
    (memory.training, dict(model="llama-2-7b", seq_len=True), r"seq_len must be a positive integer, got True"),
    (memory.training, dict(model="llama-2-7b", dp=2.0), r"dp must be a positive integer, got 2\.0"),
    (memory.training, dict(model="llama-2-7b", zero_stage=True),
     r"zero_stage=True is not supported; choose one of 0, 1, 2, 3"),
    (memory.training, dict(model="llama-2-7b", zero_stage=2.0), r"zero_stage=2\.0 is not supported"),
    (memory.training, dict(model="llama-2-7b", master_weights="no"), r"master_weights must be True or False, got 'no'"),
    (memory.training, dict(model=True), r"model must be a preset name, a Model or a parameter count, got True"),
    (memory.inference, dict(model="llama-2-7b", batch_size=None), r"batch_size must be a positive integer, got None"),
    (memory.inference, dict(model="llama-2-7b", context_len=1.5), r"context_len must be a positive integer, got 1\.5"),
    (memory.activations_per_layer, dict(model=LLAMA, micro_batch_size="7", seq_len=2048), r"micro_batch_size"),
    (memory.activations, dict(model=LLAMA, micro_batch_size=1, seq_len=None), r"seq_len must be a positive integer"),
    (memory.lora_shapes, dict(model=LLAMA, rank=1.5), r"rank must be a positive integer, got 1\.5"),
    (memory.fits, dict(breakdown=None, gpu=H100), r"breakdown must be a MemoryBreakdown"),
    (memory.fits_table, dict(breakdown=memory.inference("llama-2-7b"), gpu_names="H100"), r"gpu_names must be a list"),
    (memory.max_batch_size, dict(model="llama-2-7b", gpu=H100, limit="10"),
     r"limit must be a positive integer, got '10'"),
    (compute.flops_per_token, dict(model="llama-2-7b", seq_len="2048"),
     r"seq_len must be a positive integer, got '2048'"),
    (compute.flops_per_token, dict(model="llama-2-7b", training="yes"), r"training must be True or False, got 'yes'"),
    (compute.training_flops, dict(model_or_n_params="llama-2-7b", tokens="1e12"),
     r"tokens must be a positive number, got '1e12'"),
    (compute.training_time, dict(model="llama-2-7b", tokens=1e12, gpu=H100, n_gpus=True),
     r"n_gpus must be a positive integer, got True"),
    (compute.training_time, dict(model="llama-2-7b", tokens=1e12, gpu=H100, n_gpus=8, mfu="0.4"),
     r"mfu must be a positive number"),
    (compute.decode_throughput, dict(model="llama-2-7b", gpu=H100, tp="2"),
     r"tp must be a positive integer, got '2'"),
    (compute.tensor_parallel_time, dict(model="llama-2-7b", gpu=H100, tp=2, tokens="16"),
     r"tokens must be a positive number, got '16'"),
    (compute.compute_dtype, dict(gpu=None, dtype="bf16"), r"GPU name must be a string, got None"),
    (roofline.bound, dict(gpu=H100, dtype="bf16", intensity="10"), r"intensity must be a positive number, got '10'"),
    (roofline.matmul_intensity, dict(m=8, n=8, k=8, element_bytes=None),
     r"element_bytes must be a positive number, got None"),
    (roofline.training_intensity, dict(model="llama-2-7b", tokens=2048.0),
     r"tokens must be a positive integer, got 2048\.0"),
    (roofline.workloads, dict(model="llama-2-7b", seq_len=None), r"seq_len must be a positive integer, got None"),
    (roofline.workloads, dict(model="llama-2-7b", decode_batches=(1, 0)),
     r"decode_batches\[1\] must be a positive integer, got 0"),
    (roofline.workloads, dict(model="llama-2-7b", decode_batches=None),
     r"decode_batches must be a list or tuple, got None"),
    (precision.grad_scaler_trace, dict(n_steps=10, overflow_steps=None),
     r"overflow_steps must be a list or tuple, got None"),
    (precision.grad_scaler_trace, dict(n_steps=10, overflow_steps={-1}),
     r"overflow_steps must be a non-negative integer, got -1"),
    (precision.grad_scaler_trace, dict(n_steps=10, overflow_steps=set(), growth_factor="2"),
     r"growth_factor must be a positive number"),
    (precision.grad_scaler_trace, dict(n_steps=10**7, overflow_steps=set()), r"n_steps must be at most 1,000,000"),
    (comm.collective_time, dict(collective="allreduce", n_bytes="1e9", n_gpus=8, link_or_name="nvlink4"),
     r"n_bytes must be a non-negative number, got '1e9'"),
    (comm.bus_bandwidth, dict(collective="allreduce", n_bytes=None, n_gpus=8, seconds=1.0),
     r"n_bytes must be a non-negative number, got None"),
    (comm.link, dict(name=["nvlink4"]), r"unknown link \['nvlink4'\]; known: nvlink2"),
    (scaling.data_parallel_step, dict(gradient_bytes=1e9, compute_seconds=0.5, n_gpus=True, gpu_link="nvlink4"),
     r"n_gpus must be a positive integer, got True"),
    (scaling.data_parallel_step, DP | dict(overlap=None),
     r"overlap must be a non-negative number, got None"),
    (scaling.data_parallel_step, DP | dict(bucket_bytes="25MB"),
     r"bucket_bytes must be a positive number"),
    (scaling.transformer_step, dict(model="llama-2-7b", gpu=H100, n_gpus="16"),
     r"n_gpus must be a positive integer, got '16'"),
    (scaling.scaling_table, dict(step=step, counts=(1, 2.5)), r"counts\[1\] must be a positive integer, got 2\.5"),
    (scaling.scaling_table, dict(step="fast"), r"step must be a function of the GPU count"),
    (compare.training_table, dict(model="llama-2-7b", tokens=1e12, n_gpus=1.5),
     r"n_gpus must be a positive integer, got 1\.5"),
    (trends.generations, dict(names="H100"), r"names must be a list or tuple, got 'H100'"),
    (trends.wait_or_start, dict(model="llama-2-70b", tokens=1e12, n_gpus=64, wait_months="6", later_price=6.0),
     r"wait_months must be a non-negative number, got '6'"),
    (trends.wait_or_start, dict(model="llama-2-70b", tokens=1e12, n_gpus=64, later="H200 NVL"),
     r"later='H200 NVL': no dated on-demand price for H200-NVL-141GB; give later_price"),
    (units.gb, dict(n_bytes="1e9"), r"n_bytes must be a non-negative number, got '1e9'"),
    (Estimate, dict(low="1", expected=2.0, high=3.0), r"Estimate low must be a finite number, got '1'"),
    (Estimate.exact, dict(value=None), r"Estimate low must be a finite number, got None"),
    # negative or zero sizes
    (memory.training, dict(model="llama-2-7b", micro_batch_size=0),
     r"micro_batch_size must be a positive integer, got 0"),
    (memory.training, dict(model="llama-2-7b", lora_rank=-8, method="lora"),
     r"lora_rank must be a positive integer, got -8"),
    (memory.training, dict(model=-7e9),
     r"model=-7000000000\.0: n_params must be a positive number, got -7000000000\.0"),
    (memory.training, dict(model=1e15),
     r"model=1000000000000000\.0: n_params must be between 1e\+08 and 1e\+13, got 1e\+15"),
    (memory.inference, dict(model="llama-2-7b", tp=0), r"tp must be a positive integer, got 0"),
    (memory.kv_cache_per_token, dict(model=0), r"model=0: n_params must be a positive number, got 0"),
    (memory.max_context_len, dict(model="llama-2-7b", gpu=H100, batch_size=-1),
     r"batch_size must be a positive integer, got -1"),
    (compute.training_flops, dict(model_or_n_params=7e9, tokens=0), r"tokens must be a positive number, got 0"),
    (compute.prefill_time, dict(model="llama-2-7b", gpu=H100, prompt_len=-5),
     r"prompt_len must be a positive integer, got -5"),
    (compute.training_time, dict(model="llama-2-7b", tokens=1e12, gpu=H100, n_gpus=8, goodput=Estimate(0.0, 0.5, 0.9)),
     r"goodput must be a positive number, got 0\.0"),
    (roofline.attainable, dict(gpu=H100, dtype="bf16", intensity=-1.0),
     r"intensity must be a positive number, got -1\.0"),
    (roofline.matmul_intensity, dict(m=8, n=0, k=8), r"n must be a positive integer, got 0"),
    (precision.grad_scaler_trace, dict(n_steps=10, overflow_steps=set(), init_scale=0),
     r"init_scale must be a positive number, got 0"),
    (comm.allreduce_time, dict(n_bytes=-1.0, n_gpus=8, link_or_name="nvlink4"),
     r"n_bytes must be a non-negative number, got -1\.0"),
    (comm.bus_factor, dict(collective="allreduce", n_gpus=0), r"n_gpus must be a positive integer, got 0"),
    (comm.multinode_allreduce_time, MN | dict(nics_per_node=0),
     r"nics_per_node must be a positive integer, got 0"),
    (comm.bus_bandwidth, dict(collective="allreduce", n_bytes=1e9, n_gpus=8, seconds=0.0),
     r"seconds must be a positive number, got 0\.0"),
    (scaling.allreduce_seconds, dict(n_bytes=1e9, n_gpus=16, gpu_link="nvlink4", gpus_per_node=-8),
     r"gpus_per_node must be a positive integer, got -8"),
    (scaling.data_parallel_step, dict(gradient_bytes=-1.0, compute_seconds=0.5, n_gpus=8, gpu_link="nvlink4"),
     r"gradient_bytes must be a positive number"),
    (scaling.transformer_step, dict(model="llama-2-7b", gpu=H100, n_gpus=16, tokens_per_gpu=0),
     r"tokens_per_gpu must be a positive integer, got 0"),
    (trends.wait_or_start, dict(model="llama-2-70b", tokens=1e12, n_gpus=64, later_price=-6.0),
     r"later_price must be a positive number, got -6\.0"),
    (trends.wait_or_start, dict(model="llama-2-70b", tokens=1e12, n_gpus=64, later_price=6.0, now_price=0),
     r"now_price must be a positive number, got 0"),
    (units.gb, dict(n_bytes=-1), r"n_bytes must be a non-negative number, got -1"),
    (models.dense, dict(n_params=-1.0), r"n_params must be a positive number, got -1\.0"),
    # NaN and infinity
    (memory.training, dict(model=NAN), r"model=nan: n_params must be a positive number, got nan"),
    (memory.inference, dict(model=INF), r"model=inf: n_params must be a positive number, got inf"),
    (memory.inference, dict(model="llama-2-7b", context_len=INF), r"context_len must be a positive integer, got inf"),
    (compute.training_flops, dict(model_or_n_params=7e9, tokens=NAN), r"tokens must be a positive number, got nan"),
    (compute.training_time, dict(model="llama-2-7b", tokens=INF, gpu=H100, n_gpus=8),
     r"tokens must be a positive number, got inf"),
    (compute.training_time, dict(model="llama-2-7b", tokens=1e12, gpu=H100, n_gpus=8, mfu=NAN),
     r"mfu must be a positive number, got nan"),
    (roofline.bound, dict(gpu=H100, dtype="bf16", intensity=NAN), r"intensity must be a positive number, got nan"),
    (precision.grad_scaler_trace, dict(n_steps=10, overflow_steps=set(), init_scale=INF),
     r"init_scale must be a positive number, got inf"),
    (comm.collective_time, dict(collective="allgather", n_bytes=NAN, n_gpus=8, link_or_name="nvlink4"),
     r"n_bytes must be a non-negative number, got nan"),
    (comm.bus_bandwidth, dict(collective="allreduce", n_bytes=INF, n_gpus=8, seconds=1.0),
     r"n_bytes must be a non-negative number, got inf"),
    (scaling.data_parallel_step, dict(gradient_bytes=1e9, compute_seconds=NAN, n_gpus=8, gpu_link="nvlink4"),
     r"compute_seconds must be a positive number, got nan"),
    (scaling.data_parallel_step, DP | dict(overlap=NAN),
     r"overlap must be a non-negative number, got nan"),
    (trends.wait_or_start, dict(model="llama-2-70b", tokens=1e12, n_gpus=64, wait_months=INF, later_price=6.0),
     r"wait_months must be a non-negative number, got inf"),
    (trends.wait_or_start, dict(model="llama-2-70b", tokens=1e12, n_gpus=64, later_price=NAN),
     r"later_price must be a positive number, got nan"),
    (Estimate, dict(low=1.0, expected=2.0, high=INF), r"Estimate high must be a finite number, got inf"),
    # results beyond the float range
    (compute.training_flops, dict(model_or_n_params=7e9, tokens=1e300), r"tokens=1e\+300 out of range"),
    (comm.bus_bandwidth, dict(collective="allreduce", n_bytes=1e300, n_gpus=8, seconds=1e-300),
     r"n_bytes=1e\+300, seconds=1e-300 out of range"),
    (precision.grad_scaler_trace, dict(n_steps=10, overflow_steps=set(), growth_factor=1e300, growth_interval=1),
     r"growth_factor=1e\+300, growth_interval=1, n_steps=10 out of range"),
    (memory.training, dict(model="llama-2-7b", seq_len=2**60), r"seq_len must be at most 2\*\*53"),
    (comm.allreduce_time, dict(n_bytes=1.7e308, n_gpus=8, link_or_name="nvlink4"), r"n_bytes=1\.7e\+308 out of range"),
    (scaling.data_parallel_step, DP | dict(gradient_bytes=1.7e308), r"gradient_bytes=1\.7e\+308 out of range"),
    (roofline.matmul_intensity, dict(m=2**50, n=2**50, k=2**50, element_bytes=1e-300),
     r"element_bytes=1e-300 out of range"),
    (compute.training_time, dict(model="llama-2-7b", tokens=1e12, gpu=H100, n_gpus=8, mfu=1e-300, goodput=1e-300),
     r"mfu=1e-300, goodput=1e-300 out of range"),
    (trends.wait_or_start, dict(model="llama-2-7b", tokens=1e12, n_gpus=8, later_price=1.7e308),
     r"now_price=None, later_price=1\.7e\+308 out of range"),
    # names that do not exist: dtypes, GPUs, models, optimizers, methods, links, choices
    (memory.training, dict(model="llama-2-7b", dtype="fp8"),
     r"dtype='fp8' is not supported; choose one of fp32, tf32, fp16, bf16"),
    (memory.training, dict(model="llama-2-7b", optimizer="lion"),
     r"optimizer='lion' is not supported; choose one of adamw"),
    (memory.training, dict(model="llama-2-7b", method="dora"),
     r"method='dora' is not supported; choose one of full, lora, qlora"),
    (memory.training, dict(model="llama-4-7b"), r"unknown model 'llama-4-7b'; closest known: "),
    (memory.inference, dict(model="llama-2-7b", weight_dtype="int3"),
     r"weight_dtype='int3' is not supported; choose one of fp32"),
    (memory.inference, dict(model="llama-2-7b", kv_dtype="int4"),
     r"kv_dtype='int4' is not supported; choose one of fp32"),
    (memory.activations_per_layer, dict(model=LLAMA, micro_batch_size=1, seq_len=2048, recompute="some"),
     r"recompute='some' is not supported"),
    (memory.activations, dict(model=LLAMA, micro_batch_size=1, seq_len=2048, dtype="int4"),
     r"dtype='int4' is not supported"),
    (memory.serving_kv_dtype, dict(weight_dtype="fp6"), r"weight_dtype='fp6' is not supported"),
    (memory.fits, dict(breakdown=memory.inference("llama-2-7b"), gpu="H300"),
     r"unknown GPU 'H300'; closest known: .*H200"),
    (memory.fits_table, dict(breakdown=memory.inference("llama-2-7b"), gpu_names=["H100", "X1"]), r"unknown GPU 'X1'"),
    (gpus.get, dict(name=None), r"GPU name must be a string, got None"),
    (H100.peak_flops, dict(dtype="FP16"), r"dtype='FP16' is not supported; choose one of fp32"),
    (H100.peak_flops, dict(dtype="bf16", sparse="yes"), r"sparse must be True or False, got 'yes'"),
    (gpus.get("V100").peak_flops, dict(dtype="fp8"),
     r"V100-SXM2-32GB has no 'fp8' rate; dtype must be one of: fp32, fp16"),
    (H100.supports, dict(dtype="float16"), r"dtype='float16' is not supported"),
    (models.get, dict(name=7), r"model name must be a string, got 7"),
    (models.dense, dict(n_params=7e9, name=7), r"name must be a string or None, got 7"),
    (compute.training_flops, dict(model_or_n_params="llama-2-7b", tokens=1e12, recompute="partial"),
     r"recompute='partial' is not supported"),
    (compute.training_time, dict(model="llama-2-7b", tokens=1e12, gpu="H100", n_gpus=8, dtype="int8"),
     r"dtype='int8' is not supported; choose one of fp32, tf32, fp16, bf16, fp8"),
    (compute.training_time, dict(model="llama-2-7b", tokens=1e12, gpu="T4", n_gpus=8, dtype="bf16"),
     r"T4-16GB has no 'bf16' rate; dtype must be one of: fp32, fp16, int8"),
    (compute.efficiency, dict(quantity="goodput", architecture="Pascal", dtype="bf16"),
     r"architecture='Pascal' is not supported; choose one of Volta"),
    (compute.efficiency, dict(quantity="latency", architecture="Hopper", dtype="bf16"),
     r"quantity='latency' is not supported; choose one of goodput"),
    (compute.efficiency, dict(quantity="goodput", architecture="Hopper", dtype=["bf16"]),
     r"dtype=\['bf16'\] is not supported"),
    (compute.decode_throughput, dict(model="llama-2-7b", gpu="H100", weight_dtype="fp4"),
     r"weight_dtype='fp4' is not supported"),
    (compute.prefill_time, dict(model="llama-2-7b", gpu="H100", prompt_len=512, weight_dtype="q4"),
     r"weight_dtype='q4' is not supported"),
    (roofline.ridge_point, dict(gpu="H100", dtype="float8"), r"dtype='float8' is not supported"),
    (roofline.prefill_intensity, dict(model="llama-2-7b", prompt_len=512, dtype="int2"),
     r"dtype='int2' is not supported"),
    (comm.link, dict(name="nvlink9"), r"unknown link 'nvlink9'; closest known: nvlink5, nvlink4.*; known: nvlink2"),
    (comm.gpu_link, dict(gpu="H9000", n_gpus=8), r"unknown GPU 'H9000'"),
    (comm.collective_time, dict(collective="gather", n_bytes=1e9, n_gpus=8, link_or_name="nvlink4"),
     r"collective='gather' is not supported; choose one of allreduce"),
    (comm.allreduce_time, dict(n_bytes=1e9, n_gpus=8, link_or_name="nvlink4", algorithm="butterfly"),
     r"algorithm='butterfly' is not supported; choose one of auto, ring, tree, nvls"),
    (comm.multinode_allreduce_time, dict(n_bytes=1e9, n_nodes=2, gpus_per_node=8, intra="nvlink4", inter="ib-ddr"),
     r"inter='ib-ddr': unknown link 'ib-ddr'"),
    (comm.multinode_allreduce_time, dict(n_bytes=1e9, n_nodes=2, gpus_per_node=8, intra="nvlnk4", inter="ib-ndr"),
     r"intra='nvlnk4': unknown link"),
    (comm.multinode_allreduce_time, MN | dict(algorithm="rings"),
     r"algorithm='rings' is not supported"),
    (scaling.allreduce_seconds, dict(n_bytes=1e9, n_gpus=16, gpu_link="nvlink4", network="ethernet"),
     r"network='ethernet': unknown link"),
    (scaling.data_parallel_step, dict(gradient_bytes=1e9, compute_seconds=0.5, n_gpus=1, gpu_link="pcie9"),
     r"gpu_link='pcie9': unknown link"),
    (scaling.transformer_step, dict(model="llama-2-7b", gpu="H100", n_gpus=16, grad_dtype="fp64"),
     r"grad_dtype='fp64' is not supported"),
    (scaling.transformer_step, dict(model="llama-2-7b", gpu="H100", n_gpus=16, zero_stage=4),
     r"zero_stage=4 is not supported"),
    (compare.training_table, dict(model="llama-2-7b", tokens=1e12, n_gpus=8, dtype="int4"),
     r"dtype='int4' is not supported; choose one of .*fp8"),
    (compare.serving_estimate, dict(model="llama-2-7b", gpu="H100", weight_dtype="fp64"),
     r"weight_dtype='fp64' is not supported"),
    (compare.serving_table, dict(model="gpt-5"), r"unknown model 'gpt-5'"),
    (compare.serving_estimates, dict(model="llama-2-7b", batch_size=0), r"batch_size must be a positive integer, got 0"),
    (compare.training_estimates, dict(model="llama-2-7b", tokens=1e12, n_gpus=0), r"n_gpus must be a positive integer, got 0"),
    (compare.training_estimates, dict(model="llama-2-7b", tokens=-1.0, n_gpus=8), r"tokens must be a positive number, got -1.0"),
    (trends.wait_or_start, dict(model="llama-2-70b", tokens=1e12, n_gpus=64, later="B400", later_price=6.0),
     r"later='B400': unknown GPU 'B400'"),
    (trends.wait_or_start, dict(model="llama-2-70b", tokens=1e12, n_gpus=64, now="V100", later_price=-6.0),
     r"later_price must be a positive number, got -6.0"),
    (trends.generations, dict(names=["H100", "H900"]), r"unknown GPU 'H900'"),
    (units.check_dtype, dict(dtype="fp12"),
     r"dtype='fp12' is not supported; choose one of fp32, tf32, fp16, bf16, fp8, int8, int4, nf4"),
    (units.dtype_bytes, dict(dtype=None), r"dtype=None is not supported"),
    # parallel splits that do not divide the model
    (memory.training, dict(model="llama-2-7b", tp=3),
     r"tp=3 must divide the 32 attention heads of Llama 2 7B and divide its 32 KV heads; allowed: 1, 2, 4, 8, 16, 32$"),
    (memory.training, dict(model="llama-3-8b", tp=16),
     r"tp=16 must divide the 32 attention heads of Llama 3 8B and divide its 8 KV heads; allowed: 1, 2, 4, 8$"),
    (memory.training, dict(model="llama-2-7b", pp=5),
     r"pp=5 must divide the 32 layers of Llama 2 7B; allowed: 1, 2, 4, 8, 16, 32$"),
    (memory.training, dict(model="llama-2-7b", pp=64),
     r"pp=64 exceeds the 32 layers of Llama 2 7B; allowed: 1, 2, 4, 8, 16, 32$"),
    (memory.inference, dict(model="gpt2-xl", tp=2),
     r"tp=2 must divide the 25 attention heads of GPT-2 XL and divide or be a multiple of its 25 KV heads; "
     r"allowed: 1, 5, 25$"),
    (memory.inference, dict(model="llama-3-70b", tp=128),
     r"tp=128 must divide the 64 attention heads .* allowed: 1, 2, 4, 8, 16, 32, 64$"),
    (memory.activations, dict(model=LLAMA, micro_batch_size=1, seq_len=2048, tp=6),
     r"tp=6 must divide the 32 attention heads"),
    (compute.decode_throughput, dict(model="llama-2-70b", gpu="H100", tp=3),
     r"tp=3 must divide the 64 attention heads of Llama 2 70B"),
    (compute.prefill_time, dict(model="llama-2-70b", gpu="H100", prompt_len=512, tp=6),
     r"tp=6 must divide the 64 attention heads"),
    (compute.tensor_parallel_time, dict(model="gpt2-xl", gpu="H100", tp=2, tokens=16),
     r"tp=2 must divide the 25 attention heads"),
    (compare.serving_estimate, dict(model="llama-33b", gpu="H100", tp=8),
     r"tp=8 must divide the 52 attention heads of LLaMA 33B"),
    (scaling.allreduce_seconds, dict(n_bytes=1e9, n_gpus=12, gpu_link="nvlink4", network="ib-ndr"),
     r"n_gpus=12 must be a multiple of gpus_per_node=8"),
    # impossible combinations
    (memory.training, dict(model="llama-2-7b", pp=2, zero_stage=3, dp=8),
     r"zero_stage=3 does not combine with pp=2.*allowed with pp > 1: zero_stage 0 or 1"),
    (comm.collective_time,
     dict(collective="allgather", n_bytes=1e9, n_gpus=8, link_or_name="nvlink4", algorithm="tree"),
     r"algorithm='tree' is modelled for allreduce only"),
    (precision.grad_scaler_trace, dict(n_steps=10, overflow_steps=set(), backoff_factor=1.5),
     r"backoff_factor < 1, got 2\.0, 1\.5"),
    (scaling.data_parallel_step, DP | dict(overlap=1.5),
     r"overlap must be between 0 and 1, got 1\.5"),
    (compute.training_time, dict(model="llama-2-7b", tokens=1e12, gpu="H100", n_gpus=8, mfu=1.2),
     r"mfu is a fraction of peak, at most 1, got 1\.2"),
    (memory.training, dict(model="llama-2-7b", offload="parameters"),
     r"offload='parameters' needs zero_stage=3"),
    (memory.training, dict(model="llama-2-7b", offload="cpu"), r"offload='cpu' is not supported; choose one of none, optimizer, parameters"),
    (memory.training, dict(model="llama-2-7b", dtype="fp32", amp=True), r"amp=True autocasts to a 16-bit dtype"),
    (memory.training, dict(model="llama-2-7b", zero_stage=3, offload="parameters", max_live_parameters=-1),
     r"max_live_parameters must be a positive number"),
    (memory.training, dict(model="llama-2-7b", zero_stage=2, offload="optimizer", reduce_bucket_size=0),
     r"reduce_bucket_size must be a positive number"),
    (Estimate, dict(low=2.0, expected=1.0, high=3.0), r"Estimate needs low <= expected <= high, got 2\.0, 1\.0, 3\.0"),
    (compare.band, dict(row=compare.training_table("llama-2-7b", 1e12, 8).iloc[0], prefix="hours"),
     r"prefix='hours': the row has no column 'hours low'"),
]


def _id(case):
    f, kwargs, _ = case
    name = getattr(f, "__qualname__", str(f))
    simple = (str, int, float, type(None), tuple, list, set)
    shown = (f"{k}={v!r}"[:30] for k, v in kwargs.items() if isinstance(v, simple))
    return f"{name}({', '.join(shown)})"


@pytest.mark.parametrize("f,kwargs,match", CASES, ids=[_id(c) for c in CASES])
def test_bad_input_raises_a_value_error_naming_it(f, kwargs, match):
    with pytest.raises(ValueError, match=match):
        f(**kwargs)


MODEL_FIELDS = dict(name="m", display_name="M", n_params=1e9, n_active_params=1e9, n_layers=16, d_model=2048,
                    n_heads=16, n_kv_heads=4, d_ff=8192, vocab_size=32000, context_len=2048)


@pytest.mark.parametrize("fields,match", [
    ({"n_layers": 0}, r"n_layers must be a positive integer, got 0"),
    ({"d_model": 2048.0}, r"d_model must be a positive integer, got 2048\.0"),
    ({"n_params": NAN}, r"n_params must be a positive number, got nan"),
    ({"n_kv_heads": 3}, r"n_kv_heads=3 must divide n_heads"),
    ({"n_heads": 12}, r"n_heads=12 must divide d_model=2048"),
    ({"mlp": "geglu"}, r"mlp='geglu' is not supported; choose one of gelu, relu, swiglu"),
    ({"tied_embeddings": "yes"}, r"tied_embeddings must be True or False"),
    ({"n_experts": 2, "experts_per_token": 4}, r"experts_per_token=4 must be at most n_experts=2"),
    ({"n_active_params": 2e9}, r"n_active_params=2e\+09 must be at most n_params=1e\+09"),
    ({"name": None}, r"name must be a string, got None"),
])
def test_model_rejects_impossible_shapes(fields, match):
    with pytest.raises(ValueError, match=match):
        models.Model(**MODEL_FIELDS | fields)


@pytest.mark.parametrize("field", memory.COMPONENTS)
@pytest.mark.parametrize("value", [-1.0, NAN, INF, "1", None, True])
def test_memory_breakdown_holds_only_non_negative_bytes(field, value):
    with pytest.raises(ValueError, match=rf"^{field} must be a non-negative number, got {re.escape(repr(value))}$"):
        memory.MemoryBreakdown(**{field: value})


def test_step_holds_only_non_negative_seconds():
    with pytest.raises(ValueError, match=r"exposed must be a non-negative number, got -1"):
        scaling.Step(1.0, 0.5, -1)


def test_valid_edge_cases_still_pass():
    """The checks reject nothing that worked and made sense before."""
    assert memory.inference("llama-3-8b", tp=16).weights > 0  # KV heads replicated beyond 8 GPUs, as vLLM does
    assert memory.training("llama-2-7b", pp=2, zero_stage=1, dp=8).total > 0
    assert comm.allreduce_time(0, 8, "nvlink4").expected > 0
    assert comm.multinode_allreduce_time(1e9, 1, 8, "nvlink4", None).expected > 0  # one server needs no network
    assert memory.fits(memory.inference("llama-2-7b"), "H100")  # a GPU name is accepted too
    assert units.check_positive("n", 2**53, integer=True) is None
    assert memory.fits_table(memory.inference("llama-2-7b"), []).shape[0] == len(gpus.names())
