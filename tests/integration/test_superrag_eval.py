"""SuperRAG in the harness: PDF -> HTML for the HtmlRAG path, the paper's settings over a generated corpus,
the experiment's extra tables (per type, pairwise t-tests), and the quickstart on two real filings (slow)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("pymupdf")
pytest.importorskip("kuzu")

from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.data.pdfqa import PdfExample
from htmlrag.pruning.tokens import load_tokenizer
from htmlrag.superrag.build.embed import HashingEmbedder
from htmlrag.superrag.settings import GraphSetting
from htmlrag.superrag.system import CorpusHandle, GraphContextPipeline, render_evidence
from htmlrag.superrag.to_html import page_source, parse_cached, pdf_to_html
from htmlrag.testing import pdfs as mk
from tests.conftest import ROOT, shared_path

TABLE_Q = "Which region had revenue of 7,890?"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mk.report_pdf(tmp_path_factory.mktemp("pdf") / "report.pdf")


def test_pdf_to_html_keeps_headings_tables_figures_and_names_its_source(report: Path, tmp_path: Path) -> None:
    page = pdf_to_html(report, cache_dir=tmp_path)
    assert "<h1>1 Chapter about topic A</h1>" in page and "<h2>1.1 Details of A</h2>" in page
    assert re.search(r"<table><caption>Table 1: Revenue by region</caption>.*<td>South</td><td>7,890</td>", page)
    assert "<figure><figcaption>Figure 1: Widget sales chart</figcaption>" in page
    assert "ACME Corp" not in page  # running header removed
    doc_id, src = page_source(page)
    assert doc_id.startswith("report-") and src == str(report)
    assert list((tmp_path / "parsed").glob("*.pkl.gz"))  # on-disk parse cache
    assert parse_cached(report, cache_dir=tmp_path).doc_id == doc_id
    from htmlrag import clean_html

    cleaned = clean_html(page)
    assert "superrag-doc-id" not in cleaned and "<h2>2.1 Details of B</h2>" in cleaned and "<td>7,890</td>" in cleaned
    ex = PdfExample(id="x", question="q", answers=["a"], pages=[report], parse_cache=str(tmp_path))
    assert ex.load_pages() == [page]


def test_settings_stages_change_the_evidence(report: Path, tmp_path: Path) -> None:
    from htmlrag.superrag.build.corpus import CorpusConfig

    handle = CorpusHandle(tmp_path / "corpus", CorpusConfig(vector_backend="numpy", flat_words=40),
                          embedder=HashingEmbedder(), parse_cache=tmp_path)
    tok = load_tokenizer()
    page = pdf_to_html(report, cache_dir=tmp_path)
    try:
        flat = GraphContextPipeline(handle, GraphSetting(k=3, flat=True), tok, budget=4096)
        flat.run("What does the widget division expect?", [page])
        # setting 1 searches fixed windows of the plain text: no headings, and the page header is still there
        assert {e.kind for e in flat.last_evidence} == {"FlatChunk"} and len(flat.last_evidence) == 3
        assert not any(e.title for e in flat.last_evidence)
        flat_texts = [r["t"] for r in handle.corpus.store.query("MATCH (f:FlatChunk) RETURN f.text AS t")]
        assert sum("ACME Corp" in t for t in flat_texts) == 3  # one per page: nothing is cut out
        with pytest.raises(HtmlRagError, match="non-layout"):
            GraphContextPipeline(handle, GraphSetting(flat=True, toc=True), tok).run("q", [page])
        s1 = GraphContextPipeline(handle, GraphSetting(k=2), tok, budget=4096)
        s2 = GraphContextPipeline(handle, GraphSetting(k=2, toc=True, expand=True), tok, budget=4096)
        no = GraphContextPipeline(handle, GraphSetting(k=2, toc=True, expand=True, reflect=True), tok,
                                  reader=lambda prompt: "no")
        r1 = s1.run("What does the widget division expect?", [page])
        assert len(s1.last_evidence) == 2 and r1.tokens == r1.stage_tokens["evidence"] > 0
        assert "[report, p." in r1.context  # source file and pages are named
        s2.run("What does the widget division expect?", [page])
        kinds = [e.kind for e in s2.last_evidence]
        assert len(kinds) > 2 and {"Table", "Figure"} & set(kinds[2:])  # expansion appended tables/figures
        no.run("What does the widget division expect?", [page])
        assert len(no.last_evidence) == 2  # the reader said no: no expansion
        small = GraphContextPipeline(handle, GraphSetting(k=5, toc=True, expand=True), tok, budget=40)
        assert small.run(TABLE_Q, [page]).tokens <= 40
        assert handle.corpus.has_document(page_source(page)[0])
        with pytest.raises(InputError, match="not converted from a PDF"):
            s1.run("q", ["<html><body><p>plain page</p></body></html>"])
    finally:
        handle.close()


def test_render_evidence_names_source_and_keeps_tables() -> None:
    from htmlrag.superrag.retrieve.evidence import Evidence

    ev = [Evidence("t1", "Table", "d1", (3, 4), 0.9, "a | b", title="Table 2", html="<table><tr><td>a</td></tr></table>"),
          Evidence("c1", "SectionChunk", "d1", (5,), 0.5, "text & more", title="Results")]
    page = render_evidence(ev, lambda d: "2023 Q3 AAPL")
    assert "<p>[2023 Q3 AAPL, pp. 3-4]</p><table>" in page and "<h3>Results</h3>" in page
    assert "text &amp; more" in page


def test_settings_experiment_writes_type_tables_and_pairwise_tests(tmp_path: Path) -> None:
    from hydra import compose, initialize_config_dir

    from htmlrag_bench.eval.app import run
    from htmlrag_bench.eval.schemas import CONF_DIR, register_configs
    from tests.helpers.docqa_data import offline_pdf_overrides

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=superrag_settings", *offline_pdf_overrides(),
                                           "ranker=bm25", f"paths.results={tmp_path}/r", f"paths.cache={tmp_path}/c",
                                           "run.progress=false", "docqa.subsets=[type,domain]"])
    run(cfg)
    (run_dir,) = (tmp_path / "r" / "superrag_settings").iterdir()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["n_examples"] == 5 and metrics["metric_names"] == ["evidence_hit", "evidence_recall"]
    assert all(s["n"] == 5 for s in metrics["systems"].values())
    by_type = (run_dir / "tables" / "by_type" / "results.md").read_text()
    for col in ("all evidence_hit", "type=multimodal evidence_hit", "type=text evidence_hit", "type=meta evidence_hit"):
        assert col in by_type, col
    assert (run_dir / "tables" / "by_domain" / "results.csv").is_file()
    pairs = json.loads((run_dir / "tables" / "pairwise.json").read_text())
    assert {(p["a"], p["b"]) for p in pairs if p["group"] == "all" and p["metric"] == "evidence_hit"} >= {
        ("s1_nonlayout", "s2_layout"), ("s2_layout", "s3_reflect"), ("htmlrag_pdf", "s1_nonlayout")}
    rows = [json.loads(x) for x in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert all(r["systems"]["s2_layout"]["tokens"] <= 4096 for r in rows)
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "htmlrag_bench.eval.table", str(run_dir), "--out", str(tmp_path / "t")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)  # a fresh process re-tables doc-QA metrics
    assert out.returncode == 0, out.stderr[-2000:]
    assert "evidence_hit" in (tmp_path / "t" / "results.md").read_text()


@pytest.mark.slow
@pytest.mark.shared_data
def test_superrag_quickstart_on_real_filings(tmp_path: Path) -> None:
    import subprocess
    import sys

    real = shared_path("pdf", "sec-10-q")  # the quickstart's systems on real filings (it reads data/pdfs itself)
    out = subprocess.run([sys.executable, "-m", "htmlrag_bench.eval.app", "experiment=superrag_quickstart", "dataset=sec10q",
                          f"dataset.loader.root={real}", "dataset.loader.docs=[2023 Q2 AAPL.pdf,2023 Q3 AAPL.pdf]",
                          "dataset.limit=2",
                          f"paths.results={tmp_path}/r", f"paths.cache={tmp_path}/c", "run.progress=false"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    (run_dir,) = (tmp_path / "r" / "superrag_quickstart").iterdir()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["n_examples"] == 2 and metrics["n_failed_examples"] == 0
    assert all(s["n"] == 2 and s["n_errors"] == 0 for s in metrics["systems"].values())


def test_run_id_covers_superrag_code_only_for_pdf_runs() -> None:
    from hydra import compose, initialize_config_dir

    from htmlrag.core.fingerprint import PDF_ROWS, fingerprint
    from htmlrag_bench.eval.schemas import CONF_DIR, register_configs
    from htmlrag_bench.eval.systems.docqa import run_identity_extra

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        pdf = compose("config", overrides=["experiment=superrag_settings"])
        html = compose("config", overrides=["experiment=quickstart"])
    assert run_identity_extra(pdf) == {"_superrag": fingerprint(PDF_ROWS)} and run_identity_extra(html) == {}


def test_cached_evidence_embeddings_equal_the_embedder(tmp_path: Path) -> None:
    import numpy as np

    from htmlrag.superrag.build.corpus import CorpusConfig, open_writable

    emb = HashingEmbedder()
    with open_writable(tmp_path / "c", config=CorpusConfig(vector_backend="numpy"), embedder=emb) as corpus:
        texts = ["alpha beta", "gamma", "alpha beta"]
        first = corpus.encode_texts(texts)
        assert np.allclose(first, emb.encode(texts)) and len(corpus._tcache) == 2
        assert np.allclose(corpus.encode_texts(texts[:1]), first[:1]) and corpus.encode_texts([]).shape == (0, 256)
