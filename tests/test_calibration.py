"""The step model's calibration: fitted on calibration families only, judged on test families."""

import io
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import _data, calibration, compute, gpus, models, planner, serving, steptime, validation


@pytest.fixture(scope="module")
def runs():
    return validation.training_runs()


@pytest.fixture(scope="module")
def held_out():
    """Each calibration run's error predicted by a fit on the other families, with its family."""
    rows = calibration.runs()
    calibrating = rows[rows["split"] == "calibration"]
    return calibration.leave_one_family_out(calibrating).assign(family=calibrating["family"])


def test_calibration_file_is_what_the_fit_gives():
    """data/calibration.csv is the output of calibration.fitted_table() (scripts/calibrate.py), not edited by hand."""
    out = io.StringIO()
    calibration.fitted_table().to_csv(out, index=False, lineterminator="\n")
    stored = (_data.resources.files("helpers") / "data" / "calibration.csv").read_text(encoding="utf-8")
    assert out.getvalue() == stored, "run scripts/calibrate.py"


def test_test_families_are_not_calibration_families():
    table = _data.table("training_runs")
    splits = table.groupby("family")["split"].unique()
    assert all(len(s) == 1 for s in splits), "a family is split across calibration and test"
    rows = calibration.runs()
    assert set(validation.REFERENCE_FAMILIES) <= set(rows[rows["split"] == "test"]["family"])
    assert set(rows[rows["split"] == "calibration"]["family"]).isdisjoint(rows[rows["split"] == "test"]["family"])


#: The one test family the step model misses by far: gpt-oss-120b in Megatron-Bridge 26.04.01 on H100 and four
#: Blackwell systems, 27-46 % faster in the model than published (the validation appendix says what it lacks).
MISSED = "megatron-bridge-gpt-oss"


def test_out_of_sample_steady_state_error(runs):
    """On runs the fit never saw: median |time error| under 5 % on the families the issue names (Megatron-LM
    2021, Korthikanti et al. 2022, Llama 3, MegaScale, BLOOM, OPT) and on the Megatron-LM papers alone, under
    7 % on every test family together, and, steps shorter than a quarter second aside (the known miss of
    the next test), no family off by more than 20 % in median but gpt-oss's (:data:`MISSED`), which is off by more."""
    test = runs[(runs["split"] == "test") & ~runs["end to end"]]
    assert len(test) >= 45
    assert test["time error"].abs().median() <= 0.07
    named = test[test["family"].isin(validation.REFERENCE_FAMILIES)]
    assert len(named) >= 45 and named["time error"].abs().median() <= 0.05
    megatron = test[test["id"].isin(calibration.runs().query("family in ['narayanan-2021', 'korthikanti-2022']")["id"])]
    assert len(megatron) >= 20 and megatron["time error"].abs().median() <= 0.05
    by_family = test[~test["short step"]].groupby("family")["time error"].apply(lambda e: e.abs().median())
    assert by_family.drop(MISSED).max() <= 0.20 and by_family[MISSED] > 0.20


def test_steps_shorter_than_a_quarter_second_are_a_known_miss(runs):
    """On every test run whose step the model puts under steptime.SHORT_STEP_S, the model is 20 % too fast or
    more: MLPerf Training v5.1's Llama 3.1 8B on 32 to 512 Blackwell GPUs, context-parallel, at 1,024 to
    4,096 tokens per GPU and step. The same runs' H200 sibling (CP 2, 0.35 s steps) comes out within 5 %, and
    Megatron-Bridge's 405B on 1,024 H100 with CP 2 within 10 %: what the model misses is the short step, not
    context parallelism. If a change of the model catches it, this test says so."""
    test = runs[(runs["split"] == "test") & ~runs["end to end"]]
    short = test[test["short step"]]
    assert len(short) >= 8 and set(short["family"]) == {"mlperf-training"}
    assert (short["time error"] < -0.15).all() and short["time error"].median() < -0.25
    off = short["time error"].abs()
    assert (round(off.min(), 2), round(off.max(), 2)) == steptime.SHORT_STEP_MISS  # what the selector and panel say
    context = test[test["layout"].str.contains(" CP ") & ~test["short step"]]
    assert set(context["id"]) == {"M169", "M174"} and context["time error"].abs().max() <= 0.10


