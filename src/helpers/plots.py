"""Matplotlib figures of the package's results. Each function draws on the ``ax`` it is given
and changes nothing global; :func:`use_book_style` is applied only when a notebook asks."""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import FixedFormatter, FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

from .gpus import GPU
from .cost import RentOrBuy
from .memory import COMPONENTS, MemoryBreakdown
from .scaling import Sweep
from .trends import Generation, WaitOrStart
from .units import DAY, GB, MONTH, TB, TFLOPS

#: The gid of value labels, which :func:`empty` keeps for :func:`value_labels` to reuse.
LABEL = "value label"
COLORS = {"weights": "#4C72B0", "gradients": "#DD8452", "optimizer": "#C44E52",
          "activations": "#55A868", "kv_cache": "#8172B3", "overhead": "#937860"}
LABELS = {"weights": "weights", "gradients": "gradients", "optimizer": "optimizer states",
          "activations": "activations", "kv_cache": "KV cache", "overhead": "runtime overhead"}

BOOK_STYLE = {"figure.dpi": 100, "savefig.dpi": 100, "font.size": 10, "axes.spines.top": False,
              "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3, "figure.figsize": (8, 3.5),
              "svg.hashsalt": "gpu-book", "axes.titlelocation": "left",
              "axes.titley": 1.0}  # titles sit above the axes (none has labels on top): no search for a place each draw


def use_book_style() -> None:
    """Apply the book's matplotlib style (fonts, grid, fixed dpi)."""
    mpl.rcParams.update(BOOK_STYLE)


def _no_minor_ticks(ax: Axes) -> None:
    """Log axes without minor ticks: the major decades and the grid read as well, and each of the
    dozens of minor ticks costs a live panel several milliseconds per redraw."""
    ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_minor_locator(NullLocator())


def _ticks(axis: Axis, **style: Any) -> None:
    """``axis.set_tick_params(**style)`` unless its ticks have that style already: setting it visits
    every tick, which costs a live panel's 33-GPU chart about 3 ms a move."""
    if any(axis.get_tick_params().get(k) != v for k, v in style.items()):
        axis.set_tick_params(**style)


class _Renderer(RendererAgg):
    """Agg's renderer, except that it keeps the bitmap of each string it has rasterised (a live
    panel draws the same names and tick labels again and again, and rasterising is half of what a
    text costs) and notes in ``cut`` whether any text it drew since ``clear`` left the canvas."""

    def __init__(self, width: float, height: float, dpi: float) -> None:
        super().__init__(width, height, dpi)
        self._bitmaps: dict = {}
        self.layouts: dict = {}
        self.cut = False
        self.recording: list | None = None  # what an axis draws, while it draws (:func:`_replayed`)
        self.replays: dict = {}
        self._markers = self.__dict__.pop("draw_markers")  # Agg's own (a C++ method), recorded by ours

    def draw_path(self, gc, path, transform, rgbFace=None):
        """As Agg's, noted while an axis records its drawing (:func:`_replayed`)."""
        super().draw_path(gc, path, transform, rgbFace)
        if self.recording is not None:
            self.recording.append((RendererAgg.draw_path, (self, self._kept(gc), path, transform, rgbFace)))

    def draw_markers(self, gc, marker_path, marker_trans, path, trans, rgbFace=None):
        """As Agg's, noted while an axis records its drawing (:func:`_replayed`)."""
        self._markers(gc, marker_path, marker_trans, path, trans, rgbFace)
        if self.recording is not None:
            self.recording.append((self._markers, (self._kept(gc), marker_path, marker_trans, path, trans, rgbFace)))

    def _kept(self, gc):
        """A copy of ``gc``, for drawing the same way later."""
        kept = self.new_gc()
        kept.copy_properties(gc)
        return kept

    def clear(self) -> None:
        super().clear()
        self.cut = False

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        """As ``RendererAgg.draw_text`` and ``draw_mathtext``: the same bitmap at the same place."""
        if ismath:
            ox, oy, _, _, descent, image = self.mathtext_parser.parse(s, self.dpi, prop,
                                                                      antialiased=gc.get_antialiased())
            image = np.asarray(image)
            return self._place(image, _ink(image), x + ox, y - oy, descent, angle, gc)
        flags = get_hinting_flag()
        key = (s, hash(prop), gc.get_antialiased(), flags)
        if key not in self._bitmaps:
            font = self._prepare_font(prop)
            font.set_text(s, 0, flags=flags)
            self._keep(key, font)
        image, ink, xo, yo, descent = self._bitmaps[key]
        self._place(image, ink, x + xo, y + yo, descent, angle, gc)

    def get_text_width_height_descent(self, s, prop, ismath):
        """As Agg's; a plain string is also rasterised (antialiased, as texts are by default) for
        :meth:`draw_text`, which then need not set its glyphs again: that is most of what each costs."""
        if ismath:
            return super().get_text_width_height_descent(s, prop, ismath)
        flags = get_hinting_flag()
        font = self._prepare_font(prop)
        font.set_text(s, 0, flags=flags)
        (w, h), d = font.get_width_height(), font.get_descent()
        key = (s, hash(prop), True, flags)
        if key not in self._bitmaps:
            self._keep(key, font)
        return w / 64, h / 64, d / 64

    def _keep(self, key: tuple, font) -> None:
        """Rasterise the string set on ``font`` (antialiased as ``key`` says) and keep its bitmap,
        ink box and offsets under ``key``."""
        if len(self._bitmaps) > 4096:
            self._bitmaps.clear()
        font.draw_glyphs_to_bitmap(antialiased=key[2])
        xo, yo = font.get_bitmap_offset()
        image = np.asarray(font.get_image())
        self._bitmaps[key] = image, _ink(image), xo / 64, yo / 64, font.get_descent() / 64

    def _place(self, image: np.ndarray, ink: np.ndarray | None, x: float, y: float, descent: float, angle: float,
               gc) -> None:
        """Draw ``image`` as Agg places a text's bitmap (its lower left corner at x, y in pixels from
        the top, rotated by ``angle`` degrees about it), and note whether its ``ink`` (:func:`_ink`)
        leaves the canvas."""
        rad = np.radians(angle)
        x, y = round(x + descent * np.sin(rad)), round(y + descent * np.cos(rad))
        self._renderer.draw_text_image(image, x, y + 1, angle, gc)
        if self.recording is not None:
            self.recording.append((self._renderer.draw_text_image, (image, x, y + 1, angle, self._kept(gc))))
        if ink is not None:
            turn = np.array([[np.cos(rad), np.sin(rad)], [-np.sin(rad), np.cos(rad)]])  # by -angle, y pointing down
            xs, ys = turn @ ink + [[x], [y + 1]]
            self.cut |= bool(xs.min() < -1 or ys.min() < -1 or xs.max() > self.width + 1 or ys.max() > self.height + 1)


