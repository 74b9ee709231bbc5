"""Interactive panels: controls wired to one pure function and one plot.

Each panel is an ipywidgets box with ``controls`` (by name), ``set(**values)`` (sets controls
and redraws once, synchronously), ``result`` (the last computed result, None after bad input),
``message`` (the text shown instead of the figure after bad input), ``figure`` and ``table``.
"""

import base64
import struct
import textwrap
import zlib
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import ipywidgets as w
import numpy as np
import pandas as pd
from IPython.display import Image
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

from . import (book, comm, compare, compute, cost, engine, gpus, memory, models, planner, plots, roofline, scaling, select,
               steptime, trends)
from .estimate import Estimate
from .units import DAY

CUSTOM = "custom"
CONFIG = "config"
SEQ_LENS = tuple(2**k for k in range(8, 18))
#: Training sequence lengths the panels offer: pre-training's usual 2k to 8k, and the long-context
#: lengths that context parallelism splits over GPUs.
TRAIN_SEQ_LENS = (1024, 2048, 4096, 8192, 32768, 131072)
PROMPT_LENS = tuple(2**k for k in range(5, 18))
OUTPUT_LENS = tuple(2**k for k in range(0, 14))
GPU_COUNTS = tuple(2**k for k in range(11))


def _check_control(name: str, control: w.ValueWidget, value: Any) -> None:
    """Raise a ValueError unless ``control`` can take ``value`` as it is (sliders would clamp it,
    dropdowns refuse it with a traitlets error)."""
    if isinstance(control, (w.Dropdown, w.SelectionSlider)):
        allowed = [o[1] if isinstance(o, tuple) else o for o in control.options]
        if not any(value == a and isinstance(value, bool) == isinstance(a, bool) for a in allowed):
            raise ValueError(f"{name}={value!r} is not an option; choose one of {', '.join(map(repr, allowed))}")
        return
    if isinstance(control, w.Textarea):
        if not isinstance(value, str):
            raise ValueError(f"{name} must be text, got {value!r}")
        return
    if isinstance(control, w.Checkbox):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be True or False, got {value!r}")
        return
    integer = isinstance(control, w.IntSlider)
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not control.min <= value <= control.max:
        raise ValueError(f"{name} must be {'an integer' if integer else 'a number'} from {control.min:g} to "
                         f"{control.max:g}, got {value!r}")


class Panel(w.VBox):
    """Controls, a message line and an output area holding a figure and a table."""

    def __init__(self, title: str, controls: dict[str, w.ValueWidget], compute: Callable[..., Any],
                 draw: Callable[..., None], table: Callable[..., pd.DataFrame | None], *,
                 figsize: tuple[float, float] = (8, 3.5)) -> None:
        self.title, self.controls = title, controls
        self._compute, self._draw, self._table = compute, draw, table
        self.figure = Figure(figsize=figsize, layout=_layout())
        plots.Canvas(self.figure)  # one canvas for every redraw: its renderer keeps text bitmaps and layout caches warm
        self.result: Any = None
        self.table: pd.DataFrame | None = None
        self.message: str | None = None
        self._png = b""
        self._positions: list | None = None
        self._holding = False
        self._message = w.HTML()
        self._output = w.Output()
        for control in controls.values():
            control.style = {"description_width": "initial"}
            control.observe(self._changed, names="value")
        grid = w.GridBox(list(controls.values()), layout=w.Layout(grid_template_columns="repeat(3, 1fr)"))
        super().__init__([w.HTML(f"<b>{title}</b>"), grid, self._message, self._output])
        self.refresh()

    def __repr__(self) -> str:
        return f"<{self.title}: panel with controls {', '.join(self.controls)}>"

    def values(self) -> dict[str, Any]:
        return {name: control.value for name, control in self.controls.items()}

    def set(self, **values: Any) -> "Panel":
        """Set controls by name, then recompute and redraw once. All values are checked first: a
        ValueError names the first control a value does not suit and what it allows, and then no
        control changes."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; this panel has {list(self.controls)}")
        for name, value in values.items():
            _check_control(name, self.controls[name], value)
        self._holding = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._holding = False
        self.refresh()
        return self

    def _changed(self, _change: dict) -> None:
        if not self._holding:
            self.refresh()

    def refresh(self) -> None:
        """Recompute from the controls; show the figure and table, or a short message."""
        values = self.values()
        try:
            self.result = self._compute(**values)
            self.table = self._table(self.result, **values)
        except ValueError as error:
            self.result, self.table, self.message = None, None, str(error)
            self._message.value = f"<span style='color:#b00'>&#9888; {self.message}</span>"
            self._output.outputs = ()
            return
        self.message, self._message.value = None, ""
        self._draw(self.figure, self.result, self.table, **values)
        self._output.outputs = self._rendered()

    def snapshot(self) -> Image:
        """The current figure as a PNG image, for showing a panel's default result in static pages."""
        return Image(data=self._png, format="png")

    def _draw_png(self) -> bytes:
        """Render the figure. The first drawing is laid out by matplotlib's constrained layout; later
        ones reuse its axes positions (a layout pass costs as much as a drawing) unless the number
        of axes changed or some text would fall outside the figure, in which case it lays out anew."""
        fig = self.figure
        if self._positions is not None and len(self._positions) == len(fig.axes):
            fig.set_layout_engine(None)  # no engine at all: "none" would still cost savefig a layout pass
            for ax, position in zip(fig.axes, self._positions):
                ax.set_position(position)
            fig.canvas.draw()
            if not fig.canvas.texts_cut:
                return _png(fig)
        fig.set_layout_engine(_layout())
        for ax in fig.axes:  # start where a fresh figure starts: the layout found then depends on it
            ax.set_position(ax.get_subplotspec().get_position(fig))
            ax.set_in_layout(True)  # set_position took the axes out of the layout
        fig.canvas.draw()
        self._positions = [ax.get_position() for ax in fig.axes]
        return _png(fig)

    def _rendered(self) -> tuple[dict, ...]:
        """The figure (PNG) and table (HTML) as display outputs, set on the Output widget directly:
        no display messages, so a kernel without a front end (nbval, tests) sees nothing extra."""
        self._png = self._draw_png()
        outputs = [{"output_type": "display_data", "metadata": {},
                    "data": {"image/png": base64.b64encode(self._png).decode(), "text/plain": self.title}}]
        if self.table is not None:
            outputs.append({"output_type": "display_data", "metadata": {}, "data": {"text/html": book.table(self.table).data}})
        return tuple(outputs)