def test_blackwell_runs_but_gpt_oss_fall_inside_the_band_without_a_blackwell_fit(runs):
    """NVIDIA's Megatron-Bridge runs on B200, GB200 and GB300 of dense Llama 3 models in FP8 and of two
    fine-grained mixtures of experts in BF16 (DeepSeek-V3, Qwen3-235B-A22B) took part in no fit, and no
    calibration run is on Blackwell: the mean of the fitted efficiencies still puts each inside the band and
    the lot within 10 % in median, so gpt-oss's miss (:data:`MISSED`) is that model's, not Blackwell's nor
    fine-grained experts'."""
    cal = steptime.default_calibration()
    bridge = runs[runs["family"].isin(["megatron-bridge-llama", "megatron-bridge-moe"])]
    blackwell = bridge[bridge["GPU"].map(lambda g: gpus.get(g).architecture.startswith("Blackwell"))]
    assert len(blackwell) >= 10 and set(blackwell["family"]) == {"megatron-bridge-llama", "megatron-bridge-moe"}
    assert not any(cal.covers(a) for a in ("Blackwell", "Blackwell Ultra"))
    assert blackwell["inside band"].all() and blackwell["time error"].abs().median() <= 0.10


def test_amd_runs_calibrate_cdna_and_predict_amds_mlperf_run(runs, held_out):
    """AMD's own Primus runs (MI325X, MI355X) calibrate CDNA 3 and CDNA 4; AMD's MLPerf Training v5.1
    Llama 3.1 8B run on MI355X in FP8 took part in no fit and comes out inside the band, within 15 %. Left
    out, the Primus family is predicted with the other families' efficiencies, all NVIDIA's, and comes out
    too fast: errors the band of an architecture without runs is made of, and wider than a calibrated one."""
    cal = steptime.default_calibration()
    assert cal.covers("CDNA 3") and cal.covers("CDNA 4")
    mlperf = runs[(runs["family"] == "mlperf-training") & (runs["GPU"] == "MI355X-288GB")]
    assert len(mlperf) == 1 and (mlperf["split"] == "test").all()
    assert mlperf["inside band"].all() and mlperf["time error"].abs().max() <= 0.15
    amd = held_out[held_out["family"] == "amd-primus"]
    assert len(amd) == 4 and not amd["covered"].any()
    assert (amd["error"] < 0).all() and amd["error"].abs().median() > 0.1  # NVIDIA's efficiencies: too fast
    assert calibration.band("B200", "bf16")[1] > calibration.band("MI355X", "bf16")[1]


def test_attention_efficiency_is_fitted_only_where_runs_outnumber_the_parameters():
    """An architecture's attention efficiency is fitted only where its fused-attention runs outnumber its
    parameters: AMD's four runs over three GEMM efficiencies leave CDNA's to the mean."""
    rows = calibration.runs()
    cal = rows[rows["split"] == "calibration"]
    assert calibration._attention_keys(cal) == ["Ampere", "Hopper"]
    assert {"CDNA 3/bf16", "CDNA 3/fp8", "CDNA 4/bf16"} <= set(calibration._keys(cal))
    one = cal[cal["GPU"] == "MI355X-288GB"]
    assert calibration._attention_keys(pd.concat([cal, one, one])) == ["Ampere", "CDNA 4", "Hopper"]


def test_bands_come_from_out_of_sample_errors_and_hold_the_test_runs(runs):
    """The band is no wider than 2x (high/low), contains 1, and holds at least 90 % of the test runs but the
    two known misses (gpt-oss's, :data:`MISSED`, and steps under a quarter second, outside it) and at least
    80 % of them all."""
    low, high = calibration.band("H100", "bf16")
    assert low < 1 < high and high / low <= 2
    test = runs[(runs["split"] == "test") & ~runs["end to end"]]
    covered = test[(test["family"] != MISSED) & ~test["short step"]]
    assert covered["inside band"].mean() >= 0.9 and test["inside band"].mean() >= 0.8
    assert ((covered["band low"] <= covered["published"]) == (covered["published"] <= covered["band high"])).mean() >= 0.9


def test_a_fit_on_other_families_predicts_the_held_out_family(held_out):
    """Leave-one-family-out on the calibration rows: each family predicted by a fit on the others is, in
    median, within 20 % where the others cover its architecture."""
    covered = held_out[held_out["covered"]]
    assert len(covered) >= 15 and np.median(np.abs(covered["error"])) <= 0.2


