"""htmlrag.app.pdfview: where evidence lies on its page, section paths, counts, page images."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag.app.pdfview import evidence_regions, locate_text, merge_boxes

pytest.importorskip("pymupdf")


def _words(lines: list[str], y0: float = 100.0, block: int = 0) -> list[tuple]:
    out = []
    for li, line in enumerate(lines):
        x = 72.0
        for wi, w in enumerate(line.split()):
            out.append((x, y0 + 12 * li, x + 6 * len(w), y0 + 12 * li + 10, w, block, li, wi))
            x += 6 * len(w) + 4
    return out


def test_locate_text_boxes_the_matching_lines_only() -> None:
    words = _words(["Revenue grew in every region this year", "Unrelated footer text here"], 100)
    words += _words(["Net sales were 7,890 in the South"], 300, block=1)
    boxes = locate_text(words, "net sales were 7,890 in the south.")
    assert len(boxes) == 1
    x0, y0, _x1, y1 = boxes[0]
    assert y0 == 300 and y1 == 310 and x0 == 72
    assert locate_text(words, "nothing on this page matches at all") == []


def test_short_runs_are_not_highlighted() -> None:
    words = _words(["the quick brown fox jumps over the lazy dog"])
    assert locate_text(words, "lazy cat sleeps in the sun") == []  # only "the" or "lazy" in common
    assert locate_text(words, "fox") != []  # evidence shorter than a run: matched whole


def test_merge_boxes_joins_lines_of_a_paragraph_not_distant_blocks() -> None:
    merged = merge_boxes([(72, 100, 300, 110), (72, 111, 280, 121), (72, 400, 300, 410)])
    assert merged == [(72, 100, 300, 121), (72, 400, 300, 410)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("kuzu")
    from htmlrag.superrag.build.corpus import CorpusConfig, build_corpus, open_corpus
    from htmlrag.superrag.build.embed import HashingEmbedder
    from htmlrag.testing import pdfs as mk

    d = tmp_path_factory.mktemp("view")
    pdf = mk.report_pdf(d / "report.pdf")
    (res,) = build_corpus([pdf], d / "db", config=CorpusConfig(vector_backend="numpy"), embedder=HashingEmbedder())
    c = open_corpus(d / "db", embedder=HashingEmbedder())
    yield c, pdf, res.doc_id
    c.close()


def test_evidence_regions_land_on_the_evidence(corpus) -> None:
    import pymupdf

    c, pdf, _ = corpus
    ev = c.retrieve("Which region had revenue of 7,890?", retriever="hybrid", k=5)
    table = next(e for e in ev if e.kind == "TableChunk")
    regs = evidence_regions(pdf, [table], corpus=c)[table.node_id]
    assert regs and {r.page for r in regs} == {2}
    with pymupdf.open(pdf) as doc:
        cell = doc[1].search_for("7,890")[0]
    assert any(r.bbox[0] <= cell.x0 and cell.x1 <= r.bbox[2] and r.bbox[1] <= cell.y0 and cell.y1 <= r.bbox[3]
               for r in regs)
    assert all(r.width == 595 and r.height == 842 for r in regs)


def test_figures_use_their_stored_box(corpus) -> None:
    c, pdf, _doc_id = corpus
    from htmlrag.superrag.retrieve.evidence import to_evidence

    (row,) = c.store.query("MATCH (f:Figure) RETURN f.id AS id")
    fig = to_evidence(c.nodes([row["id"]])[row["id"]], 1.0, "test")
    import pymupdf

    (reg,) = evidence_regions(pdf, [fig], corpus=c)[fig.node_id]
    with pymupdf.open(pdf) as doc:
        (img,) = doc[2].get_image_info()
    assert reg.page == 3 and reg.bbox == pytest.approx(img["bbox"], abs=0.2)


def test_section_paths_and_stats(corpus) -> None:
    from htmlrag.app.pdfview import document_stats, section_paths

    c, _, doc_id = corpus
    (row,) = c.store.query("MATCH (t:TableChunk) RETURN t.id AS id")
    assert section_paths(c, [row["id"]])[row["id"]] == ["2 Chapter about topic B", "2.1 Details of B"]
    s = document_stats(c)[doc_id]
    assert s["Page"] == 3 and s["Table"] == 1 and s["Figure"] == 1 and s["Section"] == 3


def test_render_page_png(corpus, tmp_path: Path) -> None:
    from htmlrag.app.pdfview import render_page_png
    from htmlrag.core.errors import InputError

    _, pdf, _ = corpus
    png = render_page_png(pdf, 1, zoom=0.5)
    assert png.startswith(b"\x89PNG")
    with pytest.raises(InputError, match="no page 9"):
        render_page_png(pdf, 9)