def _layout() -> ConstrainedLayoutEngine:
    """Matplotlib's constrained layout with a 16-pixel margin at the sides (its default is 4): a
    tick label that a later move puts at the right end of an axis still fits, and the panel need
    not be laid out anew."""
    return ConstrainedLayoutEngine(w_pad=0.16)


def _png(fig: Figure) -> bytes:
    """The figure as last drawn on its canvas, as PNG (W3C PNG specification, 3rd edition): 8-bit
    RGB, the figures being opaque, every row unfiltered (filter type 0) and deflated at zlib level
    1. Pillow's encoder tries the five row filters on every row, which doubles the time; over the
    twelve panels' flat charts its files are 1 % smaller in all (631 against 638 kB). Encoding
    the canvas instead of calling ``savefig`` saves a second drawing."""
    width, height = fig.canvas.get_width_height()
    rows = np.empty((height, 1 + 3 * width), np.uint8)
    rows[:, 0] = 0  # filter type: none
    rows[:, 1:] = np.asarray(fig.canvas.buffer_rgba())[..., :3].reshape(height, 3 * width)
    per_metre = round(fig.dpi / 0.0254)
    return b"\x89PNG\r\n\x1a\n" + b"".join(
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        for kind, data in ((b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)),
                           (b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)),
                           (b"IDAT", zlib.compress(rows.tobytes(), 1)), (b"IEND", b"")))


def _stops(low: float, high: float) -> tuple[tuple[str, float], ...]:
    """Slider stops a reader can name: 1, 1.5, 2, 3, 5 and 7 times the powers of ten in [low, high]."""
    values = (round(m * 10.0**e, 6) for e in range(-2, 6) for m in (1, 1.5, 2, 3, 5, 7))
    return tuple((f"{v:,g}", v) for v in values if low <= v <= high)


def _model_controls(default: str) -> dict[str, w.ValueWidget]:
    options = [(models.get(n).display_name, n) for n in models.names()] + [("custom size (slider)", CUSTOM),
                                                                            ("pasted config.json", CONFIG)]
    return {"model": w.Dropdown(options=options, value=default, description="model"),
            "size_b": w.SelectionSlider(options=_stops(0.1, 1000), value=7, description="custom size (B params)"),
            "config": w.Textarea(value="", placeholder="paste a Hugging Face config.json here",
                                 description="config.json")}