def test_fitted_parameters_are_physical():
    cal = calibration.steptime.default_calibration()
    for key, value in cal.gemm_efficiency:
        assert 0.4 <= value <= 0.95, key
    assert 0 <= cal.elementwise_passes <= 10 and 0 <= cal.overlap_efficiency <= 1
    # FlashAttention-2 comes close to GEMM efficiency on A100, reaches about 35 % of an H100's peak
    # (Dao 2023, Sec. 4.1; Shah et al. 2024, Sec. 1)
    assert cal.attention("Ampere") > 0.8 and 0.2 <= cal.attention("Hopper") * cal.efficiency("Hopper", "bf16") <= 0.45


def test_flash_attention_1_against_flash_attention_2_end_to_end(runs):
    """FlashAttention-2's paper trained the same GPT models with both kernels (Dao 2023, Table 1); its
    FlashAttention-2 columns are calibration rows, its FlashAttention 1 columns test the kernel ratio
    (:data:`steptime.ATTENTION_KERNELS`, from the paper's kernel benchmarks, not fitted): within 10 % in
    median, and FlashAttention-2's gain on GPT3-2.7B within 10 % of the published one at 2k and 8k context
    (205 / 189 and 225 / 175 TFLOP/s), larger at 8k."""
    flash1 = runs[runs["family"] == "dao-2023-flash1"]
    assert len(flash1) == 4 and (flash1["split"] == "test").all()
    assert flash1["time error"].abs().median() <= 0.10
    dao = runs[runs["family"].str.startswith("dao-2023")].set_index("run")["predicted"]
    gain = {ctx: dao[f"GPT3-2.7B, {ctx} context, FlashAttention-2"] / dao[f"GPT3-2.7B, {ctx} context, FlashAttention"]
            for ctx in ("2k", "8k")}
    assert gain["2k"] == pytest.approx(205 / 189, rel=0.1) and gain["8k"] == pytest.approx(225 / 175, rel=0.1)
    assert gain["8k"] > gain["2k"]


def test_the_planner_finds_the_layouts_the_publications_ran():
    """Llama 3.1 405B on 16,384 H100s at 8K: NVIDIA's own layout for it on H100, TP 8 x CP 2 x PP 8 interleaved
    in 8 chunks (Megatron-Bridge's LLAMA31_405B_PRETRAIN_CONFIG_H100 presets, run as M174), at Meta's batch of
    2,048 sequences and with no activation checkpointing, as Meta trained it (arXiv:2407.21783, Table 4 and
    Sec. 3.3.2); Meta's own TP 8 x PP 16 interleaved comes within 5 % of it.
    TinyLlama on 16 A100-40GB: plain data parallelism, 16k tokens per GPU, no activation checkpointing (README)."""
    p = planner.plan("llama-3.1-405b", "H100", 16384, seq_len=8192, tokens=15.6e12)
    lay = p.layout
    assert (lay.tp, lay.cp, lay.pp, lay.vpp, lay.dp, lay.recompute) == (8, 2, 8, 8, 128, "none")
    assert p.fits and lay.global_batch == 2048
    meta = replace(lay, cp=1, pp=16)
    assert steptime.step_time("llama-3.1-405b", "H100", meta).total <= 1.05 * p.step.total
    t = planner.plan("tinyllama-1.1b", "A100 40GB", 16, seq_len=2048, tokens=300e9).layout
    assert (t.tp, t.pp, t.dp, t.recompute) == (1, 1, 16, "none")
    readme = steptime.Layout(dp=16, micro_batch=8, global_batch=1024, seq_len=2048, recompute="none")
    assert planner.layout_bytes(models.get("tinyllama-1.1b"), readme) <= gpus.get("A100 40GB").memory_bytes


def test_the_per_block_cache_bandwidth_explains_nims_single_client_trend():
    """Without a split of the cache, NIM's single-client time per token misses more the longer the
    prompt; the fitted per-block bandwidth (tens of GB/s: one block's loads in flight over a memory
    latency of about a microsecond) removes most of that trend: the spread of each configuration's
    errors about its own mean shrinks to less than half."""
    rows, cal = calibration.single_client_runs(), serving.default_calibration()
    assert 20e9 <= cal.kv_block_bandwidth <= 100e9

    def spread(c):
        error = pd.Series(np.log([s.seconds(c)["total"][0] for s in rows["steps"]]), index=rows.index) - \
            np.log(rows["published"])
        return float((error - error.groupby(rows["config"]).transform("mean")).std())

    assert spread(cal) < 0.5 * spread(replace(cal, kv_block_bandwidth=1e15))  # 1 PB/s a block: as if split
    assert calibration.fit_kv_block_bandwidth(rows, cal) == pytest.approx(cal.kv_block_bandwidth, rel=1e-3)


