"""The chapters' figures drawn by helpers.plots: what each draws, checked on the artists."""

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from PIL import Image  # noqa: E402

from helpers import comm, cost, gpus, plots, precision  # noqa: E402


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def test_curves_draws_each_series_with_its_label_and_labels_reference_lines(ax):
    plots.curves(ax, {"a": ([1, 10, 100], [1, 2, 3]), "b": ([1, 10], [5, 6])}, xlabel="x", ylabel="y", title="t",
                 xticks=[1, 10, 100], lines={"80 GB": 4.0})
    lines = [ln for ln in ax.get_lines() if ln.get_label() in ("a", "b")]
    assert [list(ln.get_ydata()) for ln in lines] == [[1, 2, 3], [5, 6]]
    assert [t.get_text() for t in ax.texts] == ["80 GB"]
    assert any(list(ln.get_ydata()) == [4.0, 4.0] for ln in ax.get_lines())  # the dashed reference line
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["1", "10", "100"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]


def test_curves_without_markers_or_legend(ax):
    plots.curves(ax, {"a": ([1, 2], [1, 2])}, xlabel="x", ylabel="y", markersize=0, legend=False, xscale="linear")
    assert ax.get_lines()[0].get_marker() in ("None", None, "") and ax.get_legend() is None


def test_loss_scale_marks_every_skipped_step_at_its_scale(ax):
    trace = precision.grad_scaler_trace(6000, {0, 2900})
    plots.loss_scale(ax, trace.scales, trace.skipped)
    marks = [ln for ln in ax.get_lines() if ln.get_linestyle() == "None"][0]
    assert list(marks.get_xdata()) == list(trace.skipped)
    assert list(marks.get_ydata()) == [trace.scales[s] for s in trace.skipped]


def test_link_bars_nest_the_achieved_bandwidth_inside_the_specified(ax):
    links = [comm.link(n) for n in ("nvlink4", "pcie5")]
    plots.link_bars(ax, links)
    widths = [p.get_width() for p in ax.patches]
    assert widths[:2] == [ln.bandwidth / 1e9 for ln in links]
    assert all(0 < inner < outer for inner, outer in zip(widths[2:], widths[:2]))


def test_catalog_figures_draw_one_bar_per_gpu_and_name_missing_prices():
    catalog = [gpus.get(n) for n in ("H100", "A100 80GB", "V100")]
    fig, (left, right) = plt.subplots(1, 2, sharey=True)
    plots.catalog_rates(left, right, catalog)
    assert len(right.patches) == 3 and [t.get_text() for t in right.texts] == [" 80 GB", " 80 GB", " 32 GB"]
    assert left.patches[2].get_width() == 0  # the V100 has no bf16
    plt.close(fig)
    fig, (watt, dollar) = plt.subplots(1, 2, sharey=True)
    with_bf16 = catalog[:2]
    plots.catalog_per_watt_and_dollar(watt, dollar, with_bf16, [cost.price(with_bf16[0], "cloud_hour"), None])
    assert dollar.texts[1].get_text() == " no dated price" and dollar.patches[1].get_width() == 0
    plt.close(fig)


def test_dollar_ticks_abbreviate_thousands_and_millions():
    assert [plots._dollars(v) for v in (0, 750, 7.5e5, 1.25e7)] == ["$0", "$750", "$750k", "$12.5M"]


def _agg_pixels(fig, canvas_class):
    canvas_class(fig)
    out = io.BytesIO()
    fig.savefig(out, format="png")
    return np.asarray(Image.open(out))


def test_panel_canvas_keeps_text_layouts_only_while_they_hold():
    """plots.Canvas lays each text out once per string, font, angle and alignment: its pixels stay
    Agg's when texts change string, size, alignment or line spacing between drawings, for multi-line
    and wrapped texts too, and matplotlib's own layout is back once a drawing ends."""
    from matplotlib.text import Text
    plain = Text._get_layout
    fig = Figure(figsize=(4, 3), dpi=100)
    ax = fig.subplots()
    texts = [ax.text(0.1, 0.2, "two\nlines", ha="center", va="top", multialignment="right"),
             ax.text(0.5, 0.5, "right", ha="right"), ax.text(0.2, 0.8, "a wrapped text " * 6, wrap=True)]
    changes = [lambda: texts[0].set_text("now\nthree\nlines"), lambda: texts[1].set_fontsize(15),
               lambda: texts[1].set_horizontalalignment("left"), lambda: texts[0].set_linespacing(2.5),
               lambda: texts[0].set_horizontalalignment("left"), lambda: texts[0].set_verticalalignment("bottom"),
               lambda: texts[2].set_position((0.6, 0.3)), lambda: texts[0].set_rotation(30)]
    kept = plots.Canvas(fig)
    for change in [lambda: None, *changes]:
        change()
        reference = _agg_pixels(fig, FigureCanvasAgg)
        fig.set_canvas(kept)
        kept.draw()  # the same canvas each time: it keeps the layouts of the drawings before
        assert (np.asarray(kept.buffer_rgba()) == reference).all()
        assert Text._get_layout is plain
    wrapped, renderer = texts[2], kept.get_renderer()
    with plots._layouts_kept(renderer):  # a wrapped text's lines depend on its place: never kept
        wrapped.set_position((0.1, 0.3))
        first = wrapped.get_window_extent(renderer)
        wrapped.set_position((0.7, 0.3))
        assert wrapped.get_window_extent(renderer).width < first.width


