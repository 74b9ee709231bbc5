import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import comm, scaling, steptime, validation


def test_bus_factors_follow_nccl_tests():
    assert comm.bus_factor("allreduce", 8) == pytest.approx(2 * 7 / 8)
    for c in ("allgather", "reducescatter", "alltoall"):
        assert comm.bus_factor(c, 8) == pytest.approx(7 / 8)
    assert comm.bus_factor("broadcast", 8) == 1
    with pytest.raises(ValueError, match="collective='gather'"):
        comm.bus_factor("gather", 8)


def test_bus_bandwidth_is_comparable_across_collectives():
    """On a ring, bus bandwidth is the link's rate whatever the collective (NVLS all-reduces exceed it)."""
    n, size = 8, 1e9
    t_ar = comm.collective_time("allreduce", size, n, "nvlink4", algorithm="ring").expected
    t_ag = comm.collective_time("allgather", size, n, "nvlink4").expected
    assert comm.bus_bandwidth("allreduce", size, n, t_ar) == pytest.approx(comm.bus_bandwidth("allgather", size, n, t_ag), rel=0.01)


def test_tree_beats_ring_on_latency_at_scale():
    assert (comm.allreduce_time(8, 512, "nvlink4", algorithm="tree").expected
            < comm.allreduce_time(8, 512, "nvlink4", algorithm="ring").expected)
    with pytest.raises(ValueError, match="tree"):
        comm.collective_time("allgather", 1e6, 8, "nvlink4", algorithm="tree")


def test_nccl_measurements_within_25_percent():
    """Issue acceptance: large-message bus bandwidth within 25 % of every NCCL measurement
    (8 A100 NVLink ~230 GB/s; A100 across nodes with 4 x 200 Gb/s ~90 GB/s; 2 H100 PCIe bridged ~116 GB/s)."""
    runs = validation.communication_runs()
    large = runs[runs["metric"] == "busbw"]
    assert len(large) >= 8
    assert (large["error"].abs() <= 0.25).all(), large
    small = runs[runs["metric"] == "time"]
    assert (small["error"].abs() <= 0.25).all(), small


def test_nccl_rows_that_set_nothing_meet_the_serving_issues_targets():
    """Issue 14's targets on the rows no parameter was taken from: 8 H100/H200 in an HGX server within
    10 % (NVLS, 475 GB/s on H200), several servers within 15 %; the rows a parameter was taken from
    are reproduced within 10 % (the 128 MB peak behind InfiniBand HDR's fraction, -8.5 %)."""
    runs = validation.communication_runs()
    held = runs[runs["sets"] == ""]
    hgx = held[held["GPU"].str.startswith(("H100-SXM", "H200-SXM")) & (held["nodes"] == 1) & (held["metric"] == "busbw")]
    assert len(hgx) >= 1 and (hgx["error"].abs() <= 0.10).all(), hgx
    nodes = held[held["nodes"] > 1]
    assert len(nodes) >= 3 and (nodes["error"].abs() <= 0.15).all(), nodes
    fitted = runs[runs["sets"] != ""]
    assert len(fitted) < len(runs) and (fitted["error"].abs() <= 0.10).all(), fitted


def test_multinode_is_capped_by_nics():
    one = comm.multinode_allreduce_time(8e9, 2, 8, "nvlink4", "ib-ndr", nics_per_node=1).expected
    eight = comm.multinode_allreduce_time(8e9, 2, 8, "nvlink4", "ib-ndr", nics_per_node=8).expected
    assert one > 6 * eight
    assert comm.multinode_allreduce_time(1e6, 1, 8, "nvlink4", "ib-ndr").expected == comm.allreduce_time(1e6, 8, "nvlink4").expected


def test_data_parallel_step_overlap_and_zero():
    no = scaling.data_parallel_step(1e9, 0.5, 16, "nvlink4", overlap=0.0, network="ib-hdr")
    full = scaling.data_parallel_step(1e9, 0.5, 16, "nvlink4", overlap=1.0, network="ib-hdr")
    assert no.exposed == pytest.approx(no.communication) and full.exposed < no.exposed
    assert full.exposed >= full.communication * scaling.DDP_BUCKET_BYTES / 1e9 - 1e-12  # the last bucket never hides
    z3 = scaling.data_parallel_step(1e9, 0.5, 16, "nvlink4", zero_stage=3, network="ib-hdr")
    assert z3.communication == pytest.approx(1.5 * full.communication)
    assert scaling.data_parallel_step(1e9, 0.5, 1, "nvlink4").efficiency == 1


@pytest.mark.parametrize("kwargs,match", [({"overlap": 1.5}, "overlap"), ({"zero_stage": 5}, "zero_stage"),
                                          ({"n_gpus": 12}, "multiple of gpus_per_node"), ({"network": None}, "network link")])
def test_data_parallel_step_rejects_bad_input(kwargs, match):
    args = {"gradient_bytes": 1e9, "compute_seconds": 0.5, "n_gpus": 16, "gpu_link": "nvlink4", "network": "ib-hdr"} | kwargs
    with pytest.raises(ValueError, match=match):
        scaling.data_parallel_step(**args)


@settings(max_examples=60, deadline=None)
@given(st.floats(1e6, 1e11), st.floats(0.01, 10), st.sampled_from([2, 4, 8, 16, 64, 256]), st.floats(0, 1))
def test_efficiency_is_a_fraction_and_overlap_never_hurts(grads, seconds, n, overlap):
    step = scaling.data_parallel_step(grads, seconds, n, "nvlink4", overlap=overlap, network="ib-ndr", nics_per_node=8)
    assert 0 < step.efficiency <= 1
    assert step.exposed <= scaling.data_parallel_step(grads, seconds, n, "nvlink4", overlap=0.0, network="ib-ndr",
                                                      nics_per_node=8).exposed + 1e-12