def test_the_hosts_share_is_one_per_sequence_cost_for_both_models():
    """NIM's time per token under load grows with the clients faster than the GPU's work does, by
    the same tens of microseconds per sequence for Llama 3 8B and 70B (a cost of the host, not of the
    model: vLLM 0.5.3 spent 62 % of an 8B step on its CPU): fitted on 8B's runs, the value (50 us)
    lies within a quarter of the one 70B's runs alone would give (44 us), and the fit is what the
    calibration file stores."""
    cal = serving.default_calibration()
    assert 20e-6 <= cal.host_seconds <= 150e-6
    assert calibration.fit_host_seconds(calibration.host_runs(), cal) == pytest.approx(cal.host_seconds, rel=1e-3)
    assert calibration.fit_host_seconds(calibration.host_runs("llama-3-70b"), cal) == pytest.approx(cal.host_seconds,
                                                                                                   rel=0.25)


def test_whole_runs_against_published_gpu_hours(runs):
    """GPU-hours of whole runs (the published layout where there is one, else the planner's; the goodput
    band) against the published ones: median |error| within 15 %, two in three inside their band and all
    but BloombergGPT (too fast) and Falcon-180B (too slow: TII's own framework on AWS p4d, 'up to' 4,096
    GPUs) within 25 %, bands no wider than 2x; StarCoderBase, timed on its published Megatron-LM script,
    within 10 %;
    BLOOM, timed on its published layout
    (arXiv:2211.05100), within 5 %; LLaMA 65B on the tensor-parallel degree of its released checkpoint
    (8 shards), within 20 %; a throughput-derived figure is predicted without downtime."""
    whole = runs[runs["end to end"]]
    assert whole["family"].nunique() >= 6 and whole["time error"].abs().median() <= 0.15
    assert whole["inside band"].mean() >= 2 / 3
    assert set(whole[whole["time error"].abs() > 0.25]["id"]) <= {"M114", "M125"}
    starcoder = whole[whole["id"] == "M121"].iloc[0]
    assert starcoder["layout"].startswith("TP 4 x PP 4 x DP 32") and abs(starcoder["time error"]) <= 0.10
    assert (whole["band high"] / whole["band low"]).max() <= 2
    bloom = whole[whole["run"] == "BLOOM 176B pre-training"].iloc[0]
    assert bloom["layout"].startswith("TP 4 x PP 12 x DP 8") and abs(bloom["time error"]) <= 0.05
    llama = whole[whole["id"] == "M110"].iloc[0]
    assert llama["layout"].startswith("TP 8 x PP 1 x DP 256") and abs(llama["time error"]) <= 0.2
    table = _data.table("training_runs").set_index("id")
    tiny = whole[whole["id"] == "M049"].iloc[0]
    assert table.loc["M049", "gpu_hours_basis"] == "throughput"
    plan = planner.plan("tinyllama-1.1b", "A100 40GB", 16, seq_len=2048, tokens=300e9)
    assert tiny["predicted"] == pytest.approx(300e9 / plan.tokens_per_second * 16 / 3600)


def test_the_step_model_beats_half_the_peak_on_every_steady_test_family_but_one(runs):
    """The baseline a step model has to beat: every FLOP of the layout at half the dense peak, nothing else.
    On the steady-state test runs it is off by about twice the model's error overall, and by more in every
    family but one: Megatron-Core's mixtures of experts of 2025 (megatron-moe), which run at 35-49 % of the
    peak, where the model comes out about 17 % slow on Mixtral 8x22B (the validation appendix says so).
    On whole runs, where what the publications leave out (software, downtime) weighs more, the baseline
    does about as well as the model."""
    test = runs[~runs["end to end"] & (runs["split"] == "test")]
    medians = test.groupby("family")[["time error", "half-peak error"]].agg(lambda e: e.abs().median())
    assert set(medians.index[medians["time error"] >= medians["half-peak error"]]) == {"megatron-moe"}
    assert test["time error"].abs().median() < test["half-peak error"].abs().median() / 1.5
    whole = runs[runs["end to end"]]
    assert abs(whole["time error"].abs().median() - whole["half-peak error"].abs().median()) < 0.05