def _tokens_slider(billions: float, smallest: float = 1) -> w.SelectionSlider:
    """Training tokens in billions, from ``smallest`` to 30T."""
    return w.SelectionSlider(options=_stops(smallest, 30000), value=billions, description="training tokens (B)")


def _model(model: str, size_b: float, config: str) -> models.Model:
    """The preset, a dense shape of the slider's size, or the model of a pasted config.json."""
    if model == CUSTOM:
        return models.dense(size_b * 1e9)
    if model == CONFIG:
        return _pasted(config)
    return models.get(model)


@lru_cache(maxsize=8)
def _pasted(config: str) -> models.Model:
    """The model of a pasted config.json, read once per text however often the panel redraws."""
    if not config.strip():
        raise ValueError("paste a model's config.json into the config.json box (or pick a preset)")
    return models.from_config(config, name="pasted config")


#: GPUs whose memory sizes mark the training bar: 24, 48, 80, 141 and 192 GB.
REFERENCE_GPUS = ("RTX-4090-24GB", "L40S-48GB", "H100-SXM5-80GB", "H200-SXM-141GB", "MI300X-192GB")


#: The panel factories, filled by :func:`_registered` as the module defines them.
_PANELS: dict[str, Callable[..., Panel]] = {}


def _registered(factory: Callable[..., Panel]) -> Callable[..., Panel]:
    """Add a panel factory to :func:`panels` under its own name."""
    _PANELS[factory.__name__] = factory
    return factory


def _capacities() -> dict[str, float]:
    """Label -> usable bytes of the reference GPUs."""
    return {f"{g.name.rsplit('-', 1)[0]} {g.memory_gb_vendor:g} GB": g.reported_memory_bytes
            for g in map(gpus.get, REFERENCE_GPUS)}


@_registered
def training_memory(model: str = "llama-2-7b") -> Panel:
    """Training memory per GPU by component, and which GPUs hold it."""
    controls = _model_controls(model) | {
        "method": w.Dropdown(options=memory.METHODS, value="full", description="method"),
        "dtype": w.Dropdown(options=("bf16", "fp16", "fp32"), value="bf16", description="precision"),
        "optimizer": w.Dropdown(options=memory.OPTIMIZERS, value="adamw", description="optimizer"),
        "micro_batch_size": w.IntSlider(value=1, min=1, max=64, description="micro-batch"),
        "seq_len": w.SelectionSlider(options=SEQ_LENS, value=2048, description="sequence length"),
        "recompute": w.Dropdown(options=memory.RECOMPUTE, value="selective", description="recompute"),
        "flash_attention": w.Dropdown(options=(("yes", True), ("no", False)), value=True, description="FlashAttention"),
        "zero_stage": w.Dropdown(options=memory.ZERO_STAGES, value=0, description="ZeRO stage"),
        "n_gpus": w.SelectionSlider(options=GPU_COUNTS, value=1, description="data-parallel GPUs"),
        "cp": w.SelectionSlider(options=planner.CP_DEGREES, value=1, description="GPUs per sequence (CP)"),
    }

    def compute(model, size_b, config, n_gpus, **kw):
        return memory.training(_model(model, size_b, config), dp=n_gpus, **kw)

    def draw(fig, result, table, model, size_b, config, **kw):
        label = _model(model, size_b, config).display_name
        plots.memory_bars(plots.subplots(fig), {label: result}, capacities=_capacities(),
                          title=f"Training memory per GPU: {label}, {kw['method']}, {kw['dtype']}, {kw['optimizer']}, "
                          f"{kw['micro_batch_size']} x {kw['seq_len']:,} tokens" +
                                (f", each over {kw['cp']} GPUs" if kw["cp"] > 1 else ""))

    def table(result, **kw):
        return memory.fits_table(result)[["GPU", "memory (GB, vendor)", "needed (GB)", "fits", "headroom (GB)"]]

    return Panel("Training memory explorer", controls, compute, draw, table, figsize=(8, 2.8))