@pytest.mark.parametrize("rotation", [0, 45, 90])
def test_panel_canvas_draws_as_agg_does_and_sees_a_cut_text(rotation):
    """plots.Canvas reuses text bitmaps: its pixels are Agg's own, plain and math text, at any
    angle, drawn twice; and it says a text is cut exactly when one crosses the figure's edge."""
    fig = Figure(figsize=(4, 3), dpi=100, layout="constrained")
    ax = fig.subplots()
    ax.set_yticks([0, 1], ["H100-SXM5-80GB", "L40S-48GB"])
    ax.text(0.2, 0.5, "1,024 GPUs", rotation=rotation)
    ax.set_title(r"$2^{10}$ tokens", rotation=rotation)
    _agg_pixels(fig, FigureCanvasAgg)
    fig.set_layout_engine(None)  # the layout found stays put
    reference = _agg_pixels(fig, FigureCanvasAgg)
    assert (_agg_pixels(fig, plots.Canvas) == reference).all() and not fig.canvas.texts_cut
    assert (_agg_pixels(fig, lambda f: f.set_canvas(fig.canvas)) == reference).all()  # the second drawing reuses
    label = ax.text(-0.6, 0.5, "a long label that leaves the figure on the left", rotation=rotation,
                    transform=ax.transAxes)
    fig.canvas.draw()
    assert fig.canvas.texts_cut
    label.set_position((0.0, 0.5))
    label.set_text("in")
    fig.canvas.draw()
    assert not fig.canvas.texts_cut


def test_category_axes_drawn_again_are_what_matplotlib_draws():
    """A category axis of plots.bars is drawn once through matplotlib and then, while its labels,
    their colours, its limits and its place stay, from the bitmaps that drawing placed: the pixels
    are a full drawing's, also after the labels' colours, the labels themselves or the axes' place
    change (each of which draws it anew)."""
    fig = Figure(figsize=(5, 4), dpi=100)
    ax = fig.subplots()
    canvas = plots.Canvas(fig)
    names = ["H100-SXM5-80GB", "L40S-48GB", "RTX-4090-24GB"]

    def drawn(lengths, labels=names, red=()):
        plots.empty(ax)
        plots.bars(ax, labels, lengths)
        for label in ax.get_yticklabels():
            label.set_color("#C44E52" if label.get_text() in red else "black")
        canvas.draw()
        replayed = np.asarray(canvas.buffer_rgba()).copy()
        canvas.get_renderer().replays.clear()
        canvas.draw()
        return replayed, np.asarray(canvas.buffer_rgba()).copy()

    drawn([1, 2, 3])
    replays = canvas.get_renderer().replays
    for case in ([3, 1, 2], ([3, 1, 2], names, {"L40S-48GB"}), ([1, 1, 1], names[::-1]), ([2, 2], names[:2])):
        lengths, *rest = case if isinstance(case, tuple) else (case,)
        replayed, full = drawn(lengths, *rest)
        assert (replayed == full).all()
        assert list(replays.values())[0][1]  # the recorded texts of the axis (its labels)
    ax.set_position([0.3, 0.2, 0.6, 0.7])  # another place: recorded anew, still the same pixels
    canvas.draw()
    replayed = np.asarray(canvas.buffer_rgba()).copy()
    replays.clear()
    canvas.draw()
    assert (replayed == np.asarray(canvas.buffer_rgba())).all()


def test_validation_scatter_draws_each_group_and_names_the_band_only_when_drawn(ax):
    plots.validation_scatter(ax, [10, 20], [8, 15], [11, 18], [13, 22], groups=["a", "b"], unit="ms")
    assert ax.get_ylabel() == "predicted ms (band)" and ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]
    ax.clear()
    plots.validation_scatter(ax, [10, 20], [11, 18], [11, 18], [11, 18], unit="ms")
    assert ax.get_ylabel() == "predicted ms" and ax.get_legend() is None