@contextmanager
def _layouts_kept(renderer: _Renderer) -> Iterator[None]:
    """While it lasts, ``Text._get_layout`` on ``renderer`` answers from ``renderer.layouts``. A
    text's layout (its extent and line offsets about its anchor) depends on its string, font,
    line spacing, angle, alignment and the dpi, not on where it is drawn (matplotlib 3.10,
    ``Text._get_layout``); wrapped texts, whose lines depend on their place, are laid out anew."""
    plain = Text._get_layout

    def kept(text: Text, on) -> tuple:
        if on is not renderer or text.get_wrap():
            return plain(text, on)
        key = (text.get_text(), hash(text.get_fontproperties()), text.get_usetex(), text.get_parse_math(),
               text._linespacing, text.get_rotation(), text.get_rotation_mode(), text._get_multialignment(),
               text.get_horizontalalignment(), text.get_verticalalignment(), text.get_figure(root=True).dpi)
        if key not in renderer.layouts:
            if len(renderer.layouts) > 4096:
                renderer.layouts.clear()
            renderer.layouts[key] = plain(text, on)
        return renderer.layouts[key]

    Text._get_layout = kept
    try:
        yield
    finally:
        Text._get_layout = plain


def _replayed(axis, renderer: _Renderer):
    """How an axis draws on ``renderer``: as matplotlib does, noting what it draws (tick marks, grid
    lines, tick labels, its label), or, when nothing that decides its drawing changed since (the
    axes' place, the scale, limits, ticks and their labels, colours and fonts, the tick settings,
    the label), by drawing the same again. Matplotlib's tick machinery costs a live panel more than
    anything else it draws, and most moves leave most axes as they were."""
    locs = axis.get_majorticklocs()
    formatter = axis.get_major_formatter()
    key = (axis.axes.get_position().bounds, axis.get_scale(), tuple(axis.get_view_interval()), tuple(locs),
           tuple(formatter.format_ticks(locs)), formatter.get_offset(), tuple(axis.get_minorticklocs()),
           axis.get_visible(), axis.label.get_text(), axis.label.get_color(), hash(axis.label.get_fontproperties()),
           repr(sorted(axis._major_tick_kw.items())), repr(sorted(axis._minor_tick_kw.items())),
           tuple((t.label1.get_color(), hash(t.label1.get_fontproperties()), t.label1.get_rotation(),
                  t.label1.get_visible()) for t in axis.majorTicks))
    kept = renderer.replays.get(id(axis))
    if kept is not None and kept[0] == key:
        def replay(on) -> None:
            if on is not renderer:
                return type(axis).draw(axis, on)
            for draw, args in kept[1]:
                draw(*args)
            axis.stale = False
        return replay

    def record(on) -> None:
        if on is not renderer:
            return type(axis).draw(axis, on)
        renderer.recording = []
        try:
            type(axis).draw(axis, on)
            renderer.replays[id(axis)] = key, renderer.recording
        finally:
            renderer.recording = None
    return record


def _ink(image: np.ndarray) -> np.ndarray | None:
    """Corners (x row, y row; y from the bitmap's bottom edge, pointing down) of the box around a
    text bitmap's inked pixels, None for a blank one."""
    rows, cols = np.flatnonzero(image.any(axis=1)), np.flatnonzero(image.any(axis=0))
    if not rows.size:
        return None
    top, bottom = rows[0] - image.shape[0], rows[-1] + 1 - image.shape[0]
    return np.array([[cols[0], cols[0], cols[-1] + 1, cols[-1] + 1], [top, bottom, top, bottom]], float)