@_registered
def inference_memory(model: str = "llama-3-8b") -> Panel:
    """Serving memory per GPU, and the longest context each GPU holds."""
    controls = _model_controls(model) | {
        "weight_dtype": w.Dropdown(options=memory.WEIGHT_DTYPES, value="bf16",
                                   description="weights"),
        "kv_dtype": w.Dropdown(options=memory.KV_DTYPES, value="bf16", description="KV cache"),
        "batch_size": w.IntSlider(value=1, min=1, max=256, description="batch (sequences)"),
        "context_len": w.SelectionSlider(options=SEQ_LENS + (262144,), value=4096, description="context (tokens)"),
        "tp": w.Dropdown(options=(1, 2, 4, 8), value=1, description="tensor-parallel GPUs"),
    }

    def compute(model, size_b, config, **kw):
        return memory.inference(_model(model, size_b, config), **kw)

    def table(result, model, size_b, config, batch_size, context_len, **kw):
        return memory.longest_context_table(_model(model, size_b, config), batch_size=batch_size, **kw)

    def draw(fig, result, table, model, size_b, config, **kw):
        top, bottom = plots.subplots(fig, 2, 1, height_ratios=(1, 5))
        m = _model(model, size_b, config)
        label = m.display_name
        plots.memory_bars(top, {label: result}, title=f"Serving memory per GPU: {label}, {kw['batch_size']} x "
                          f"{kw['context_len']:,} tokens, weights {kw['weight_dtype']}, KV {kw['kv_dtype']}, tp {kw['tp']}")
        plots.context_bars(bottom, table, trained_context=m.context_len,
                           title=f"Longest context per sequence at batch {kw['batch_size']}")

    return Panel("Inference memory explorer", controls, compute, draw, table, figsize=(8, 6.2))


@_registered
def engine_start(model: str = "llama-3-70b", gpu: str = "L40S-48GB") -> Panel:
    """Whether a vLLM-style engine starts, and how much KV cache it gets (:mod:`engine`)."""
    controls = _model_controls(model) | {
        "gpu": w.Dropdown(options=gpus.names(), value=gpu, description="GPU"),
        "tp": w.Dropdown(options=(1, 2, 4, 8), value=2, description="tensor-parallel GPUs"),
        "weight_dtype": w.Dropdown(options=memory.WEIGHT_DTYPES, value="fp8", description="weights"),
        "max_model_len": w.SelectionSlider(options=SEQ_LENS + (262144,), value=32768, description="max_model_len"),
        "gpu_memory_utilization": w.FloatSlider(value=engine.GPU_MEMORY_UTILIZATION, min=0.5, max=0.99, step=0.01,
                                                description="gpu_memory_utilization"),
    }

    def compute(model, size_b, config, **kw):
        return engine.budget(_model(model, size_b, config), **kw)

    def table(result, **kw):
        return pd.DataFrame([{"weights (GB)": result.weights / 1e9, "activations (GB)": result.activations / 1e9,
                              "KV cache (GB)": result.kv_cache / 1e9, "KV tokens": result.kv_tokens,
                              "longest max_model_len": result.longest_max_model_len, "starts": result.starts}])

    def draw(fig, result, table, model, size_b, config, **kw):
        verdict = "starts" if result.starts else "does not start"
        plots.engine_budget(plots.subplots(fig), result, title=f"{_model(model, size_b, config).display_name} on {kw['tp']} x "
                            f"{result.gpu}: {verdict}\n" + "\n".join(textwrap.wrap(result.message, 80)))

    return Panel(f"Will it start? ({engine.ENGINE})", controls, compute, draw, table, figsize=(8, 3.2))


@_registered
def training_vs_inference(model: str = "llama-2-7b", gpu: str = "H100-SXM5-80GB") -> Panel:
    """Training and inference FLOPs of a model, and its workloads on the GPU's roofline."""
    controls = _model_controls(model) | {
        "tokens_b": _tokens_slider(1000),
        "gpu": w.Dropdown(options=gpus.names(), value=gpu, description="GPU"),
        "dtype": w.Dropdown(options=("bf16", "fp16", "fp8", "tf32", "fp32"), value="bf16", description="precision"),
        "seq_len": w.SelectionSlider(options=SEQ_LENS, value=2048, description="sequence length"),
    }

    def result(model, size_b, config, tokens_b, gpu, dtype, seq_len):
        m = _model(model, size_b, config)
        return {"training FLOP": compute.training_flops(m, tokens_b * 1e9, seq_len=seq_len),
                "inference FLOP per token": compute.flops_per_token(m, seq_len=seq_len, training=False),
                "ridge point (FLOP/byte)": roofline.ridge_point(gpu, dtype)}

    def table(result, model, size_b, config, gpu, dtype, seq_len, **kw):
        return roofline.table(_model(model, size_b, config), gpu, dtype, seq_len=seq_len)

    def draw(fig, result, table, model, size_b, config, tokens_b, gpu, dtype, seq_len):
        reference = "H100-SXM5-80GB" if gpu == "A100-SXM4-80GB" else "A100-SXM4-80GB"
        shown = [gpus.get(gpu)] + [g for g in (gpus.get(reference),) if g.supports(dtype)]
        label = _model(model, size_b, config).display_name
        plots.roofline(plots.subplots(fig), shown, dtype, dict(zip(table["workload"], table["FLOP/byte"])),
                       title=f"{label}: training on {tokens_b:,.0f}B tokens = {result['training FLOP']:.2e} FLOP; "
                             f"{result['inference FLOP per token']:.2e} FLOP per generated token")

    return Panel("Training vs inference: FLOPs and the roofline", controls, result, draw, table, figsize=(8, 4.5))