def test_the_overview_sets_half_the_peak_beside_the_training_estimates(runs):
    """validation.out_of_sample carries the baseline's median error for the two training estimates (what
    the chapters glue as half-peak-steady and half-peak-e2e) and none for the others."""
    table = validation.out_of_sample().set_index("estimate")["half the peak"]
    steady = runs[~runs["end to end"] & (runs["split"] == "test")]
    assert table["training step, steady state"] == steady["half-peak error"].abs().median()
    assert table["training, whole runs (GPU-hours)"] == runs[runs["end to end"]]["half-peak error"].abs().median()
    assert table.drop(["training step, steady state", "training, whole runs (GPU-hours)"]).isna().all()


def test_half_the_peak_counts_the_layouts_flops():
    """BLOOM's whole run at half the peak: 8ND with full recomputation, attention included, over 384 A100s
    at 156 TFLOP/s each, no downtime."""
    bloom = validation.training_runs().set_index("id").loc["M113"]
    row = _data.table("training_runs").set_index("id", drop=False).loc["M113"]
    flops = compute.training_flops(calibration.run_model(row), row["tokens"], recompute="full", seq_len=2048)
    hours = flops / (0.5 * 312e12) / 3600  # GPU-hours: the FLOPs over one GPU's half peak
    assert bloom["half-peak error"] == pytest.approx(hours / row["gpu_hours"] - 1, rel=1e-9)


def test_runs_on_aws_p4d_pay_for_its_400_gbps_per_server():
    """BloombergGPT (its paper names the servers) and Pythia (its configs read /fsx, Amazon FSx) ran on
    p4d.24xlarge, 4 x 100 Gb/s EFA for 8 GPUs, a quarter of HGX A100's 8 x 200 Gb/s: on them Pythia 12B's
    exposed data-parallel time (the weights' gather inside DeepSpeed's step, the gradients' last bucket)
    is over a tenth of its step, on HGX A100 servers several times less."""
    rows = _data.table("training_runs").set_index("id", drop=False)
    assert {calibration.run_network(rows.loc[i]) for i in ("M114", "M119")} == {steptime.server("AWS p4d.24xlarge")}
    assert calibration.run_network(rows.loc["M113"]) == steptime.network_for("A100 80GB")  # BLOOM: none named
    pythia = rows.loc["M119"]
    plan = validation._whole_run_plan(pythia, steptime.default_calibration())
    p4d = plan.step
    hgx = steptime.step_time(calibration.run_model(pythia), pythia["gpu"], plan.layout,
                             network=steptime.network_for(pythia["gpu"]))
    assert p4d.data_parallel / p4d.total > 0.1 and hgx.data_parallel / hgx.total < p4d.data_parallel / p4d.total / 3


def test_a_row_shapes_its_model_with_its_key_value_heads_and_mlp():
    """StarCoderBase's multi-query attention reads one 128-wide key-value head; StableLM-3B-4E1T's gated
    SiLU MLP has three 2,560 x 6,912 matrices; a row that states neither keeps GPT's shape."""
    rows = _data.table("training_runs").set_index("id", drop=False)
    star, stable = calibration.run_model(rows.loc["M121"]), calibration.run_model(rows.loc["M123"])
    assert (star.n_heads, star.n_kv_heads, star.kv_dim, star.d_ff) == (48, 1, 128, 4 * 6144)
    mlp = {(i, o): n for i, o, n in stable.matrices() if 6912 in (i, o)}
    assert stable.mlp == "swiglu" and mlp == {(2560, 6912): 2 * 32, (6912, 2560): 32}
    pythia = calibration.run_model(rows.loc["M119"])
    assert (pythia.n_kv_heads, pythia.d_ff, pythia.mlp) == (pythia.n_heads, 4 * pythia.d_model, "gelu")


def test_deepspeed_reduces_bf16_gradients_in_bf16():
    """DeepSpeed's ZeRO-1 keeps and reduces a bf16 model's gradients in bf16 (StableLM-3B-4E1T's row states
    2 bytes), where Megatron-LM reduces them in fp32: the gradients' reduce-scatter halves, the weights'
    all-gather (2 bytes either way) stays."""
    row = _data.table("training_runs").set_index("id", drop=False).loc["M123"]
    assert row["grad_bytes"] == 2
    cal = steptime.default_calibration()
    ((deepspeed, bf16), (_, fp32)) = calibration.best_layouts(
        pd.DataFrame([calibration.layout_row(row), calibration.layout_row(row.drop("grad_bytes"))]), cal)
    assert deepspeed.grad_bytes == 2
    # 2 + 2 bytes per parameter against 4 + 2, the rings' latency aside
    assert fp32.data_parallel_total / bf16.data_parallel_total == pytest.approx(6 / 4, rel=0.01)