class Canvas(FigureCanvasAgg):
    """The Agg canvas of a live panel: its renderer (:class:`_Renderer`) keeps text bitmaps and text
    layouts from one redraw to the next and tells whether the last drawing cut a text
    (``texts_cut``)."""

    def get_renderer(self) -> _Renderer:
        key = (*self.figure.bbox.size, self.figure.dpi)
        if self._lastKey != key:
            self.renderer, self._lastKey = _Renderer(*key), key
        return self.renderer

    def draw(self) -> None:
        """Agg's drawing, each text laid out once per string, font, angle and alignment
        (:func:`_layouts_kept`): matplotlib lays out every tick label up to three times a drawing;
        each axis drawn as it was last time where nothing about it changed (:func:`_replayed`)."""
        renderer = self.get_renderer()
        axes = [axis for ax in self.figure.axes for axis in (ax.xaxis, ax.yaxis)]
        for axis in axes:
            axis.draw = _replayed(axis, renderer)
        try:
            with _layouts_kept(renderer):
                super().draw()
        finally:
            for axis in axes:
                del axis.draw

    @property
    def texts_cut(self) -> bool:
        return self.get_renderer().cut


def subplots(fig: Figure, nrows: int = 1, ncols: int = 1, **grid) -> "Axes | np.ndarray":
    """``fig.subplots(nrows, ncols, **grid)``, except that when ``fig`` already holds this grid its
    axes are emptied (:func:`empty`) and returned: a live panel then redraws in place, keeping the
    axes, their position and their ticks, whose creation costs more than the drawing itself. The
    grid is remembered in the figure's label."""
    key = f"grid {nrows} x {ncols} {sorted(grid.items())}"
    if fig.get_label() == key and len(fig.axes) == nrows * ncols:
        for ax in fig.axes:
            empty(ax)
        for legend in list(fig.legends):
            legend.remove()
        axes = np.empty(nrows * ncols, dtype=object)
        axes[:] = fig.axes
        return axes[0] if nrows * ncols == 1 else axes.reshape(nrows, ncols).squeeze()
    fig.clear()
    fig.set_label(key)
    return fig.subplots(nrows, ncols, **grid)


def empty(ax: Axes) -> None:
    """Remove what was drawn on ``ax`` (artists, containers, legend) and reset what a drawing sets
    (scales, limits, inversion, colour cycle, titles, axis labels) to a fresh axes' defaults; keep
    the axes, its ticks and the tick styles the drawing sets again anyway. Value labels
    (:func:`value_labels`) are hidden, for the next drawing to reuse."""
    for artist in (*ax.artists, *ax.collections, *ax.images, *ax.lines, *ax.patches, *ax.tables, *ax.texts):
        if artist.get_gid() == LABEL:
            artist.set_visible(False)
        else:
            artist.remove()
    ax.containers.clear()
    if ax.legend_ is not None:
        ax.legend_.remove()
    ax.set(xscale="linear", yscale="linear", xlabel="", ylabel="")
    for loc in ("left", "center", "right"):
        ax.set_title("", loc=loc)
    ax.set_prop_cycle(None)  # lines drawn again take the same colours
    ax.xaxis.set_inverted(False)
    ax.yaxis.set_inverted(False)
    ax.relim()
    ax.set_autoscale_on(True)


def curves(ax: Axes, series: dict[str, tuple[Sequence[float], Sequence[float]]], *, xlabel: str, ylabel: str,
           title: str = "", xscale: str = "log", yscale: str = "linear", xticks: Sequence[float] | None = None,
           lines: dict[str, float] | None = None, ylim: tuple[float, float] | None = None, markersize: float = 5,
           legend: bool = True) -> Axes:
    """One line with markers per labelled series of (x values, y values); dashed horizontal
    ``lines`` (label -> y), each labelled at the right; ``xticks`` labelled as plain numbers, as a
    log axis of counts or sizes reads best."""
    for label, (xs, ys) in series.items():
        ax.plot(list(xs), list(ys), marker="o" if markersize else None, markersize=markersize, label=label)
    for text, y in (lines or {}).items():
        ax.axhline(y, color="0.3", linestyle="--", linewidth=1)
        ax.annotate(text, (1.0, y), xycoords=("axes fraction", "data"), ha="right", va="bottom", fontsize=8)
    ax.set(xscale=xscale, yscale=yscale, xlabel=xlabel, ylabel=ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if xticks is not None:
        ax.set_xticks(list(xticks), [f"{x:,g}" for x in xticks])
        ax.xaxis.set_minor_locator(NullLocator())
    if legend:
        ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    return ax


def loss_scale(ax: Axes, scales: Sequence[float], skipped: Sequence[int], *, title: str = "") -> Axes:
    """A loss scale step by step (``scales``), with the ``skipped`` steps (inf/NaN gradients) marked."""
    ax.step(range(len(scales)), list(scales), where="post")
    ax.plot(list(skipped), [scales[s] for s in skipped], linestyle="none", marker="o", color="#C44E52", zorder=3,
            label="inf/NaN gradients: step skipped, scale halved")
    powers = range(int(np.floor(np.log2(min(scales)))), int(np.ceil(np.log2(max(scales)))) + 1)
    ax.set(yscale="log", xlabel="training step", ylabel="loss scale")
    ax.set_yticks([2.0**k for k in powers], [f"$2^{{{k}}}$" for k in powers])
    ax.yaxis.set_minor_locator(NullLocator())
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    return ax


def link_bars(ax: Axes, links: list, *, title: str = "") -> Axes:
    """Each interconnect's one-way bandwidth as specified, and inside it what NCCL's all-reduce
    achieves (``achieved_fraction``), on a log axis."""
    names = [ln.name for ln in links]
    ax.barh(names, [ln.bandwidth / GB for ln in links], color="#9DB4E0", label="per direction, as specified")
    ax.barh(names, [ln.bandwidth * ln.achieved_fraction / GB for ln in links], color="#1F3A93", height=0.5,
            label="achieved by NCCL all-reduce (bus bandwidth)")
    ax.set(xscale="log", xlabel="GB/s per GPU (NVLink, PCIe) or per NIC (InfiniBand), one direction")
    ax.invert_yaxis()
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title, fontsize=10)
    return ax