TRAIN_COUNTS = tuple(2**k for k in range(15))


def _catalog_bars(fig: Figure, bands: dict[str, Estimate], misfits: set[str], gpu: str, xlabel: str, title: str) -> None:
    """One band bar per GPU (name -> band), the chosen GPU highlighted, ``misfits`` hatched."""
    plots.band_bars(plots.subplots(fig), list(bands), list(bands.values()), highlight=gpus.get(gpu).name,
                    excluded=misfits, xlabel=xlabel, log=True, title=title)


@_registered
def training_time(model: str = "llama-2-7b", gpu: str = "H100-SXM5-80GB") -> Panel:
    """Days and GPU-hours to train a model on a GPU count, with the band, for every GPU."""
    controls = _model_controls(model) | {
        "tokens_b": _tokens_slider(1000),
        "gpu": w.Dropdown(options=gpus.names(), value=gpu, description="GPU"),
        "n_gpus": w.SelectionSlider(options=TRAIN_COUNTS, value=64, description="GPUs"),
        "dtype": w.Dropdown(options=("bf16", "fp16", "fp8"), value="bf16", description="precision"),
    }

    def result(model, size_b, config, tokens_b, gpu, n_gpus, dtype):
        m = _model(model, size_b, config)
        estimates = {e.gpu: e for e in compare.training_estimates(m, tokens_b * 1e9, n_gpus, dtype=dtype)}
        if gpus.get(gpu).name not in estimates:  # the GPU lacks the format, or no layout uses that many
            compute.training_time(m, tokens_b * 1e9, gpu, n_gpus, dtype=dtype)  # raises the reason
        return estimates

    def table(result, **kw):
        return compare.frame(tuple(result.values()))

    def draw(fig, result, table, model, size_b, config, tokens_b, gpu, n_gpus, dtype):
        label, chosen = _model(model, size_b, config).display_name, result[gpus.get(gpu).name]
        days = chosen.time.map(lambda t: t / DAY)
        _catalog_bars(fig, {name: e.time.map(lambda t: t / DAY) for name, e in result.items()},
                      {name for name, e in result.items() if not e.fits}, gpu, "days (expected, with low-high band)",
                      f"{label} on {tokens_b:,.0f}B tokens, {n_gpus} GPUs of each kind, {dtype}\n{chosen.gpu}: "
                      f"{days.low:,.1f}-{days.high:,.1f} days on {chosen.layout.describe().split(', ')[0]}"
                      f"{'' if chosen.fits else ' (does not fit)'}")

    return Panel("Training time", controls, result, draw, table, figsize=(8, 6))


@_registered
def serving(model: str = "llama-3-8b", gpu: str = "H100-SXM5-80GB") -> Panel:
    """Decoding speed, time per output token and time to first token, for every GPU."""
    controls = _model_controls(model) | {
        "gpu": w.Dropdown(options=gpus.names(), value=gpu, description="GPU"),
        "tp": w.Dropdown(options=(1, 2, 4, 8), value=1, description="tensor-parallel GPUs"),
        "weight_dtype": w.Dropdown(options=memory.WEIGHT_DTYPES, value="bf16", description="weights"),
        "batch_size": w.IntSlider(value=1, min=1, max=256, description="batch (sequences)"),
        "context_len": w.SelectionSlider(options=SEQ_LENS, value=2048, description="context (tokens)"),
        "split_kv": w.Checkbox(value=True, description="engine splits the KV cache (Flash-Decoding, multi-block)"),
    }

    def result(model, size_b, config, gpu, **kw):
        return compare.serving_estimates(_model(model, size_b, config), **kw)

    def table(result, **kw):
        return compare.frame(result)

    def draw(fig, result, table, model, size_b, config, gpu, tp, weight_dtype, batch_size, context_len, split_kv):
        label, chosen = _model(model, size_b, config).display_name, result[gpus.get(gpu).name]
        tps = chosen.tokens_per_s
        _catalog_bars(fig, {name: e.tokens_per_s for name, e in result.items()},
                      {name for name, e in result.items() if not e.fits}, gpu, "generated tokens/s, all sequences",
                      f"{label}, {weight_dtype} weights, {tp} GPU(s) each, batch {batch_size} x {context_len:,} tokens"
                      f"{'' if split_kv else ', KV cache read unsplit'}\n"
                      f"{gpus.get(gpu).name}: {tps.low:,.0f}-{tps.high:,.0f} tokens/s, {chosen.bound}-bound")

    return Panel("Serving speed", controls, result, draw, table, figsize=(8, 6))


