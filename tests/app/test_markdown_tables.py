"""The run page renders the Markdown our table writers emit as HTML tables (bold, underline, dagger kept), with
everything escaped, and prints metrics as the paper tables do (issue 40)."""

from __future__ import annotations

from htmlrag.app.markdown import render
from htmlrag.app.runs import csv_cells, metric_html
from htmlrag.evaluation.tables import Column, Table

MD = Table([Column("sample_pages", "ref_em"), Column("sample_pages", "tokens", scale=1.0, digits=0, rank=False)],
           ["bm25", "cleaned", "ours"],
           {("sample_pages", "ref_em"): {"bm25": 2 / 3, "cleaned": 1 / 3, "ours": 5 / 6},
            ("sample_pages", "tokens"): {"bm25": 115.0, "cleaned": 128.0, "ours": 115.0}},
           {("sample_pages", "ref_em"): {"bm25": {"p": 0.01, "mean_a": 5 / 6, "mean_b": 2 / 3},
                                         "cleaned": {"p": 0.001, "mean_a": 5 / 6, "mean_b": 1 / 3}}},
           ours="ours", caption="Demo.").to_markdown()


def test_table_markdown_becomes_an_html_table_with_marks() -> None:
    html = str(render(MD))
    assert html.count("<table") == 1 and "<th>system</th>" in html and '<th class="n">sample_pages ref_em</th>' in html
    assert '<td class="n"><strong>83.33</strong>†</td>' in html and '<td class="n"><u>66.67</u></td>' in html
    assert "<p><strong>Demo.</strong></p>" in html
    assert "|" not in html.split("<table")[1].split("</table>")[0]  # no pipe left in the table


def test_nothing_but_underline_passes_as_html() -> None:
    html = str(render('| a | b |\n|---|---:|\n| <script>x()</script> | <img src=x onerror=y> |\n\n'
                      '<u>ok</u> <b>no</b> <a href="javascript:z">no</a> **"q"**'))
    assert "<script" not in html and "<img" not in html and "<b>" not in html and "<a " not in html
    assert "&lt;script&gt;x()&lt;/script&gt;" in html and "<u>ok</u>" in html and "<strong>&quot;q&quot;</strong>" in html


def test_hover_titles_come_from_the_caller() -> None:
    html = str(render(MD, lambda row, head, cell: "0.8333333333333334" if (row, cell) == ("ours", "**83.33**†")
                      else None))
    assert 'title="0.8333333333333334"><strong>83.33</strong>' in html and html.count("title=") == 1


def test_metric_values_print_as_the_tables_print_them() -> None:
    assert str(metric_html(0.8333333333333334, "ref_em")) == '<span class="num" title="0.8333333333333334">83.33</span>'
    assert str(metric_html(115.25, "tokens")) == '<span class="num" title="115.25">115</span>'
    assert str(metric_html(None, "em")) == "" and str(metric_html("<x>", "em")) == "&lt;x&gt;"
    cells = csv_cells([["system", "metric", "value", "p_vs_ours"], ["bm25", "ref_em", "0.6666666666666666",
                                                                   "0.3632174676491228"]])
    assert cells[1][2] == {"text": "66.67", "title": "0.6666666666666666"}
    assert cells[1][3] == {"text": "0.363", "title": "0.3632174676491228"}
    assert csv_cells([["metric", "value"], ["ref_em", "83.33"]], raw_values=False)[1][1]["text"] == "83.33"