def catalog_rates(left: Axes, right: Axes, catalog: list[GPU]) -> None:
    """Each GPU's dense BF16 and FP8 tensor rates (``left``) and its memory bandwidth, labelled
    with its memory (``right``, sharing the GPU axis)."""
    names, y = [g.name for g in catalog], range(len(catalog))
    for offset, dtype in ((-0.2, "bf16"), (0.2, "fp8")):
        left.barh([i + offset for i in y], [g.peak_flops(dtype) / TFLOPS if g.supports(dtype) else 0 for g in catalog],
                  height=0.4, label=f"{dtype.upper()} dense")
    left.set(yticks=list(y), yticklabels=names, xlabel="TFLOP/s", title="Tensor throughput")
    left.legend(fontsize=8)
    right.barh(list(y), [g.memory_bandwidth / 1e12 for g in catalog], color="#55A868")
    for i, g in enumerate(catalog):
        right.annotate(f" {g.memory_gb_vendor:g} GB", (g.memory_bandwidth / 1e12, i), va="center", fontsize=7)
    right.set(xlabel="memory bandwidth (TB/s); label: memory", title="Memory",
              xlim=(0, max(g.memory_bandwidth for g in catalog) / 1e12 * 1.25))
    left.invert_yaxis()
    _ticks(left.yaxis, labelsize=8)


def catalog_per_watt_and_dollar(watt: Axes, dollar: Axes, catalog: list[GPU], hourly: list[float | None]) -> None:
    """Dense BF16 TFLOP/s per watt of TDP (``watt``) and per on-demand dollar-hour (``dollar``,
    labelled with the price; ``hourly`` is None where no dated price exists), GPU by GPU."""
    names = [g.name for g in catalog]
    watt.barh(names, [g.peak_flops("bf16") / TFLOPS / g.tdp_watts for g in catalog], color="#8172B3")
    watt.set(xlabel="dense BF16 TFLOP/s per watt of TDP", title="Per watt")
    per_dollar = [g.peak_flops("bf16") / TFLOPS / p if p else 0 for g, p in zip(catalog, hourly)]
    dollar.barh(names, per_dollar, color="#DD8452")
    for i, p in enumerate(hourly):
        dollar.annotate(f" ${p:.2f}/h" if p else " no dated price", (per_dollar[i], i), va="center", fontsize=7)
    dollar.set(xlabel="dense BF16 TFLOP/s per on-demand $/GPU-hour", title="Per rental dollar",
               xlim=(0, max(per_dollar) * 1.35))
    watt.invert_yaxis()
    _ticks(watt.yaxis, labelsize=8)


def memory_bars(ax: Axes, breakdowns: dict[str, MemoryBreakdown], *, capacities: dict[str, float] | None = None,
                title: str = "") -> Axes:
    """Horizontal stacked bars, one per labelled breakdown, in decimal GB; dashed lines mark
    ``capacities`` (label -> bytes), e.g. GPU memory sizes."""
    labels = list(breakdowns)
    left = np.zeros(len(labels))
    for component in COMPONENTS:
        widths = np.array([breakdowns[k].as_dict()[component] / GB for k in labels])
        if widths.any():
            bars(ax, labels, widths, base=left, colors=COLORS[component], label=LABELS[component])
            left = left + widths
    xmax = max([*left, *(s / GB for s in (capacities or {}).values())]) * 1.18
    labelled = -xmax
    for text, size in sorted((capacities or {}).items(), key=lambda item: item[1]):
        ax.axvline(size / GB, color="0.3", linestyle="--", linewidth=1)
        if size / GB - labelled > 0.03 * xmax:  # label only lines far enough apart to be read
            ax.annotate(text, (size / GB, 1.0), xycoords=("data", "axes fraction"), rotation=90, ha="right",
                        va="top", fontsize=8, color="0.2",
                        bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.75})
            labelled = size / GB
    for y, total in enumerate(left):
        ax.text(total, y, f" {total:,.1f} GB", va="center", fontsize=9)
    ax.set_xlabel("memory per GPU (GB, decimal)")
    ax.set_xlim(0, xmax)
    below = mpl.transforms.offset_copy(ax.transAxes, ax.figure, y=-34, units="points")  # under the axis label
    ax.legend(loc="upper left", bbox_to_anchor=(0, 0), bbox_transform=below, fontsize=8, ncols=6, frameon=False)
    ax.set_title(title, fontsize=10)
    return ax


def context_bars(ax: Axes, table: pd.DataFrame, *, trained_context: int | None = None, title: str = "") -> Axes:
    """Longest context per GPU (from ``memory.longest_context_table``); GPUs that cannot even
    hold the weights are named in red; a dotted line marks the context the model was trained for."""
    tokens = table["longest context (tokens)"]
    bars(ax, list(table["GPU"]), tokens, colors="#4C72B0")
    ax.set_xlabel("longest context that fits (thousand tokens per sequence)")
    ax.xaxis.set_major_formatter(lambda v, _: f"{v / 1000:,.0f}k")
    value_labels(ax, tokens, range(len(tokens)), [" weights do not fit" if t == 0 else f" {t:,}" for t in tokens],
                 ["#C44E52" if t == 0 else "0.2" for t in tokens], va="center", fontsize=7)
    if trained_context:
        ax.axvline(trained_context, color="0.3", linestyle=":", linewidth=1.2,
                   label=f"context the model was trained for ({trained_context:,})")
        ax.legend(loc="upper right", fontsize=8)
    ax.set_xlim(0, max(tokens.max(), trained_context or 0, 1) * 1.2)
    _ticks(ax.yaxis, labelsize=8)
    for label, t in zip(ax.get_yticklabels(), tokens):
        label.set_color("#C44E52" if t == 0 else "black")
    ax.set_title(title, fontsize=10)
    return ax