@_registered
def data_parallel(model: str = "llama-2-7b", gpu: str = "H100-SXM5-80GB") -> Panel:
    """Step time (compute and exposed communication) and scaling efficiency against GPU count."""
    networks = tuple(n for n in comm.links() if n.startswith("ib-"))
    controls = _model_controls(model) | {
        "gpu": w.Dropdown(options=gpus.names(), value=gpu, description="GPU"),
        "tokens_per_gpu": w.SelectionSlider(options=tuple(2**k for k in range(10, 18)), value=16384,
                                            description="tokens per GPU per step"),
        "network": w.Dropdown(options=networks, value="ib-ndr", description="network between servers"),
        "nics_per_node": w.Dropdown(options=(1, 2, 4, 8), value=8, description="NICs per server"),
        "overlap": w.FloatSlider(value=1.0, min=0.0, max=1.0, step=0.05, description="overlap with backward"),
        "zero_stage": w.Dropdown(options=memory.ZERO_STAGES, value=0, description="ZeRO stage"),
    }

    def result(model, size_b, config, gpu, **kw):
        m = _model(model, size_b, config)
        return scaling.sweep(lambda n: scaling.transformer_step(m, gpu, n, **kw))

    def table(result, **kw):
        return result.to_frame()

    def draw(fig, result, table, model, size_b, config, gpu, network, nics_per_node, **kw):
        label = _model(model, size_b, config).display_name
        plots.scaling(fig, result, title=f"{label} on {gpus.get(gpu).name}, {kw['tokens_per_gpu']:,} tokens per GPU, "
                                         f"{nics_per_node} x {network} per server, overlap {kw['overlap']:.0%}, "
                                         f"ZeRO-{kw['zero_stage']}")

    return Panel("Data-parallel scaling", controls, result, draw, table, figsize=(9, 3.8))


PLAN_COUNTS = planner.COUNTS


@_registered
def parallelism(model: str = "llama-2-70b", gpu: str = "H100-SXM5-80GB") -> Panel:
    """The planner's best layout for a GPU count, its step term by term, and scaling efficiency as
    the count grows (at the model's fixed global batch)."""
    controls = _model_controls(model) | {
        "gpu": w.Dropdown(options=gpus.names(), value=gpu, description="GPU"),
        "n_gpus": w.SelectionSlider(options=PLAN_COUNTS, value=512, description="GPUs"),
        "seq_len": w.SelectionSlider(options=TRAIN_SEQ_LENS, value=4096, description="sequence (tokens)"),
    }

    def result(model, size_b, config, gpu, n_gpus, seq_len):
        return planner.plans(_model(model, size_b, config), gpu, PLAN_COUNTS, seq_len=seq_len)

    def table(result, n_gpus, **kw):
        chosen = next((p for p in result if p is not None and p.n_gpus == n_gpus), None)
        if chosen is None:
            raise ValueError(f"no layout can keep {n_gpus} GPUs busy at this model's global batch; choose fewer GPUs")
        s = chosen.step
        return pd.DataFrame([{"layout": chosen.layout.describe(), "global batch (tokens)": chosen.layout.tokens,
                              "micro-batches": chosen.layout.micro_batches, "memory per GPU (GB)": chosen.memory_per_gpu / 1e9,
                              "fits": chosen.fits, "step (s)": s.total, "MFU": s.mfu,
                              "scaling efficiency": chosen.scaling_efficiency, "what splitting costs most": chosen.binding}])

    def draw(fig, result, table, model, size_b, config, gpu, n_gpus, seq_len):
        label = _model(model, size_b, config).display_name
        row = table.iloc[0]
        short = steptime.short_step_note(row["step (s)"])
        plots.parallel_plans(fig, result, n_gpus,
                             title=f"{label} on {gpus.get(gpu).name}, {seq_len:,}-token sequences\n{n_gpus} GPUs: "
                                   f"{row['layout']}, {row['scaling efficiency']:.0%} scaling efficiency" + (f"\n{short}" if short else ""))

    return Panel("3D parallelism", controls, result, draw, table, figsize=(9, 4.2))


