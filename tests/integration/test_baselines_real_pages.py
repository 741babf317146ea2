"""Each paper baseline on real Wikipedia pages (../shared/data/wtq-html-qa: a question's own page plus a
distractor): the context stays within the token budget, is non-empty and has the baseline's format. LLM-based
baselines run tiny random models (their text is garbage; the mechanics and the budget are what is tested)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from htmlrag import clean_html
from htmlrag.pruning.tokens import load_tokenizer
from tests.conftest import shared_path

pytest.importorskip("langchain_text_splitters")
pytest.importorskip("bs4")


@pytest.fixture(scope="module")
def item() -> dict:
    root = shared_path("wtq-html-qa")
    q = json.loads((root / "questions.jsonl").read_text(encoding="utf-8").splitlines()[0])
    pages = []
    for rel in (q["page"], q["distractors"][0]):
        p = root / rel
        p = p if p.exists() else Path(str(p) + ".gz")
        pages.append(gzip.decompress(p.read_bytes()).decode("utf-8"))
    return {"question": q["question"], "answers": q["answers"], "raw": pages, "clean": [clean_html(p) for p in pages]}


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer()


def _text_like(context: str) -> bool:
    return "<td" not in context and "<p>" not in context and "<div" not in context


def test_section_chunks_split_at_headings(item) -> None:
    from htmlrag.baselines.chunk_rerank import html_section_chunks

    chunks = html_section_chunks(item["clean"][0])
    assert len(chunks) > 5 and all(c == " ".join(c.split()) for c in chunks)
    assert sum(len(c.split()) for c in chunks) > 500
    limited = html_section_chunks(item["clean"][0], max_words=64)
    assert len(limited) > len(chunks) and max(len(c.split()) for c in limited) <= 64


@pytest.mark.parametrize(("ranker", "budget"), [("bm25", 256), ("bm25", 2048), ("minilm", 512)])
def test_chunk_rerank_within_budget(item, tok, ranker: str, budget: int) -> None:
    from htmlrag.baselines.chunk_rerank import ChunkRerankRefiner
    from htmlrag.rankers.bm25 import BM25Ranker

    if ranker == "minilm":
        pytest.importorskip("sentence_transformers")
        from htmlrag.rankers.embedding import EmbeddingRanker

        r = EmbeddingRanker("sentence-transformers/all-MiniLM-L6-v2")
    else:
        r = BM25Ranker()
    refiner = ChunkRerankRefiner(r, tok, budget=budget)
    res = refiner.run(item["question"], item["clean"])
    assert 0 < res.tokens <= budget and tok.count(res.context) == res.tokens
    assert _text_like(res.context) and refiner.fmt == "text"
    ranked = refiner.rank(item["question"], item["clean"])
    first = res.context.split("\n")[0]
    assert first == ranked[0][: len(first)]  # rank order: the best chunk (or its cut) comes first
    costs = {k: v for k, v in res.stage_tokens.items() if k.startswith("cost:rank.")}
    assert (costs["cost:rank.input_tokens"] > 0) == (ranker == "minilm")


@pytest.mark.parametrize("fmt", ["html", "text", "markdown"])
def test_format_baselines_within_budget(item, tok, fmt: str) -> None:
    from htmlrag.baselines.page_formats import FormatRefiner

    res = FormatRefiner(fmt, tok, budget=1024).run(item["question"], item["raw"])
    assert 0 < res.tokens <= 1024
    if fmt == "html":
        assert item["raw"][0].startswith(res.context[:2000])  # the raw page as given: vanilla HTML
    else:
        assert _text_like(res.context) and "<script" not in res.context
    if fmt == "markdown":
        assert "|" in FormatRefiner(fmt, tok, budget=100_000).run("q", item["raw"]).context  # tables as Markdown


def test_plain_text_keeps_the_answer_at_a_large_budget(item, tok) -> None:
    from htmlrag.baselines.page_formats import FormatRefiner
    from htmlrag.evaluation.scoring.metrics import normalize_answer

    ctx = FormatRefiner("text", tok, budget=200_000).run(item["question"], item["raw"]).context
    assert any(normalize_answer(a) in normalize_answer(ctx) for a in item["answers"])


def test_dom_tree_ablation_within_budget(item, tok) -> None:
    from htmlrag.baselines.costed import CostedPipeline
    from htmlrag.rankers.bm25 import BM25Ranker

    dom = CostedPipeline(BM25Ranker(), None, tok, budget=512, max_words1=1, pack_siblings=False)
    block = CostedPipeline(BM25Ranker(), None, tok, budget=512, max_words1=128)
    a, b = dom.run(item["question"], item["clean"]), block.run(item["question"], item["clean"])
    assert 0 < a.tokens <= 512 and 0 < b.tokens <= 512
    assert a.stage_tokens["cost:step1.input_tokens"] == 0  # BM25 has no model


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    from tests.helpers.tiny import save_tiny

    return save_tiny(tmp_path_factory.mktemp("bl"), "llama", max_position_embeddings=8192)


@pytest.mark.slow
def test_longllmlingua_compresses_real_pages_within_budget(item, tok, tiny_llama) -> None:
    pytest.importorskip("llmlingua")
    from htmlrag.baselines.longllmlingua import LongLLMLinguaRefiner, document_pieces

    pieces = document_pieces(item["clean"])
    assert pieces[0].startswith("Doc 1(Title: ") and any(p.startswith("Doc 2(Title: ") for p in pieces)
    refiner = LongLLMLinguaRefiner(tok, budget=300, model=str(tiny_llama), dtype="float32")
    res = refiner.run(item["question"], item["clean"][:1])
    assert 0 < res.tokens <= 300 and refiner.fmt == "text"
    assert res.stage_tokens["cost:compress.input_tokens"] > 300  # the compressor read the page
    assert res.stage_tokens["cost:compress.params"] > 0
    refiner.release()
    assert refiner._compressor is None
    assert refiner.compressor.model is not None  # loaded again when used after a release


def test_reader_lm_packs_and_fits_budget(item, tok, tmp_path) -> None:
    pytest.importorskip("torch")
    from htmlrag.baselines.reader_lm import ReaderLMRefiner, pack_pages, strip_for_reader_lm
    from tests.helpers.tiny import save_tiny

    assert pack_pages(["a", "b", "c", "d"], [5, 1, 1, 1], 2, 64000) == [["a"], ["b", "c", "d"]]
    assert pack_pages(["a", "b", "c"], [10, 10, 10], 2, 5) == [["a"], ["b"]]  # stops once every pack is full
    assert "<script" not in strip_for_reader_lm("<p>x</p><script>var a;</script><!-- c -->")
    model = save_tiny(tmp_path, "qwen2")
    refiner = ReaderLMRefiner(tok, budget=2048, model=str(model), dtype="float32", max_new_tokens=12,
                              max_pack_tokens=3000)
    assert refiner.num_packs == 2 and len(refiner.prompts(item["raw"])) == 2
    res = refiner.run(item["question"], item["raw"])
    assert res.tokens <= 2048 and refiner.fmt == "markdown"
    assert 0 < res.stage_tokens["cost:convert.output_tokens"] <= 2 * 12
    assert res.stage_tokens["cost:convert.input_tokens"] <= 2 * 3000 + 100  # packs cut to max_pack_tokens
    small = ReaderLMRefiner(tok, budget=8, model=str(model), dtype="float32", max_new_tokens=12, max_pack_tokens=500)
    assert small.run(item["question"], item["raw"]).tokens <= 8
    refiner.release()
    assert refiner._model is None