def roofline(ax: Axes, gpus: list[GPU], dtype: str, points: dict[str, float] | None = None, *,
             title: str = "") -> Axes:
    """Log-log roofline of each GPU for ``dtype`` (attainable TFLOP/s against FLOP/byte), ridge
    points marked; ``points`` (label -> intensity) are placed on the first GPU's roof."""
    lo, hi = 0.5, 2e4
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    for i, g in enumerate(gpus):
        peak, bw = g.peak_flops(dtype), g.memory_bandwidth
        line, = ax.plot(xs, [min(peak, x * bw) / TFLOPS for x in xs], linewidth=2.2 if i == 0 else 1.2,
                        label=f"{g.name} ({dtype}: {peak / TFLOPS:,.0f} TFLOP/s, {bw / 1e12:.2f} TB/s)")
        ax.plot([peak / bw], [peak / TFLOPS], marker="|", markersize=12, color=line.get_color())
    if points and gpus:
        g = gpus[0]
        peak, bw = g.peak_flops(dtype), g.memory_bandwidth
        for j, (label, x) in enumerate(points.items()):
            y = min(peak, x * bw) / TFLOPS
            bound = "memory" if x * bw < peak else "compute"
            ax.plot([x], [y], marker="o", linestyle="none", markersize=40 ** 0.5, color=f"C{(j + len(gpus)) % 10}",
                    markeredgecolor="black", zorder=3, label=f"{label}: {x:,.0f} FLOP/B, {bound}-bound")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), xlabel="arithmetic intensity (FLOP per byte of memory traffic)",
           ylabel="attainable TFLOP/s (dense)")
    _no_minor_ticks(ax)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title, fontsize=10)
    return ax


def bars(ax: Axes, labels: Sequence[str], lengths: Sequence[float], *, base: Sequence[float] | float = 0.0,
         colors: Sequence | str = "C0", hatched: Sequence[bool] | None = None, label: str | None = None,
         vertical: bool = False, size: float = 0.8) -> np.ndarray:
    """Bars from ``base`` to ``base + lengths``, one per label (from the top, or from the left when
    ``vertical``), drawn as one collection (hatched bars in a second) instead of a patch per bar:
    what ``ax.barh`` or ``ax.bar`` draws, for less drawing time. A bar of NaN length is not drawn;
    ``label`` names the bars in a legend. Returns the bars' positions on the category axis."""
    at = np.arange(len(labels), dtype=float)
    lo = np.broadcast_to(np.asarray(base, dtype=float), at.shape)
    hi = lo + np.asarray(lengths, dtype=float)
    corners = [(lo, at - size / 2), (lo, at + size / 2), (hi, at + size / 2), (hi, at - size / 2)]
    boxes = np.stack([np.column_stack((y, x) if vertical else (x, y)) for x, y in corners], axis=1)
    rgba = np.broadcast_to(mpl.colors.to_rgba(colors), (len(at), 4)) if isinstance(colors, str) \
        else mpl.colors.to_rgba_array(colors)
    hatched = np.zeros(len(at), bool) if hatched is None else np.asarray(hatched, bool)
    drawn = np.isfinite(hi)
    for mask, hatch in ((drawn & ~hatched, None), (drawn & hatched, "///")):
        if mask.any():
            boxed = PolyCollection(boxes[mask], facecolors=rgba[mask], hatch=hatch, linewidths=0,
                                   edgecolors="0.5" if hatch else "face", label=label)
            (boxed.sticky_edges.y if vertical else boxed.sticky_edges.x).extend(np.unique(lo[mask]))
            ax.add_collection(boxed)
            label = None
    categories, values = (ax.xaxis, ax.yaxis) if vertical else (ax.yaxis, ax.xaxis)
    shown = categories.get_major_formatter()
    if not (isinstance(shown, FixedFormatter) and list(shown.seq) == list(labels)):  # stacked bars: set once
        categories.set_major_locator(FixedLocator(at))
        categories.set_major_formatter(FixedFormatter(list(labels)))
    if vertical:
        ax.set_xlim(-0.5, len(at) - 0.5)
    else:
        ax.set_ylim(len(at) - 0.5, -0.5)  # the first label on top
    # no grid lines or tick marks along the categories (the bars mark them, and each costs drawing time)
    _ticks(categories, gridOn=False, length=0)
    _ticks(values, gridOn=True)
    if (ax.get_yscale() if vertical else ax.get_xscale()) == "linear":  # a log axis: the caller sets its limits
        ax.autoscale_view(scalex=not vertical, scaley=vertical)
    return at