@_registered
def training_cost(model: str = "llama-2-7b", gpu: str = "H100-SXM5-80GB") -> Panel:
    """Dollars for a training run under each pricing model, with bands."""
    controls = _model_controls(model) | {
        "tokens_b": _tokens_slider(1000),
        "gpu": w.Dropdown(options=gpus.names(), value=gpu, description="GPU"),
        "n_gpus": w.SelectionSlider(options=TRAIN_COUNTS, value=64, description="GPUs"),
        "dtype": w.Dropdown(options=("bf16", "fp16", "fp8", "tf32"), value="bf16", description="precision"),
        "price": w.BoundedFloatText(value=0.0, min=0.0, max=100.0, step=0.01,
                                    description="your $/GPU-hour (0: median of the data)"),
    }

    def result(model, size_b, config, tokens_b, gpu, n_gpus, dtype, price):
        m, rate = _model(model, size_b, config), price or None
        out = {}
        for pricing in cost.PRICING:
            try:
                out[pricing] = cost.training_cost(m, tokens_b * 1e9, gpu, n_gpus, dtype=dtype, pricing=pricing,
                                                  price_per_gpu_hour=rate)
            except ValueError as error:
                if "price" not in str(error):
                    raise
        if not out:
            raise ValueError(f"no dated price for {gpus.get(gpu).name}: type your own $/GPU-hour")
        return out

    def table(result, **kw):
        return pd.DataFrame([{"pricing": p, "low (USD)": e.low, "expected (USD)": e.expected, "high (USD)": e.high}
                             for p, e in result.items()])

    def draw(fig, result, table, model, size_b, config, tokens_b, gpu, n_gpus, dtype, price):
        label = _model(model, size_b, config).display_name
        plots.band_bars(plots.subplots(fig), list(result), list(result.values()), scale=1e3,
                        xlabel="thousand US dollars (expected, with low-high band)",
                        title=f"{label} on {tokens_b:,.0f}B tokens, {n_gpus} x {gpus.get(gpu).name}, {dtype}")

    return Panel("Training cost", controls, result, draw, table, figsize=(8, 3))


@_registered
def rent_or_buy(gpu: str = "H100-SXM5-80GB") -> Panel:
    """Cumulative cost of renting on demand against owning, and the break-even month; owning counts
    the network, storage, colocation and staff unless the reader already has them."""
    controls = {
        "gpu": w.Dropdown(options=[n for n in gpus.names() if cost.price(n, "purchase")], value=gpu, description="GPU"),
        "n_gpus": w.SelectionSlider(options=(1, 2, 4, 8, 16, 32, 64), value=8, description="GPUs"),
        "years": w.FloatSlider(value=3.0, min=1.0, max=6.0, step=0.5, description="years"),
        "utilization": w.FloatSlider(value=0.7, min=0.05, max=1.0, step=0.05, description="utilization"),
        "price": w.BoundedFloatText(value=0.0, min=0.0, max=100.0, step=0.01,
                                    description="rental $/GPU-hour (0: median of the data)"),
        "overheads": w.Checkbox(value=True, description="count network, storage, colocation and staff"),
    }

    def result(gpu, n_gpus, years, utilization, price, overheads):
        return cost.rent_or_buy(gpu, n_gpus, years=years, utilization=utilization, price_per_gpu_hour=price or None,
                                **({} if overheads else cost.SERVERS_AND_ENERGY))

    def table(result, **kw):
        return result.to_frame()

    def draw(fig, result, table, gpu, n_gpus, years, utilization, price, overheads):
        plots.rent_vs_buy(plots.subplots(fig), result, title=f"{n_gpus} x {gpus.get(gpu).name}, "
                                                             f"{utilization:.0%} utilization",
                          own_label="buy (all costs)" if overheads else "buy (servers + energy)")

    return Panel("Rent or buy", controls, result, draw, table, figsize=(8, 3.4))


