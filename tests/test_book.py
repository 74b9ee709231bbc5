"""The book's presentation helpers (helpers.book)."""

import base64
import io
import re

import pandas as pd
import pytest

from helpers import book


def test_a_long_table_shows_its_first_rows_and_embeds_all_of_them_as_csv():
    frame = pd.DataFrame({"GPU": [f"G{i}" for i in range(30)], "days": [i / 3 for i in range(30)]})
    html = book.table(frame, caption="A long table", rows=5).data
    assert html.count("<tr") == 1 + 5  # the header and five rows
    assert "The first 5 of 30 rows" in html and 'download="a-long-table.csv"' in html
    embedded = re.search(r'href="data:text/csv;base64,([^"]+)"', html).group(1)
    pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(base64.b64decode(embedded).decode())), frame)
    assert book.table(frame, caption="A long table", rows=5).data == html  # same bytes on re-execution


def test_a_wide_table_shows_the_named_columns_and_embeds_the_whole_frame():
    frame = pd.DataFrame({"GPU": ["A", "B"], "days": [1.0, 2.0], "detail": ["x", "y"]})
    html = book.table(frame, caption="Wide", columns=["GPU", "days"]).data
    assert "detail" not in html.split("<p class")[0] and "All 2 rows, 2 of 3 columns" in html
    embedded = re.search(r'href="data:text/csv;base64,([^"]+)"', html).group(1)
    pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(base64.b64decode(embedded).decode())), frame)
    with pytest.raises(ValueError, match=r"columns \['nope'\] are not in the table"):
        book.table(frame, columns=["GPU", "nope"])


def test_a_table_within_its_rows_has_no_download_link():
    frame = pd.DataFrame({"a": [1, 2, 3]})
    assert "download" not in book.table(frame, rows=3).data
    assert book.table(frame, rows=3).data == book.table(frame).data


def _styled(html: str, props: str) -> set[str]:
    """The 'th.colN' and 'td.colN' selectors of the rules in ``html``'s style sheet that set ``props``."""
    blocks = re.findall(r"([^{}]*)\{\s*" + re.escape(props) + r"\s*\}", html.split("</style>")[0])
    return {cell for block in blocks for cell in re.findall(r"(t[hd]\.col\d+)", block)}


def test_identifiers_stay_on_one_line_and_prose_wraps():
    frame = pd.DataFrame({"gpu": ["RTX-PRO-6000-Server-96GB", "H100-SXM5-80GB"], "note": ["a long note that wraps", "x"],
                          "days": [1.0, 2.0]})
    html = book.table(frame).data
    assert _styled(html, "white-space: nowrap;") == {"td.col0"}  # the GPU column only: not the prose, not the numbers
    assert _styled(html, "min-width: 9em;") == {"td.col1"}  # prose keeps a width


def test_numbers_are_right_aligned_under_right_aligned_headers():
    frame = pd.DataFrame({"GPU": ["A", "B"], "days": [1.0, 2.0], "fits": [True, False]})
    html = book.table(frame).data
    assert _styled(html, "text-align: right;") == {"th.col1", "td.col1"}  # not names, not yes/no


def test_cells_carry_ids_only_where_rows_are_shaded():
    """Column styles are rules on the columns' classes, so cells need no ids (half the HTML of a
    33-row table) unless a row is shaded."""
    frame = pd.DataFrame({"GPU": ["A", "B"], "days": [1.0, 2.0]})
    assert "_row0_col0" not in book.table(frame).data
    shaded = book.table(frame, highlight=[False, True]).data
    assert re.search(r"_row1_col0,?[^{]*\{\s*background-color: #fbe3e4;", shaded)
    assert "background-color" not in shaded.split("_row1")[0].split("</style>")[0]


def test_tables_of_many_columns_are_marked_for_smaller_type():
    narrow = pd.DataFrame({c: [1.0] for c in "abc"})
    wide = pd.DataFrame({c: [1.0] for c in "abcdefgh"[:book.WIDE_COLUMNS]})
    assert 'class="book-wide"' not in book.table(narrow).data
    assert 'class="book-wide"' in book.table(wide).data


def test_a_figure_that_rounds_to_zero_has_no_minus_sign():
    frame = pd.DataFrame({"error": [-0.0002, -0.03, 0.0004], "GB": [-0.001, 2.5, 1.0]})
    html = book.table(frame, formats={"error": "{:+.0%}", "GB": "{:,.1f}"}).data
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", html)
    assert cells == ["+0%", "0.0", "-3%", "2.5", "+0%", "1.0"]