def value_labels(ax: Axes, xs: Sequence[float], ys: Sequence[float], texts: Sequence[str], colors: Sequence, **style) -> None:
    """A text at each (x, y), in its colour, all with ``style`` (keywords of ``ax.text``): value
    labels beside bars. The labels an earlier drawing on ``ax`` left (hidden by :func:`empty`) are
    set anew rather than made again, which costs a live panel's catalog chart a few milliseconds."""
    style = {"transform": ax.transData} | style
    key = repr(sorted((k, v) for k, v in style.items() if k != "transform"))  # what a reused label must share
    spare = iter([t for t in ax.texts if t.get_gid() == LABEL and not t.get_visible() and t.style == key])
    for x, y, text, color in zip(xs, ys, texts, colors):
        label = next(spare, None)
        if label is None:
            label = ax.text(x, y, text, color=color, gid=LABEL, **style)
            label.style = key
        else:
            label.update({"position": (x, y), "text": text, "color": color, "visible": True,
                          "transform": style["transform"]})


def band_bars(ax: Axes, labels: list[str], bands: list, *, highlight: str | None = None, excluded: set[str] = frozenset(),
              scale: float = 1.0, xlabel: str = "", title: str = "", log: bool = False) -> Axes:
    """One horizontal bar per label at the expected value (divided by ``scale``), with the
    low-high band as an error bar; ``highlight`` in a darker colour, ``excluded`` labels hatched
    and annotated "does not fit"."""
    expected = np.array([b.expected for b in bands]) / scale
    low, high = np.array([b.low for b in bands]) / scale, np.array([b.high for b in bands]) / scale
    misfit = np.array([lab in excluded for lab in labels], bool)
    colors = np.where(misfit, "#DDDDDD", np.where(np.array(labels) == highlight, "#1F3A93", "#9DB4E0"))
    log = log and bool((expected > 0).any())  # a log axis needs something to show
    if log:
        ax.set_xscale("log")
        _no_minor_ticks(ax)
    y = bars(ax, labels, expected, colors=list(colors), hatched=misfit)
    ax.hlines(y, low, high, color="k", linewidth=1)
    ax.plot(np.concatenate([low, high]), np.concatenate([y, y]), linestyle="none", marker="|", markersize=4,
            color="k", markeredgewidth=1)
    beside = mpl.transforms.offset_copy(ax.transData, fig=ax.figure, x=4, units="points")
    value_labels(ax, high, y, [f"{value:,.3g}{' does not fit' if out else ''}" for value, out in zip(expected, misfit)],
                 ["#C44E52" if out else "0.2" for out in misfit], va="center", fontsize=7, transform=beside)
    if log:
        ax.set_xlim(low[low > 0].min(initial=expected[expected > 0].min()) / 1.5, high.max() * 3)
    else:  # (nothing but zeros and denormals still gets an axis)
        ax.set_xlim(0, high.max() * 1.25 if high.max() > 1e-300 else 1)
    _ticks(ax.yaxis, labelsize=8)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    return ax


def validation_scatter(ax: Axes, published: list[float], low: list[float], expected: list[float], high: list[float],
                       *, groups: list[str] | None = None, unit: str = "", title: str = "") -> Axes:
    """Predicted (expected, with low-high band) against published values on log axes, with the
    line of perfect agreement and +-25 % guides; the axis says "(band)" only when one is drawn."""
    groups = groups or [""] * len(published)
    for i, group in enumerate(dict.fromkeys(groups)):
        idx = [j for j, g in enumerate(groups) if g == group]
        ax.errorbar([published[j] for j in idx], [expected[j] for j in idx],
                    yerr=[[expected[j] - low[j] for j in idx], [high[j] - expected[j] for j in idx]],
                    fmt="o", markersize=4, capsize=2, elinewidth=0.8, color=f"C{i}", label=group or None)
    lo, hi = min(published + low) * 0.8, max(published + high) * 1.25
    ax.plot([lo, hi], [lo, hi], color="0.2", linewidth=1)
    for f in (0.75, 1.25):
        ax.plot([lo, hi], [lo * f, hi * f], color="0.6", linewidth=0.8, linestyle=":")
    banded = any(l < e or e < h for l, e, h in zip(low, expected, high))
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel=f"published {unit}",
           ylabel=f"predicted {unit}" + " (band)" * banded)
    subs = (1, 2, 5) if hi / lo < 100 else (1,)  # plain labels, 1-2-5 within two decades, never crowded minor ones
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(subs=subs))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())
    if any(groups):
        ax.legend(fontsize=7)
    ax.set_title(title, fontsize=10)
    return ax


def scaling(fig, sweep: Sweep, *, title: str = "") -> None:
    """Two panels from ``scaling.sweep``: step time split into compute and exposed communication
    per GPU count, and the scaling efficiency curve."""
    left, right = subplots(fig, 1, 2)
    labels = [str(n) for n in sweep.counts]
    compute = [s.compute for s in sweep.steps]
    bars(left, labels, compute, colors="#4C72B0", label="compute", vertical=True)
    bars(left, labels, [s.exposed for s in sweep.steps], base=compute, colors="#C44E52", label="exposed communication",
         vertical=True)
    left.set(xlabel="GPUs", ylabel="seconds per step")
    _ticks(left.xaxis, labelsize=7, labelrotation=45)
    left.legend(fontsize=8, loc="lower left")
    right.plot(sweep.counts, [s.efficiency * 100 for s in sweep.steps], marker="o")
    right.set(xscale="log", xlabel="GPUs", ylabel="scaling efficiency (%)", ylim=(0, 105))
    _no_minor_ticks(right)
    right.set_xticks(list(sweep.counts), labels, fontsize=7)
    fig.suptitle(title, fontsize=10)


