import inspect
import io
import warnings
from pathlib import Path

import ipywidgets as w
import numpy as np
import PIL.Image
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import cost, memory, models, steptime, widgets


@pytest.fixture
def training():
    return widgets.training_memory()


@pytest.fixture
def inference():
    return widgets.inference_memory()


def bar_total(panel):
    """Right end of the stacked bar, in GB, read back from the drawn figure."""
    ax = panel.figure.axes[0]
    return max(path.vertices[:, 0].max() for bars in ax.collections for path in bars.get_paths())


def test_panel_factories():
    """Every public factory of a Panel is registered (a forgotten decorator fails here), and each
    one builds a panel with a result, a figure and a table."""
    factories = {name for name, f in vars(widgets).items() if inspect.isfunction(f) and not name.startswith("_")
                 and inspect.signature(f).return_annotation in (widgets.Panel, "Panel")}
    assert set(widgets.panels()) == factories and len(factories) >= 12
    for factory in widgets.panels().values():
        panel = factory()
        assert panel.result is not None and panel.message is None
        assert panel.figure.axes and panel.table is not None
        assert "panel with controls" in repr(panel)


def test_output_area_shows_figure_and_table_or_nothing(inference):
    kinds = [set(o["data"]) for o in inference._output.outputs]
    assert {"image/png", "text/plain"} in kinds and {"text/html"} in kinds
    inference.set(model="gpt2-xl", tp=2)
    assert inference._output.outputs == () and "must divide" in inference._message.value


def test_training_default_matches_the_model_layer(training):
    expected = memory.training("llama-2-7b", recompute="selective")
    assert training.result == expected
    assert bar_total(training) == pytest.approx(expected.total / 1e9)
    assert training.table["fits"].tolist() == memory.fits_table(expected)["fits"].tolist()


def test_training_set_redraws(training):
    training.set(model="custom", size_b=70, zero_stage=3, n_gpus=64, recompute="full")
    expected = memory.training(models.dense(70e9), zero_stage=3, dp=64, recompute="full")
    assert training.result == expected
    assert bar_total(training) == pytest.approx(expected.total / 1e9)
    assert "Training memory per GPU: dense-70B" in training.figure.axes[0].get_title()


def test_training_memory_without_flash_attention_stores_the_scores(training):
    training.set(recompute="none", seq_len=8192, flash_attention=False)
    assert training.result == memory.training("llama-2-7b", recompute="none", seq_len=8192, flash_attention=False)
    assert training.result.activations > 2 * memory.training("llama-2-7b", recompute="none", seq_len=8192).activations


def test_training_memory_splits_a_long_sequence_over_context_parallel_gpus(training):
    """At 128k tokens, CP 8 keeps an eighth of each sequence's activations on a GPU; CP without
    FlashAttention is refused with the model layer's message, not a traceback."""
    training.set(recompute="full", seq_len=131072, cp=8)
    assert training.result == memory.training("llama-2-7b", recompute="full", seq_len=131072, cp=8)
    assert training.result.activations < memory.training("llama-2-7b", recompute="full", seq_len=131072).activations / 4
    assert "each over 8 GPUs" in training.figure.axes[0].get_title()
    training.set(flash_attention=False)
    assert training.result is None and training.message.startswith("cp=8 needs")


def test_size_and_token_sliders_stop_at_values_a_reader_can_name(training):
    stops = [value for _, value in training.controls["size_b"].options]
    assert stops[0] == 0.1 and {7, 70, 1000} <= set(stops)  # 0.1B: the smallest dense() accepts
    training.set(model="custom", size_b=0.1)
    assert training.message is None and training.result == memory.training(models.dense(1e8), recompute="selective")
    assert {1000, 2000, 15000} <= {value for _, value in widgets.training_time().controls["tokens_b"].options}