def test_resnet_ddp_runs_measured_below_model():
    runs = validation.ddp_runs()
    eight = runs[runs["GPUs"] == 8]
    assert (eight["measured efficiency"] > 0.9).all()
    assert (eight["predicted efficiency"] >= eight["measured efficiency"]).all()  # the model leaves out sync costs
    assert (eight["predicted efficiency"] - eight["measured efficiency"] < 0.06).all()


def test_exposed_gradient_time_by_hand():
    """1 GB of gradients all-reduced over 8 NVLink 4 GPUs after 0.3 s of compute: communication
    may hide behind ``overlap`` x 2/3 (the backward share) x 0.3 s, never below the last 25 MiB
    bucket's share of it; ZeRO-3 moves 1.5 times as much; one GPU communicates nothing."""
    total = comm.allreduce_time(1e9, 8, "nvlink4").expected
    assert scaling.data_parallel_step(1e9, 0.3, 8, "nvlink4", overlap=0).exposed == pytest.approx(total)
    assert scaling.data_parallel_step(1e9, 0.3, 8, "nvlink4", overlap=0.01).exposed == pytest.approx(total - 0.002)
    assert scaling.data_parallel_step(1e9, 0.3, 8, "nvlink4", overlap=0.5).exposed == pytest.approx(
        total * 25 * 2**20 / 1e9)
    assert scaling.data_parallel_step(1e9, 0.3, 8, "nvlink4", zero_stage=3).communication == pytest.approx(1.5 * total)
    assert scaling.data_parallel_step(1e9, 0.3, 1, "nvlink4") == scaling.Step(0.3, 0.0, 0.0)


def test_a_transformer_step_is_its_compute_then_its_gradients():
    """Llama 2 7B on H100 at 3,000 tokens per GPU: the compute of one 2,048-token sequence from the
    step model scaled to 3,000 tokens; on 16 GPUs (2 servers of 8, 8 NDR NICs each), an all-reduce
    of 6.74e9 bf16 gradients (2 bytes each) over NVLink 4 and InfiniBand; ZeRO-3 1.5 times that."""
    one = steptime.step_time("llama-2-7b", "H100", steptime.Layout(global_batch=1, seq_len=2048, zero_stage=0,
                                                                  recompute="none"))
    step = scaling.transformer_step("llama-2-7b", "H100", 16, tokens_per_gpu=3000, overlap=0)
    assert step.compute == pytest.approx(one.compute * 3000 / 2048)
    total = comm.multinode_allreduce_time(6.74e9 * 2, 2, 8, "nvlink4", "ib-ndr", nics_per_node=8).expected
    assert step.communication == pytest.approx(total) and step.exposed == pytest.approx(total)
    zero3 = scaling.transformer_step("llama-2-7b", "H100", 16, tokens_per_gpu=3000, zero_stage=3)
    assert zero3.communication == pytest.approx(1.5 * total)
    # the reader's format, shorter sequences and smaller servers reach the step: 1,024 FP8 tokens, 4 servers of 4
    short = steptime.step_time("llama-2-7b", "H100", steptime.Layout(global_batch=1, seq_len=1024, zero_stage=0,
                                                                    recompute="none", dtype="fp8"))
    small = scaling.transformer_step("llama-2-7b", "H100", 16, tokens_per_gpu=1024, dtype="fp8", gpus_per_node=4,
                                     nics_per_node=4, overlap=0)
    assert small.compute == pytest.approx(short.compute)
    assert small.communication == pytest.approx(
        comm.multinode_allreduce_time(6.74e9 * 2, 4, 4, "nvlink4", "ib-ndr", nics_per_node=4).expected)


def test_scaling_table_by_hand():
    """A step of 1 s of compute and 0.1 s per GPU of exposed communication: at 2 GPUs 1.2 s, 83 %
    efficient; the table has one row per count, in order."""
    table = scaling.scaling_table(lambda n: scaling.Step(1.0, 0.5 * n, 0.1 * n), counts=(1, 2))
    expected = {"GPUs": [1, 2], "compute (s)": [1.0, 1.0], "communication (s)": [0.5, 1.0], "exposed (s)": [0.1, 0.2],
                "step (s)": [1.1, 1.2], "efficiency": [1 / 1.1, 1 / 1.2]}
    assert list(table.columns) == list(expected)
    for column, values in expected.items():
        assert table[column].tolist() == pytest.approx(values)
    typed = scaling.sweep(lambda n: scaling.Step(1.0, 0.5 * n, 0.1 * n), counts=(1, 2))
    assert typed.counts == (1, 2) and typed.steps[1].total == pytest.approx(1.2)  # seconds


def test_two_gpus_already_communicate():
    """Data parallelism over 2 GPUs all-reduces the gradients (1 GB over NVLink 4), unlike 1 GPU."""
    two = scaling.data_parallel_step(1e9, 0.3, 2, "nvlink4")
    assert two.communication == pytest.approx(comm.allreduce_time(1e9, 2, "nvlink4").expected)
    assert scaling.data_parallel_step(1e9, 0.3, 1, "nvlink4").communication == 0


def test_servers_of_4_put_8_gpus_on_two_servers():
    """8 GPUs in servers of 4 all-reduce across 2 servers (over their NICs), not inside one."""
    step = scaling.transformer_step("llama-2-7b", "H100", 8, gpus_per_node=4, nics_per_node=4, overlap=0)
    assert step.communication == pytest.approx(
        comm.multinode_allreduce_time(6.74e9 * 2, 2, 4, "nvlink4", "ib-ndr", nics_per_node=4).expected)
    assert step.communication > scaling.transformer_step("llama-2-7b", "H100", 8, overlap=0).communication