STEP_COLORS = {"compute": "#4C72B0", "recompute": "#8DA0CB", "tensor_parallel": "#DD8452", "pipeline_bubble": "#C44E52",
               "pipeline_p2p": "#DA8BC3", "data_parallel": "#8172B3", "optimizer": "#55A868", "expert_parallel": "#937860",
               "context_parallel": "#8C8C8C"}


def parallel_plans(fig, plans: list, chosen: int, *, title: str = "") -> None:
    """Two panels from ``planner.plans``: each GPU count's step split into its terms, per token
    and GPU (so that perfect scaling is a flat line), the chosen count outlined; and the scaling
    efficiency against the GPU count."""
    left, right = subplots(fig, 1, 2)
    shown = [p for p in plans if p is not None]
    labels = [str(p.n_gpus) for p in shown]
    bottom = np.zeros(len(shown))
    for term, color in STEP_COLORS.items():
        heights = np.array([getattr(p.step, term) * p.n_gpus / p.layout.tokens * 1e3 for p in shown])
        if term in ("expert_parallel", "context_parallel") and not heights.any():
            continue  # dense models and whole sequences per GPU have none: no legend entry
        bars(left, labels, heights, base=bottom, colors=color, label=term.replace("_", " "), vertical=True)
        bottom = bottom + heights
    misfit = np.array([not p.fits for p in shown], bool)
    if misfit.any():
        bars(left, labels, np.where(misfit, bottom, np.nan), colors="none", hatched=misfit,
             label="does not fit in memory", vertical=True)
    for i, p in enumerate(shown):
        if p.n_gpus == chosen:
            left.bar([i], [bottom[i]], fill=False, edgecolor="0.1", linewidth=1.5)
    left.set(xlabel="GPUs", ylabel="GPU-milliseconds per token")
    _ticks(left.xaxis, labelsize=7, labelrotation=45)
    fig.legend(*left.get_legend_handles_labels(), fontsize=7, loc="outside lower center", ncol=4)
    counts = [p.n_gpus for p in shown]
    right.plot(counts, [p.scaling_efficiency * 100 for p in shown], color="0.6", linewidth=0.8)
    right.plot([p.n_gpus for p in shown if p.fits], [p.scaling_efficiency * 100 for p in shown if p.fits],
               marker="o", linestyle="none", color="#4C72B0", zorder=2, label="fits")
    right.plot([p.n_gpus for p in shown if not p.fits], [p.scaling_efficiency * 100 for p in shown if not p.fits],
               marker="x", linestyle="none", color="0.6", zorder=2, label="does not fit")
    for p in shown:
        if p.n_gpus == chosen:
            right.plot([p.n_gpus], [p.scaling_efficiency * 100], marker="o", linestyle="none", markersize=110 ** 0.5,
                       markerfacecolor="none", markeredgecolor="0.1", zorder=3)
    right.set(xscale="log", xlabel="GPUs", ylabel="scaling efficiency (%)", ylim=(0, 105))
    _no_minor_ticks(right)
    right.set_xticks(counts, labels, fontsize=7)
    fig.suptitle(title, fontsize=10)


def rent_vs_buy(ax: Axes, result: RentOrBuy, *, title: str = "",
                own_label: str = "buy (servers + energy)") -> Axes:
    """Cumulative cost of renting and of owning by month (``cost.rent_or_buy``), break-even marked."""
    months, break_even = list(result.months), result.break_even_month
    ax.plot(months, [usd / 1e3 for usd in result.rent], label="rent on demand")
    ax.plot(months, [usd / 1e3 for usd in result.own], label=own_label)
    if break_even is not None:
        ax.axvline(break_even, color="0.3", linestyle=":", linewidth=1)
        late = break_even > 0.6 * months[-1]  # label on the left of the line, inside the axes
        ax.annotate(f"break-even: month {break_even:.0f}", (break_even, 0.05), xycoords=("data", "axes fraction"),
                    xytext=(-3 if late else 3, 0), textcoords="offset points", ha="right" if late else "left",
                    fontsize=8)
    ax.set(xlabel="months", ylabel="cumulative cost (thousand USD)")
    ax.legend(fontsize=8)
    ax.set_title(title + ("" if break_even is not None else ": renting stays cheaper"), fontsize=10)
    return ax


BINDING_COLORS = {"compute": "#4C72B0", "memory bandwidth": "#55A868", "interconnect": "#DD8452", "memory": "#C44E52",
                  "deadline": "#8172B3", "budget": "#937860", "latency": "#DA8BC3", "time per token": "#DA8BC3",
                  "time to first token": "#8C8C8C", "capacity": "#4C72B0"}


def _dollars(value: float, _position: object = None) -> str:
    """An axis tick in US dollars, thousands and millions abbreviated: $0, $750k, $12.5M."""
    if abs(value) >= 1e6:
        return f"${value / 1e6:,.3g}M"
    return f"${value / 1e3:,.3g}k" if abs(value) >= 1e3 else f"${value:,.0f}"


