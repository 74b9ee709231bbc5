"""Small conveniences for the chapter notebooks: computed prose for ``{glue:md}`` and tables."""

import base64
import hashlib
import re

import pandas as pd
from IPython.display import HTML
from pandas.io.formats.style import Styler

from . import claims, validation


def glue(name: str, obj: object) -> None:
    """Make ``obj`` (a table, markdown) available as ``{glue}`name``` on this page, or as
    ``{glue}`path/to/notebook.ipynb::name``` on another, without showing it here."""
    from myst_nb import glue as myst_glue

    myst_glue(name, obj, display=False)


def glue_md(name: str, text: str) -> None:
    """Make ``text`` (markdown) available to the page as ``{glue:md}`name```, without showing it here."""
    from IPython.display import Markdown

    glue(name, Markdown(text))


def _literal_dollars(markdown: str) -> str:
    """``markdown`` with each ``$`` outside code spans escaped, so that prices are not read as math."""
    return "".join(part if part.startswith("`") else part.replace("$", r"\$")
                   for part in re.split(r"(`[^`]*`)", markdown))


def claim_label(claim_id: str) -> str:
    """The label, and HTML id, of a claim's box: ``claim-<id>`` as docutils writes ids (a dot becomes a hyphen)."""
    return "claim-" + re.sub(r"[^a-z0-9]+", "-", claim_id.lower())


#: Verdicts whose box opens folded, its verdict in the title: the claims that hold, or that numbers
#: cannot settle. A wrong claim, or one that holds only under conditions, is shown open.
FOLDED_VERDICTS = ("correct", "roughly right", "unverifiable", "opinion")


def claim_box(claim_id: str) -> str:
    """The chapter's "Check the article" box of one claim, as MyST markdown: its title, the quote
    and its English rendering, the verdict with its note and the finding's sentence, styled by the
    verdict (:data:`claims.BOX_CLASS`; folded, the verdict in its title, for :data:`FOLDED_VERDICTS`)
    and labelled for cross-references (:func:`claim_label`)."""
    row = claims.get(claim_id)  # computes the claim's check once
    quote = row["quote_zh"] if re.search(r"[\u4e00-\u9fff]", row["quote_zh"]) else f"`{row['quote_zh']}`"  # quoted code
    verdict = f"{row['verdict']} ({row['note']})" if row["note"] else row["verdict"]
    title, style = f"Check the article: {claims.title(claim_id)}", claims.BOX_CLASS[row["verdict"]]
    if row["verdict"] in FOLDED_VERDICTS:
        title, style = f"{title} — {row['verdict']}", f"{style} dropdown"
    return _literal_dollars(f":::{{admonition}} {title}\n:class: {style}\n:name: {claim_label(claim_id)}\n"
                            f"> {quote} — *{row['claim_en']}*\n\n**Verdict: {verdict}.** {row['checked_value']}\n:::\n")


def glue_claim(claim_id: str) -> None:
    """Glue the box of one article claim (:func:`claim_box`) as ``<id>-box``, for a chapter to show
    with ``{glue:md} <id>-box`` and ``:format: myst``."""
    glue_md(f"{claim_id}-box", claim_box(claim_id))


def glue_claims(*claim_ids: str) -> None:
    """:func:`glue_claim` for each of ``claim_ids``, the claims a chapter checks."""
    for claim_id in claim_ids:
        glue_claim(claim_id)


#: The out-of-sample errors the chapters quote (:func:`validation.out_of_sample`): glue key, estimate,
#: decimals of the percentage.
OUT_OF_SAMPLE_KEYS = (("train-median", "training step, steady state", 1),
                      ("e2e-median", "training, whole runs (GPU-hours)", 0),
                      ("inf-decode-median", "decoding at batch 1", 1), ("inf-static-median", "static batches", 1),
                      ("memory-median", "fine-tuning memory (GPU)", 1),
                      ("trt-step-1-median", "static batches, TensorRT-LLM 0.9: decoding step at batch 1", 1),
                      ("trt-step-32-median", "static batches, TensorRT-LLM 0.9: decoding step at batch 32 or more", 1),
                      ("trt-first-median", "static batches, TensorRT-LLM 0.9: time to first token", 1),
                      ("trt-memory-median", "serving memory, TensorRT-LLM 0.9 (peak per GPU)", 1),
                      ("peak-plain-median", "maximum throughput, TensorRT-LLM: without a caveat", 1))


#: The same for the baseline of the training estimates, half the peak on every FLOP (``half the peak``).
BASELINE_KEYS = (("half-peak-steady", "training step, steady state", 1),
                 ("half-peak-e2e", "training, whole runs (GPU-hours)", 0))


def glue_out_of_sample() -> pd.DataFrame:
    """Glue the median errors of :data:`OUT_OF_SAMPLE_KEYS` and of :data:`BASELINE_KEYS` and return the
    whole table, by estimate."""
    errors = validation.out_of_sample().set_index("estimate")
    for keys, column in ((OUT_OF_SAMPLE_KEYS, "median error"), (BASELINE_KEYS, "half the peak")):
        for key, estimate, digits in keys:
            glue_md(key, f"{errors.loc[estimate, column]:.{digits}%}")
    return errors