@_registered
def selector(model: str = "llama-2-70b", task: str = "pretrain") -> Panel:
    """Every GPU's best option for a task, ranked, with the constraint that binds."""
    controls = _model_controls(model) | {
        "task": w.Dropdown(options=select.TASKS, value=task, description="task"),
        "tokens_b": _tokens_slider(2000, smallest=0.1),
        "deadline_days": w.IntSlider(value=select.DEFAULT_DEADLINE_DAYS, min=1, max=365, description="deadline (days)"),
        "budget_usd": w.BoundedFloatText(value=0.0, min=0.0, max=1e10, description="budget, $ (0: none)"),
        "seq_len": w.SelectionSlider(options=TRAIN_SEQ_LENS, value=planner.DEFAULT_SEQ_LEN,
                                     description="training: sequence (tokens)"),
        "requests_per_s": w.BoundedFloatText(value=2.0, min=0.0, max=1e5, step=0.5,
                                             description="serving: requests/s (0: a fixed batch)"),
        "prompt_len": w.SelectionSlider(options=PROMPT_LENS, value=1024, description="prompt tokens"),
        "output_len": w.SelectionSlider(options=OUTPUT_LENS, value=256, description="output tokens"),
        "ttft_ms": w.BoundedIntText(value=0, min=0, max=600_000, description="first-token target, ms (0: none)"),
        "tpot_ms": w.BoundedIntText(value=0, min=0, max=10_000, description="per-token target, ms (0: none)"),
        "hides_host": w.Checkbox(value=False, description="serving: engine hides its CPU work (vLLM 0.6+)"),
        "batch_size": w.IntSlider(value=1, min=1, max=256, description="fixed batch"),
        "context_len": w.SelectionSlider(options=SEQ_LENS, value=4096, description="fixed-batch context"),
    }

    def result(model, size_b, config, task, tokens_b, deadline_days, budget_usd, seq_len, requests_per_s, prompt_len,
               output_len, ttft_ms, tpot_ms, hides_host, batch_size, context_len):
        return select.recommend(_model(model, size_b, config), task=task, tokens=tokens_b * 1e9, deadline_days=deadline_days,
                                budget_usd=budget_usd or None, seq_len=seq_len, requests_per_s=requests_per_s or None,
                                prompt_len=prompt_len, output_len=output_len, ttft_s=ttft_ms / 1000 or None,
                                tpot_s=tpot_ms / 1000 or None, host_seconds=0.0 if hides_host else None,
                                batch_size=batch_size, context_len=context_len)

    def table(result, **kw):
        return result[["gpu", "n_gpus", "settings", "binding", "reason"]]

    def draw(fig, result, table, model, size_b, config, task, **kw):
        plots.recommendations(plots.subplots(fig), result, title=f"{_model(model, size_b, config).display_name}: {task}")

    return Panel("GPU selector", controls, result, draw, table, figsize=(8, 6))


@_registered
def wait_or_start(model: str = "llama-2-70b") -> Panel:
    """Finish day and cost of starting a run now against waiting for the next generation."""
    controls = _model_controls(model) | {
        "tokens_b": _tokens_slider(2000),
        "n_gpus": w.SelectionSlider(options=TRAIN_COUNTS, value=512, description="GPUs"),
        "now": w.Dropdown(options=[n for n in gpus.names() if cost.price(n, "cloud_hour")], value="H100-SXM5-80GB",
                          description="available now"),
        "later": w.Dropdown(options=gpus.names(), value="B200-HGX-192GB", description="next generation"),
        "later_price": w.BoundedFloatText(value=0.0, min=0.0, max=100.0, step=0.1,
                                          description="its $/GPU-hour (0: median of the data)"),
        "wait_months": w.FloatSlider(value=6.0, min=0.0, max=24.0, step=0.5, description="wait (months)"),
    }

    def result(model, size_b, config, tokens_b, n_gpus, now, later, later_price, wait_months):
        return trends.wait_or_start(_model(model, size_b, config), tokens_b * 1e9, n_gpus, now=now, later=later,
                                    wait_months=wait_months, later_price=later_price or None)

    def table(result, **kw):
        return result.to_frame()

    def draw(fig, result, table, model, size_b, config, tokens_b, n_gpus, now, later, later_price, wait_months):
        plots.wait_curve(plots.subplots(fig), result,
                         title=f"{_model(model, size_b, config).display_name}, {tokens_b:,.0f}B tokens, {n_gpus} GPUs: "
                               f"{gpus.get(now).name} now or {gpus.get(later).name} later")

    return Panel("Wait or start now", controls, result, draw, table, figsize=(8, 3.4))


def panels() -> dict[str, Callable[..., Panel]]:
    """Every panel factory by name, in the order the chapters use them (the one list of panels:
    the tests and benchmarks iterate it)."""
    return dict(_PANELS)