def test_error_from_the_model_layer_is_shown_not_raised(training, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("micro_batch_size must be a positive integer, got 0")
    monkeypatch.setattr(widgets.memory, "training", broken)
    training.set(micro_batch_size=2)
    assert training.result is None and training.message.startswith("micro_batch_size")
    assert "micro_batch_size" in training._message.value
    monkeypatch.undo()
    training.set(micro_batch_size=1)
    assert training.message is None and training._message.value == "" and training.result is not None


def test_set_rejects_unknown_controls(training):
    with pytest.raises(ValueError, match="unknown control"):
        training.set(gpu="H100")


@pytest.mark.parametrize("values, message", [
    (dict(micro_batch_size=8, seq_len=12345), "seq_len=12345 is not an option; choose one of 256, 512"),
    (dict(micro_batch_size=10**6), "micro_batch_size must be an integer from 1 to 64, got 1000000"),
    (dict(micro_batch_size=2.0), "micro_batch_size must be an integer"),
    (dict(dtype="fp4"), "dtype='fp4' is not an option"),
])
def test_set_is_atomic_and_never_clamps(training, values, message):
    """Every value is checked before any is applied: a bad one changes nothing and redraws nothing."""
    before, png = training.values(), training._png
    with pytest.raises(ValueError, match=message):
        training.set(**values)
    assert training.values() == before and training._png == png


@pytest.mark.parametrize("factory, control, values", [
    ("data_parallel", "gpu", {"gpu": "V100-SXM2-32GB"}),  # no precision control: fp16 where bf16 is missing
    ("wait_or_start", "now", {"now": "T4-16GB"}),
    ("training_vs_inference", "dtype", {"dtype": "tf32"}),  # a compute mode: the KV cache stays fp32
])
def test_every_option_can_work(factory, control, values):
    panel = widgets.panels()[factory]()
    assert all(v in [o[1] if isinstance(o, tuple) else o for o in panel.controls[control].options] for v in values.values())
    panel.set(**values)
    assert panel.message is None and panel.result is not None


def test_inference_panel(inference):
    inference.set(model="llama-2-70b", weight_dtype="int4", batch_size=4, context_len=8192, tp=2)
    assert inference.result == memory.inference("llama-2-70b", weight_dtype="int4", batch_size=4, context_len=8192, tp=2)
    longest = dict(zip(inference.table["GPU"], inference.table["longest context (tokens)"]))
    assert longest["RTX-4090-24GB"] == memory.max_context_len("llama-2-70b", __import__("helpers").gpus.get("4090"),
                                                              batch_size=4, weight_dtype="int4", tp=2)
    inference.set(model="gpt2-xl")  # 25 heads cannot be split over 2 GPUs
    assert inference.result is None and "tp=2 must divide the 25 attention heads" in inference.message
    inference.set(tp=1)
    assert inference.result is not None


def test_controls_change_redraws_without_set(inference):
    inference.controls["batch_size"].value = 32
    assert inference.result.kv_cache == pytest.approx(memory.inference("llama-3-8b", batch_size=32).kv_cache)


def test_training_vs_inference_panel():
    from helpers import compute, roofline
    panel = widgets.training_vs_inference()
    assert panel.result["training FLOP"] == compute.training_flops("llama-2-7b", 1e12, seq_len=2048)
    assert panel.table["bound"].tolist()[:2] == ["compute", "compute"]
    assert set(panel.table["bound"].tolist()[2:]) == {"memory"}
    panel.set(gpu="V100-SXM2-32GB")
    assert panel.result is None and "no 'bf16' rate" in panel.message
    panel.set(dtype="fp16")
    assert panel.result["ridge point (FLOP/byte)"] == roofline.ridge_point("V100", "fp16")
    assert "V100-SXM2-32GB" in panel.figure.axes[0].get_legend().get_texts()[0].get_text()


def test_training_time_panel():
    from helpers import compute, gpus
    panel = widgets.training_time()
    chosen = panel.result["H100-SXM5-80GB"]  # typed, in seconds; the table shows days
    assert chosen.time == compute.training_time("llama-2-7b", 1e12, "H100", 64) and chosen.n_gpus == 64
    row = panel.table.set_index("GPU").loc["H100-SXM5-80GB"]
    assert row["days"] == pytest.approx(chosen.time.expected / 86400)
    assert "V100-SXM2-32GB" not in set(panel.table["GPU"])  # no bf16
    panel.set(model="llama-3.1-405b", n_gpus=8)
    assert not panel.table.set_index("GPU").loc["H100-SXM5-80GB", "fits"]
    assert "does not fit" in panel.figure.axes[0].get_title()
    panel.set(dtype="fp8")
    assert set(panel.table["GPU"]) == {n for n in gpus.names() if gpus.get(n).supports("fp8")}


def test_serving_panel():
    from helpers import compare
    panel = widgets.serving()
    h100 = "H100-SXM5-80GB"
    assert panel.result[h100].bound == "memory" and list(panel.result) == list(panel.table["GPU"])
    assert panel.result[h100].tokens_per_s == compare.serving_estimate("llama-3-8b", "H100").tokens_per_s
    panel.controls["batch_size"].max = 1024
    panel.set(batch_size=1024, context_len=256)  # Llama 3 8B at 1024 x 256 tokens passes the H100 ridge point
    assert panel.result[h100].bound == "compute"
    panel.set(model="qwen3-8b", batch_size=1, context_len=32768)  # one long conversation: an unsplit read halves it
    split = panel.result[h100].tokens_per_s.expected
    panel.set(split_kv=False)
    assert panel.result[h100].tokens_per_s.expected < 0.6 * split and "unsplit" in panel.figure.axes[0].get_title()
    panel.set(split_kv=True, context_len=256)
    panel.set(model="llama-2-70b", batch_size=1)
    assert not panel.result[h100].fits and h100 in set(panel.table.loc[~panel.table["fits"], "GPU"])
    panel.set(model="gpt2-xl", tp=2)
    assert panel.result is None and "must divide" in panel.message


def test_parallelism_panel_shows_the_planners_layout_and_refuses_idle_gpus():
    panel = widgets.parallelism()
    row = panel.table.iloc[0]
    assert row["layout"].startswith("TP ") and row["fits"] and 0 < row["scaling efficiency"] <= 1
    assert len(panel.figure.axes) == 2 and "512 GPUs" in panel.figure.texts[0].get_text()
    panel.set(gpu="L40S-48GB")
    assert panel.table.iloc[0]["scaling efficiency"] < row["scaling efficiency"]  # PCIe servers pay for the split
    panel.set(model="llama-2-70b", gpu="H100-SXM5-80GB", n_gpus=256, seq_len=131072)  # long sequences split
    assert " CP 16 " in panel.table.iloc[0]["layout"]  # its key-value ring hides behind 128k-token attention
    panel.set(model="llama-2-7b", n_gpus=4096, seq_len=2048)  # a short step: the model is known to be too fast there
    assert panel.table.iloc[0]["step (s)"] < steptime.SHORT_STEP_S and "this model was 20%-60% too fast" in panel.figure.texts[0].get_text()
    panel.set(model="custom", size_b=0.1, n_gpus=4096, seq_len=8192)  # a 0.1B model's batch cannot feed 4096 GPUs
    assert panel.result is None and "choose fewer GPUs" in panel.message


def test_parallelism_panel_splits_a_mixture_of_experts_experts_and_shows_their_all_to_alls():
    """For a mixture of experts the planner spreads the experts (EP) at some GPU count, and the panel
    then names EP in its layout and adds the all-to-all term to its stacked bars; a dense model's bars
    never show it."""
    panel = widgets.parallelism(model="qwen3-235b-a22b")
    expert_parallel = [p for p in panel.result if p is not None and p.layout.ep > 1]
    assert expert_parallel and all(p.step.expert_parallel > 0 for p in expert_parallel)
    panel.set(n_gpus=expert_parallel[0].n_gpus)
    assert f"(EP {expert_parallel[0].layout.ep})" in panel.table.iloc[0]["layout"]
    assert "expert parallel" in [t.get_text() for t in panel.figure.legends[0].get_texts()]
    panel.set(model="llama-2-70b")
    assert "(EP " not in panel.table.iloc[0]["layout"]
    assert "expert parallel" not in [t.get_text() for t in panel.figure.legends[0].get_texts()]


def test_data_parallel_panel():
    from helpers import scaling
    panel = widgets.data_parallel()
    assert panel.result.counts[0] == 1 and panel.result.steps[0].efficiency == 1
    panel.set(network="ib-hdr", nics_per_node=1, tokens_per_gpu=4096)
    expected = scaling.transformer_step("llama-2-7b", "H100", 16, tokens_per_gpu=4096, network="ib-hdr", nics_per_node=1)
    at16 = panel.result.steps[panel.result.counts.index(16)]
    assert at16.efficiency == pytest.approx(expected.efficiency) and at16.efficiency < 0.5
    assert panel.table.set_index("GPUs").loc[16, "efficiency"] == at16.efficiency  # the table shows the result
    panel.set(overlap=0.0)
    assert panel.result.steps[panel.result.counts.index(16)].exposed == pytest.approx(expected.communication)
    assert len(panel.figure.axes) == 2


def test_training_cost_panel():
    from helpers import cost
    panel = widgets.training_cost()
    assert set(panel.result) == set(cost.PRICING)
    assert panel.result["on_demand"] == cost.training_cost("llama-2-7b", 1e12, "H100", 64)
    panel.set(gpu="H200-NVL-141GB")  # no rental or purchase price in the data: the panel asks for one
    assert panel.result is None and "type your own" in panel.message
    panel.set(price=0.5)
    assert panel.result["on_demand"].expected == pytest.approx(cost.training_cost("llama-2-7b", 1e12, "H200 NVL", 64,
                                                                                  price_per_gpu_hour=0.5).expected)


def test_rent_or_buy_panel():
    from helpers import cost
    panel = widgets.rent_or_buy()
    assert cost.break_even_months(panel.result) is not None
    panel.set(utilization=0.05)
    assert cost.break_even_months(panel.result) is None
    assert "renting stays cheaper" in panel.figure.axes[0].get_title()


def test_selector_panel():
    from helpers import select
    panel = widgets.selector()
    assert panel.result.iloc[0]["gpu"] == select.recommend("llama-2-70b", tokens=2e12).iloc[0]["gpu"]
    panel.set(seq_len=131072, tokens_b=100)  # long-context training: each sequence split over GPUs
    assert panel.result.equals(select.recommend("llama-2-70b", tokens=1e11, seq_len=131072))
    assert panel.result["settings"].str.contains(" CP ").any()
    panel.set(task="serve", model="llama-2-7b")  # at a traffic level by default
    assert panel.result.equals(select.recommend("llama-2-7b", task="serve", requests_per_s=2.0, prompt_len=1024,
                                                output_len=256))
    panel.set(requests_per_s=8.0, tpot_ms=40, ttft_ms=800)
    planned = panel.result.dropna(subset=["ms per token"])
    assert (planned["ms per token"] <= 40).all() and (planned["first token (ms)"] <= 800).all()
    panel.set(model="llama-3-8b", requests_per_s=50.0, tpot_ms=50, ttft_ms=1000)  # chapter 6's traffic level
    host = panel.result.set_index("gpu")["n_gpus"]
    panel.set(hides_host=True)  # an engine that hides its CPU work: no GPU needs more, the H100 fewer
    hidden = panel.result.set_index("gpu")["n_gpus"]
    assert panel.result.equals(select.recommend("llama-3-8b", task="serve", requests_per_s=50.0, prompt_len=1024,
                                                output_len=256, ttft_s=1.0, tpot_s=0.05, host_seconds=0.0))
    assert (hidden <= host.loc[hidden.index]).all() and hidden["H100-SXM5-80GB"] < host["H100-SXM5-80GB"]
    panel.set(hides_host=False, model="llama-2-7b")
    panel.set(requests_per_s=0.0, tpot_ms=0, ttft_ms=0)  # a fixed batch, as before
    assert "tokens/s" in panel.result and panel.result.iloc[0]["binding"] == "memory bandwidth"
    panel.set(budget_usd=1e-6)
    assert (panel.result["binding"].isin(["budget", "memory"]) | panel.result["cost_usd"].isna()).all()
    assert list(panel.table.columns) == ["gpu", "n_gpus", "settings", "binding", "reason"]


def test_wait_or_start_panel():
    from helpers import trends
    panel = widgets.wait_or_start()
    expected = trends.wait_or_start("llama-2-70b", 2e12, 512, wait_months=6.0)  # both prices: medians of the data
    assert panel.result == expected
    panel.set(wait_months=0.0)
    assert panel.result.finish_later < panel.result.run_now


def test_redraws_reuse_the_layout_but_never_cut_text():
    """Later drawings reuse the first layout; a move that widens a label lays the figure out anew."""
    panel = widgets.training_memory()
    first = panel.figure.axes[0].get_position().bounds
    panel.set(micro_batch_size=2)
    assert panel.figure.get_layout_engine() is None and panel.figure.axes[0].get_position().bounds == first
    panel.set(model="llama-3.1-405b")  # a longer model name: the axes must move right
    assert not panel.figure.canvas.texts_cut and panel.figure.axes[0].get_position().x0 > first[0]


def _values(control):
    """Every value a reader can give ``control``."""
    if isinstance(control, (w.Dropdown, w.SelectionSlider)):
        return st.sampled_from([o[1] if isinstance(o, tuple) else o for o in control.options])
    if isinstance(control, w.IntSlider):
        return st.integers(control.min, control.max)
    if isinstance(control, w.Checkbox):
        return st.booleans()
    if isinstance(control, w.Textarea):  # a pasted config.json: none, a real one, broken ones, any text
        return st.sampled_from(["", CONFIG_JSON, "{not json", '{"model_type": "bert"}']) | st.text(max_size=40)
    return st.floats(control.min, control.max)  # FloatSlider, BoundedFloatText


_PANELS: dict = {}  # name -> (panel, its default control values): one panel per name for all examples


@pytest.mark.parametrize("name", sorted(widgets.panels()))
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_control_values_give_a_figure_or_a_short_message(name, data):
    """Whatever a reader sets, a panel shows a result or a one-line message, never raises or warns, and
    recovers when the input is put right: back at its defaults, the figure redrawn in place is the
    first one to the byte (nothing of the earlier drawing leaks: scales, colours, categories)."""
    if name not in _PANELS:
        panel = widgets.panels()[name]()
        _PANELS[name] = panel, panel.values(), panel._png
    panel, defaults, first = _PANELS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would print under the reader's panel
        panel.set(**{key: data.draw(_values(control), label=key) for key, control in panel.controls.items()})
    if panel.message is None:
        assert panel.result is not None and panel._output.outputs
    else:
        assert panel.result is None and panel._output.outputs == () and "\n" not in panel.message
    panel.set(**defaults)
    assert panel.message is None and panel.result is not None
    if panel._png != first:  # a wider label in between laid the figure out anew: lay out as at first
        panel._positions = None
        panel.refresh()
    assert panel._png == first


def test_engine_start_panel():
    """Llama 3 70B in FP8 on 2 L40S starts at 32k context, not at 128k; raising the utilisation adds cache."""
    from helpers import engine
    panel = widgets.engine_start()
    assert panel.result == engine.budget("llama-3-70b", "L40S-48GB", tp=2, max_model_len=32768, weight_dtype="fp8")
    assert panel.result.starts and "starts" in panel.figure.axes[0].get_title()
    panel.set(max_model_len=131072)
    assert not panel.result.starts and "does not start" in panel.figure.axes[0].get_title()
    tokens = panel.result.kv_tokens
    panel.set(gpu_memory_utilization=0.95)
    assert panel.result.kv_tokens > tokens


CONFIG_JSON = (Path(__file__).parent.parent / "src" / "helpers" / "data" / "configs" / "gpt-oss-20b.json").read_text()


@pytest.mark.parametrize("name", [n for n, f in widgets.panels().items() if "config" in f().controls])
def test_panels_take_a_pasted_config(name):
    panel = widgets.panels()[name]()
    panel.set(model=widgets.CONFIG)
    assert "paste a model's config.json" in panel.message
    panel.set(config=CONFIG_JSON)
    assert panel.message is None and panel.result is not None
    panel.set(config='{"model_type": "bert", "hidden_size": 768}')
    assert panel.message.startswith("config model_type 'bert' is not one from_config reads")
    with pytest.raises(ValueError, match="config must be text"):
        panel.set(config=42)


def test_every_panel_has_a_benchmark_sweep():
    """benchmarks/run.py times each panel over realistic moves: a new panel needs its sweep there."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("benchmarks_run", Path(__file__).parent.parent / "benchmarks" / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    assert set(run.SWEEPS) == set(widgets.panels())
    for name, moves in run.SWEEPS.items():
        controls = widgets.panels()[name]().controls
        assert all(set(move) <= set(controls) for move in moves), name


def test_rent_or_buy_counts_overheads_unless_the_reader_has_them():
    panel = widgets.rent_or_buy().set(n_gpus=64, years=5.0)
    full = cost.break_even_months(panel.result)
    bare = cost.break_even_months(panel.set(overheads=False).result)
    assert bare < full
    with pytest.raises(ValueError, match="overheads must be True or False, got 'no'"):
        panel.set(overheads="no")
    assert panel.values()["overheads"] is False  # nothing changed


def test_the_png_is_the_canvas_without_its_alpha(inference):
    """The figures are opaque: the PNG drops the alpha channel and keeps every pixel of the canvas."""
    image = PIL.Image.open(io.BytesIO(inference.snapshot().data))
    canvas = np.asarray(inference.figure.canvas.buffer_rgba())
    assert image.mode == "RGB" and (canvas[..., 3] == 255).all()
    assert (np.asarray(image) == canvas[..., :3]).all()


@pytest.mark.parametrize("name", sorted(widgets.panels()))
def test_axes_drawn_again_are_what_matplotlib_draws(name):
    """A redraw draws each axis whose ticks, limits, labels and place did not change as it drew it
    last time (plots._replayed): after moves of three controls, and back, the pixels are those of a
    drawing that redraws every axis through matplotlib."""
    panel = widgets.panels()[name]()
    canvas, defaults = panel.figure.canvas, panel.values()
    controls = [(k, c) for k, c in panel.controls.items()
                if k not in ("model", "config", "size_b") and isinstance(c, (w.Dropdown, w.SelectionSlider, w.IntSlider))]
    moves = []
    for key, control in controls[-3:]:
        other = control.max if isinstance(control, w.IntSlider) else control.options[-1]
        moves += [{key: other[1] if isinstance(other, tuple) else other}, {key: defaults[key]}]
    replayed = 0
    for values in moves:
        panel.set(**values)
        if panel.message:
            continue
        drawn = np.asarray(canvas.buffer_rgba()).copy()
        replayed += len(canvas.get_renderer().replays)
        canvas.get_renderer().replays.clear()
        panel.figure.set_layout_engine(None)  # the same places (a move that laid the figure out anew keeps its engine)
        canvas.draw()
        assert (drawn == np.asarray(canvas.buffer_rgba())).all(), values
    assert replayed