#: Tables with at least this many columns are set in smaller type.
WIDE_COLUMNS = 6


def _no_negative_zero(spec: str):
    """``spec.format`` (a format string), except that a value that rounds to zero is not printed
    with a minus sign ("-0%" for -0.0002 becomes "+0%" under "{:+.0%}", "0%" under "{:.0%}")."""
    def shown(value) -> str:
        text = spec.format(value)
        if text.startswith("-") and not any(d in text for d in "123456789"):
            return ("+" if "+" in spec else "") + text[1:]
        return text
    return shown


def table(frame: pd.DataFrame, *, formats: dict[str, str] | None = None, caption: str = "",
          highlight: list[bool] | None = None, rows: int | None = None, columns: list[str] | None = None) -> HTML:
    """A DataFrame styled for the book (pandas Styler: no index, number formats, a caption, rows
    marked in ``highlight`` shaded) as HTML whose ids derive from the content, so that
    re-executing a notebook changes nothing. With ``rows`` or ``columns``, the page shows the
    first ``rows`` rows and the named ``columns`` only, and offers the whole frame as a CSV file
    embedded in the page (a ``data:`` link: no file to serve, and it works offline)."""
    full = frame
    if columns is not None:
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(f"columns {missing} are not in the table; it has {list(frame.columns)}")
        frame = frame[columns]
    if rows is not None and len(frame) > rows:
        frame = frame.head(rows)
        highlight = None if highlight is None else highlight[:rows]
    uuid = hashlib.sha1((caption + full.to_csv()).encode()).hexdigest()[:8]
    defaults = {c: _yes_no if frame[c].dtype == bool else _number if pd.api.types.is_float_dtype(frame[c]) else _code
                for c in frame.columns}
    # cells get ids only where a row is shaded; the columns' styles are rules on their classes
    given = {c: _no_negative_zero(f) if isinstance(f, str) else f for c, f in (formats or {}).items()}
    styler = Styler(frame, uuid=uuid, cell_ids=highlight is not None).hide(axis="index").format(
        defaults | given, na_rep="–")
    if highlight is not None:  # rows to draw attention to, e.g. the article's wrong claims
        marks = dict(zip(frame.index, highlight))
        styler = styler.apply(lambda row: ["background-color: #fbe3e4" if marks[row.name] else "" for _ in row], axis=1)
    identifiers = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c]) and
                   frame[c].dropna().map(lambda v: isinstance(v, str) and len(v) <= (30 if " " not in v else 16)).all()]
    numbers = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c]) and frame[c].dtype != bool]
    phrases = [c for c in frame.columns if c not in identifiers and not pd.api.types.is_numeric_dtype(frame[c])]
    styles = {c: [] for c in frame.columns}  # per column: rules on its header (th) and cells (td)
    for c in numbers:  # figures line up on their last digit, their headers above them
        styles[c] += [{"selector": cell, "props": "text-align: right;"} for cell in ("th", "td")]
    for c in identifiers:  # GPU and model names and the like break at hyphens and spaces: keep each on one line
        styles[c].append({"selector": "td", "props": "white-space: nowrap;"})
    for c in phrases:  # layouts, notes: wide enough not to break a word per line on a narrow screen
        styles[c].append({"selector": "td", "props": "min-width: 9em;"})
    styler = styler.set_table_styles({c: rules for c, rules in styles.items() if rules})
    if len(frame.columns) >= WIDE_COLUMNS:  # set smaller (book.css), so that it fits the text column
        styler = styler.set_table_attributes('class="book-wide"')
    if caption:
        styler = styler.set_caption(caption)
    styler = styler.set_table_styles([{"selector": "caption", "props": "caption-side: top; font-weight: bold;"},
                                      {"selector": "th, td", "props": "padding: 0.2em 0.45em;"}], overwrite=False)
    html = styler.to_html()
    if frame.shape != full.shape:
        name = re.sub(r"[^a-z0-9]+", "-", caption.lower()).strip("-")[:48] or "table"
        data = base64.b64encode(full.to_csv(index=False).encode()).decode()
        shown = f"The first {len(frame)} of {len(full)} rows" if len(frame) < len(full) else f"All {len(full)} rows"
        if frame.shape[1] < full.shape[1]:
            shown += f", {frame.shape[1]} of {full.shape[1]} columns"
        html += (f'<p class="table-more">{shown}. <a download="{name}.csv" '
                 f'href="data:text/csv;base64,{data}">Download the whole table as CSV</a>.</p>')
    return HTML(html)


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


def _number(value: float) -> str:
    """Four significant digits, thousands separated: 0.27, 1.235, 12,346."""
    return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def _code(value: object) -> object:
    """Markdown code spans (`...`) in text cells as HTML code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", value) if isinstance(value, str) else value