def test_pythia_reduces_its_gradients_after_the_backward_pass():
    """Pythia's configs set synchronize-each-layer: DeepSpeed's checkpointing synchronizes the whole GPU
    at every checkpointed layer, waiting for the reduction stream too, so none of the data-parallel
    traffic hides behind the backward pass."""
    rows = _data.table("training_runs").set_index("id", drop=False)
    for i in rows.index[rows["family"] == "pythia"]:
        plan = validation._whole_run_plan(rows.loc[i], steptime.default_calibration())
        assert not plan.layout.overlap and not plan.layout.gather_overlap
        assert plan.step.data_parallel == pytest.approx(plan.step.data_parallel_total, rel=1e-12)


def test_same_layout_ratio_divides_the_published_throughputs_of_matching_runs():
    """GB300 over GB200 on NVIDIA's dense FP8 runs: Llama 3 8B (37,556 and 31,508 tokens/s per GPU, 25.11) and
    70B (5,248 and 4,224, 26.04.01) share their layouts; the 405B runs do not (PP 8 against 16), so they pair
    with nothing."""
    ratio = validation.same_layout_ratio("megatron-bridge-llama", "GB300-NVL72", "GB200-NVL72")
    assert ratio.to_dict() == pytest.approx({"llama-3-8b": 37556 / 31508, "llama-3-70b": 5248 / 4224})
    with pytest.raises(ValueError, match="gpu='B300-HGX-288GB'"):  # no Llama run on a B300
        validation.same_layout_ratio("megatron-bridge-llama", "B300-HGX-288GB", "B200-HGX-192GB")
    assert validation.same_layout_ratio("megatron-bridge-llama", "H100-SXM5-80GB", "B200-HGX-192GB").empty


def test_no_run_gives_a_fused_kernel_heads_wider_than_it_takes():
    """FlashAttention 1 ran heads up to 128 wide, so BloombergGPT's 192-wide heads ran unfused in its
    run of early 2023; a row that claimed the kernel for them is refused, naming the row."""
    rows = _data.table("training_runs").set_index("id", drop=False)
    bbg = rows.loc["M114"]
    assert calibration.run_model(bbg).head_dim == 192 and not bbg["flash_attention"]
    assert calibration.layout_row(bbg)["flags"]["flash_attention"] is False
    claimed = bbg.copy()
    claimed["flash_attention"], claimed["attention_kernel"] = True, "flash1"
    with pytest.raises(ValueError, match="M114: flash1 runs heads up to 128 wide, not 192"):
        calibration.layout_row(claimed)
    claimed["attention_kernel"] = "flash2"  # FlashAttention-2 takes them
    assert calibration.layout_row(claimed)["flags"]["attention_kernel"] == "flash2"


def test_the_formula_sheet_states_the_kernels_widest_heads():
    """book/formulas.md types each fused kernel's widest head; they are steptime.ATTENTION_MAX_HEAD_DIM's."""
    sheet = (Path(__file__).resolve().parents[1] / "book" / "formulas.md").read_text(encoding="utf-8")
    widest = steptime.ATTENTION_MAX_HEAD_DIM
    assert widest["flash1"] == widest["triton"]
    assert (f"{widest['flash1']} for FlashAttention 1 and its Triton version, {widest['flash2']} for FlashAttention-2"
            in sheet)


def test_the_peer_estimates_cover_every_training_run():
    """benchmarks/peer_llm_analysis.csv holds llm-analysis's answer (or why it has none) for every row
    of training_runs.csv in both settings: a row added without rerunning the peer script would read
    as 'cannot model' in benchmarks/results.md."""
    root = Path(__file__).resolve().parents[1]
    peer = pd.read_csv(root / "benchmarks" / "peer_llm_analysis.csv")
    runs = set(_data.table("training_runs")["id"])
    for setting in ("defaults", "tuned"):
        assert set(peer.loc[peer["setting"] == setting, "id"]) == runs, f"rerun benchmarks/peer_llm_analysis.py ({setting})"
