"""Real MiniLM embedding ranker (bundled model), content cache, and the resumable batch CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from htmlrag import build_block_tree, clean_html
from htmlrag.cli.main import main
from htmlrag.core.models import MINILM
from htmlrag.rankers.embedding import EmbeddingCache, EmbeddingRanker

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "pages"

pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def minilm():
    # float32 pinned: the default ``dtype="auto"`` is bfloat16 on CPUs with AVX512-BF16/AMX (CI runners often
    # have them), and the tests below compare vectors at float32 tolerances.
    return EmbeddingRanker(MINILM, dtype="float32")


def _trees():
    pages = [clean_html((SAMPLES / p).read_bytes()) for p in ("lighthouse.html", "river-festival.html")]
    return [build_block_tree(p, 20, page=i) for i, p in enumerate(pages)]


def test_minilm_ranks_the_answer_block_first(minilm):
    trees = _trees()
    scores = minilm.score("Which club won the dragon boat race?", trees)
    flat = [(s, t.blocks[i].text) for t, sc in zip(trees, scores, strict=True) for i, s in enumerate(sc)]
    best = max(flat)[1]
    assert "dragon boat" in best
    assert all(np.isfinite(s) for s, _ in flat)


def test_embedding_cache_encodes_shared_pages_once(minilm, tmp_path):
    ranker = EmbeddingRanker("sentence-transformers/all-MiniLM-L6-v2", cache=EmbeddingCache(tmp_path / "emb.sqlite"),
                             candidates=None)  # every block embedded
    trees = _trees()
    first = ranker.score("lighthouse steps", trees)
    misses = ranker.cache.misses
    second = ranker.score("festival visitors", trees)  # same pages, another question
    assert ranker.cache.misses == misses  # no block encoded again
    assert ranker.cache.hits >= sum(len(t) for t in trees)
    # a new ranker on the same SQLite file finds the vectors on disk
    again = EmbeddingRanker("sentence-transformers/all-MiniLM-L6-v2", cache=EmbeddingCache(tmp_path / "emb.sqlite"),
                            candidates=None)
    third = again.score("lighthouse steps", trees)
    assert again.cache.misses == 0
    np.testing.assert_allclose(np.concatenate(first), np.concatenate(third), atol=1e-6)
    assert not np.allclose(np.concatenate(first), np.concatenate(second))


def test_bge_instruction_is_applied():
    r = EmbeddingRanker("BAAI/bge-large-en")
    assert r.query_instruction.startswith("Represent this sentence")
    assert EmbeddingRanker("some/other-model").query_instruction == ""


def _batch_file(tmp_path: Path) -> Path:
    rows = [json.loads(line) for line in (SAMPLES / "questions.jsonl").read_text().splitlines()]
    lines = [json.dumps({"id": r["id"], "question": r["question"],
                         "page_paths": [str(SAMPLES / p) for p in r["pages"]]}) for r in rows]
    lines.insert(2, "{not json")
    lines.insert(3, json.dumps({"id": "missing", "question": "q", "page_paths": ["/nope/x.html"]}))
    lines.append(json.dumps({"id": "inline", "question": "Who designed it?",
                             "pages": ["<p>The tower was designed by Margaret Ellis.</p>"]}))
    f = tmp_path / "in.jsonl"
    f.write_text("\n".join(lines) + "\n")
    return f


@pytest.mark.parametrize("ranker", ["bm25", "embed"])
def test_batch_prune_keeps_order_reports_errors_and_resumes(tmp_path, capsys, ranker):
    src = _batch_file(tmp_path)
    out = tmp_path / "out.jsonl"
    args = ["prune", "--batch", str(src), "--out", str(out), "--budget", "128", "--ranker", ranker]
    assert main(args) == 1  # two bad items
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    n_in = len([x for x in src.read_text().splitlines() if x.strip()])
    assert len(rows) == n_in
    assert [r["id"] for r in rows][:2] == ["sample-1", "sample-2"]
    assert "invalid JSON" in rows[2]["error"] and "no such file" in rows[3]["error"]
    good = [r for r in rows if "error" not in r]
    assert all(r["tokens"] <= 128 and r["context"] for r in good)
    assert "Margaret Ellis" in rows[-1]["context"]

    # kill in the middle: keep 4 complete rows and half of the 5th; the rerun completes without duplicates
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:4]) + lines[4][: len(lines[4]) // 2])
    assert main(args) == 1
    again = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in again] == [r["id"] for r in rows]
    assert [r.get("context") for r in again] == [r.get("context") for r in rows]


def test_bfloat16_minilm_ranks_like_float32_and_has_its_own_cache_key(minilm):
    bf16 = EmbeddingRanker("sentence-transformers/all-MiniLM-L6-v2", dtype="bfloat16")
    trees = _trees()
    q = "Which club won the dragon boat race?"
    a, b = np.concatenate(minilm.score(q, trees)), np.concatenate(bf16.score(q, trees))
    assert a.dtype == b.dtype == np.float32
    assert np.abs(a - b).max() < 0.02
    assert int(np.argmax(a)) == int(np.argmax(b))
    assert bf16.model_id != minilm.model_id  # float32 and bfloat16 vectors never share cache entries
    with pytest.raises(Exception, match="dtype"):
        EmbeddingRanker("sentence-transformers/all-MiniLM-L6-v2", dtype="int4")


def _many_texts() -> list[str]:
    trees = [build_block_tree(clean_html((SAMPLES / p).read_bytes()), 8, page=i)
             for i, p in enumerate(("lighthouse.html", "river-festival.html"))]
    texts = [b.text for t in trees for b in t.blocks]
    assert len(texts) >= 6
    return texts


def test_parallel_cpu_streams_give_the_same_vectors_in_order_and_restore_threads():
    import threading

    import torch

    texts = _many_texts()
    one = EmbeddingRanker(MINILM, dtype="float32", cpu_workers=1)
    two = EmbeddingRanker(MINILM, dtype="float32", cpu_workers=2, cpu_batch_size=2)
    before = torch.get_num_threads()
    if before < 2:
        torch.set_num_threads(2)  # the streams need two threads to split
    try:
        outer = torch.get_num_threads()
        a, b = one.embed(texts), two.embed(texts)
        assert two._pool is not None  # the parallel path ran (more than two batches of two)
        np.testing.assert_allclose(a, b, atol=1e-5)  # float32: same vectors, same order
        assert torch.get_num_threads() == outer  # the caller's thread count is untouched
        seen = []
        t = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
        t.start()
        t.join()
        assert seen == [outer]  # and threads started later get the process default, not a stream's 1
    finally:
        torch.set_num_threads(before)


def test_cpu_stream_settings_are_checked():
    with pytest.raises(Exception, match="cpu_workers"):
        EmbeddingRanker("sentence-transformers/all-MiniLM-L6-v2", cpu_workers=0)
    with pytest.raises(Exception, match="cpu_batch_size"):
        EmbeddingRanker("sentence-transformers/all-MiniLM-L6-v2", cpu_batch_size=0)


def test_candidates_embed_only_bm25s_best_blocks_and_rank_the_rest_below_them(minilm):
    from htmlrag.rankers.bm25 import BM25Ranker

    trees = _trees()
    question = "Which club won the dragon boat race?"
    n = sum(len(t) for t in trees)
    assert n > 8
    full = EmbeddingRanker(MINILM, dtype="float32", candidates=None)
    every = np.concatenate(full.score(question, trees))
    lexical = np.concatenate(BM25Ranker(page_prior=0.0).score(question, trees))
    few = EmbeddingRanker(MINILM, dtype="float32", candidates=5)
    few._load()
    encoded: list[str] = []
    real = few._encode_docs
    few._encode_docs = lambda model, texts: (encoded.extend(texts), real(model, texts))[1]
    got = np.concatenate(few.score(question, trees))
    top = np.argsort(-lexical, kind="stable")[:5]
    assert len(encoded) == 5                                        # only the candidates were encoded
    np.testing.assert_allclose(got[top], every[top], atol=1e-5)     # they keep their cosine
    rest = np.setdiff1d(np.arange(n), top)
    assert got[rest].max() < got[top].min()                          # every other block ranks below them ...
    assert list(rest[np.argsort(-got[rest], kind="stable")]) == list(rest[np.argsort(-lexical[rest], kind="stable")])
    texts = [b.text for t in trees for b in t.blocks]              # ... in BM25's order
    assert "dragon boat" in texts[int(np.argmax(got))]              # the answer block still first
    as_many = EmbeddingRanker(MINILM, dtype="float32", candidates=n)
    np.testing.assert_allclose(np.concatenate(as_many.score(question, trees)), every, atol=1e-6)


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "16"])
def test_bad_candidate_counts_are_refused(bad):
    from htmlrag.core.errors import HtmlRagError

    with pytest.raises(HtmlRagError, match="candidates must be a whole number >= 1 or None"):
        EmbeddingRanker("sentence-transformers/all-MiniLM-L6-v2", candidates=bad)


def test_cli_embed_candidates_zero_means_every_block(tmp_path, capsys):
    from htmlrag.cli.main import build_parser
    from htmlrag.cli.prune import _make_ranker

    args = build_parser().parse_args(["prune", "p.html", "-q", "?", "--ranker", "embed", "--embed-candidates", "0"])
    assert _make_ranker("embed", args).candidates is None
    args.embed_candidates = 7
    assert _make_ranker("embed", args).candidates == 7
    page = SAMPLES / "lighthouse.html"
    with pytest.raises(SystemExit) as exit_:  # refused when parsed (htmlrag.core.options), exit 2
        main(["prune", str(page), "-q", "steps", "--ranker", "embed", "--embed-candidates", "-1"])
    assert exit_.value.code == 2
    assert "argument --embed-candidates: must be an integer >= 0, got '-1'" in capsys.readouterr().err


def test_a_question_is_encoded_once_per_ranker_and_scores_do_not_change(monkeypatch):
    """Pruning scores a question's blocks and then each split block's parts against the same question: its
    embedding is computed once, remembered for the last QUERY_MEMORY questions, and equal to a fresh one."""
    from htmlrag.rankers import embedding as emb

    trees = _trees()
    questions = [f"Which club won race number {i}?" for i in range(emb.QUERY_MEMORY + 2)]
    ranker = EmbeddingRanker(MINILM, dtype="float32", candidates=None)  # every block: comparable
    ranker._load()
    seen: list[str] = []
    real = emb._encode
    monkeypatch.setattr(emb, "_encode", lambda model, texts, bs: (seen.extend(texts), real(model, texts, bs))[1])
    first = ranker.score(questions[0], trees)
    again = ranker.score(questions[0], trees[:1])
    assert [t for t in seen if "race number 0" in t] == [questions[0]]       # encoded once for both calls
    np.testing.assert_allclose(again[0], first[0], atol=1e-6)
    fresh = EmbeddingRanker(MINILM, dtype="float32", candidates=None)
    for a, b in zip(fresh.score(questions[0], trees), first, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    for q in questions[1:]:                                                  # older questions are forgotten
        ranker.embed([q], is_query=True)
    assert len(ranker._queries) == emb.QUERY_MEMORY
    seen.clear()
    ranker.embed([questions[0]], is_query=True)
    assert seen == [questions[0]]
    both = ranker.embed([questions[-1], "another question"], is_query=True)  # a batch: known + new rows, in order
    np.testing.assert_allclose(both[0], fresh.embed([questions[-1]], is_query=True)[0], atol=1e-6)
    np.testing.assert_allclose(both[1], fresh.embed(["another question"], is_query=True)[0], atol=1e-6)