def recommendations(ax: Axes, table: pd.DataFrame, *, title: str = "") -> Axes:
    """``select.recommend`` as bars: cost (or, without a price, nothing) per GPU, coloured by the binding
    constraint, labelled with the GPU count."""
    serve = "tokens/s" in table
    values = table["cost_usd"].fillna(0)
    colors = [BINDING_COLORS[b] for b in table["binding"]]
    bars(ax, list(table["gpu"]), values, colors=colors)
    texts = [f" {'' if cost == cost else 'no dated price, '}{n} GPU{'s' if n > 1 else ''}, {binding}"
             for cost, n, binding in zip(table["cost_usd"], table["n_gpus"], table["binding"])]
    value_labels(ax, values, range(len(values)), texts, ["black"] * len(texts), va="center", fontsize=7)
    ax.set_xlabel("US dollars per million tokens" if serve else "US dollars on demand")
    ax.set_xlim(0, values.max() * 1.6 or 1)
    if not serve:  # a run costs millions: $12.5M reads better than an offset "1e7"
        ax.xaxis.set_major_formatter(FuncFormatter(_dollars))
    _ticks(ax.yaxis, labelsize=8)
    ax.set_title(title + " (best first; colour: what binds)", fontsize=10)
    return ax


def engine_budget(ax: Axes, budget, *, title: str = "") -> Axes:
    """One GPU's memory at an engine's start-up (``engine.budget``) as a stacked bar, in decimal GB:
    weights, activations, memory outside PyTorch, the KV cache, the slack outside the budget and
    what the driver does not report ("not reported": ECC, firmware; drawn from 0.1 GB); a line marks
    what one request of ``max_model_len`` tokens needs."""
    parts = [("weights", budget.weights, COLORS["weights"]), ("activations", budget.activations, COLORS["activations"]),
             ("outside PyTorch", budget.non_torch, COLORS["overhead"]), ("KV cache", budget.kv_cache, COLORS["kv_cache"]),
             ("outside the budget", budget.slack, "0.85"), ("not reported", budget.reserved, "0.55")]
    left = 0.0
    for label, size, color in parts:
        if label != parts[-1][0] or size >= 0.1 * GB:
            bars(ax, [budget.gpu], [size / GB], base=left, colors=color, label=label,
                 hatched=[label in ("outside the budget", parts[-1][0])])
        left += size / GB
    one = budget.weights + budget.activations + budget.non_torch + budget.kv_cache * budget.max_model_len / max(budget.kv_tokens, 1)
    ax.axvline(one / GB, color="0.1", linestyle="--", linewidth=1.2)
    ax.annotate(f"one {budget.max_model_len:,}-token request ", (one / GB, 1.0), xycoords=("data", "axes fraction"),
                rotation=90, ha="right", va="top", fontsize=8, color="0.1")
    ax.set_xlim(0, max(left, one / GB) * 1.05)
    ax.set_xlabel("memory per GPU (GB, decimal)")
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.3), fontsize=8, ncols=6, columnspacing=1.2, frameon=False)
    ax.set_title(title, fontsize=10)
    return ax


def wait_curve(ax: Axes, result: WaitOrStart, *, title: str = "") -> Axes:
    """Finish day of starting now (flat) and of waiting (rising with the wait), from ``trends.wait_or_start``;
    the chosen wait marked."""
    months = [m / 2 for m in range(0, 49)]
    ax.axhline(result.run_now / DAY, color="#4C72B0", label="start now")
    ax.plot(months, [(m * MONTH + result.run_later) / DAY for m in months], color="#DD8452",
            label="wait, then run on the next generation")
    ax.plot([result.wait / MONTH], [result.finish_later / DAY], marker="o", linestyle="none", color="#DD8452", zorder=3)
    ax.axvline(max(result.break_even_wait / MONTH, 0), color="0.4", linestyle=":", linewidth=1)
    ax.set(xlabel="months of waiting", ylabel="finished after (days)")
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    return ax


#: Series of :func:`generations`: panel, attribute of :class:`trends.Generation`, marker, colour,
#: legend label, divisor.
GENERATION_SERIES = (("compute", "flops_16bit", "o", "C0", "16-bit dense TFLOP/s", TFLOPS),
                     ("compute", "flops_fp8", "s", "C1", "FP8 dense TFLOP/s", TFLOPS),
                     ("memory", "bandwidth", "o", "#55A868", "memory bandwidth (TB/s)", TB),
                     ("memory", "memory_bytes", "s", "#8172B3", "memory (100 GB)", 100 * GB))


def generations(compute: Axes, memory: Axes, lineup: Sequence[Generation]) -> None:
    """A vendor's generations by launch year (``trends.lineup``): dense 16-bit and FP8 peaks
    (log scale) on ``compute``, memory bandwidth and capacity on ``memory``; every point is named,
    since parts launched in the same year stack on one another."""
    axes = {"compute": compute, "memory": memory}
    names = [g.gpu.split("-")[0] for g in lineup]
    years = [g.year for g in lineup]
    for panel, attribute, marker, color, label, divisor in GENERATION_SERIES:
        values = [getattr(g, attribute) / divisor for g in lineup]
        axes[panel].plot(years, values, marker=marker, linestyle="none", color=color, label=label)
        same = {}  # parts with the same figure in the same year share one label
        for name, year, value in zip(names, years, values):
            if value == value:  # no FP8 on the oldest parts
                same.setdefault((year, value), []).append(name)
        for (year, value), shared in same.items():
            axes[panel].annotate("/".join(shared), (year, value), xytext=(5, 0), textcoords="offset points",
                                 va="center", fontsize=6, color=color, annotation_clip=False)
    compute.set(yscale="log", xlabel="launch year", title="Compute")
    memory.set(xlabel="launch year", title="Memory")
    for ax in axes.values():
        ax.set_xlim(min(years) - 0.5, max(years) + 1)
        ax.legend(fontsize=8, loc="upper left")
