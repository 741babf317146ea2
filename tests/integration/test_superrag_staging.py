"""Documents enter and leave a corpus whole (htmlrag.superrag.build.staging): a build or removal killed with
SIGKILL half-way, or failing half-way, leaves nothing a query can see once the corpus is opened for writing
again; removal takes the graph nodes, vectors and full-text entries."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("kuzu")
pytest.importorskip("pymupdf")

from htmlrag.superrag.build.corpus import CorpusConfig, build_corpus, open_corpus, open_writable
from htmlrag.superrag.build.embed import HashingEmbedder
from htmlrag.testing import pdfs as mk

CFG = CorpusConfig(vector_backend="numpy", embedding_model="hashing-256")
DOC_NODES = "MATCH (n) WHERE n.doc_id = $d RETURN count(*) AS n"


def _counts(db: Path, doc_id: str) -> tuple[int, int, int, bool]:
    """(graph nodes, full-text entries, vectors) of ``doc_id``, and whether the manifest lists it."""
    with open_corpus(db, embedder=HashingEmbedder()) as c:
        nodes = c.store.query(DOC_NODES, {"d": doc_id})[0]["n"]
        text = sum(1 for it in c.fulltext._load() if it["doc_id"] == doc_id)
        vecs = sum(len(c.vectors.search(col, c.embed_query("x"), 10_000, [doc_id])) for col in ("content", "titles"))
    listed = doc_id in json.loads((db / "manifest.json").read_text())["documents"]
    return nodes, text, vecs, listed


@pytest.fixture
def corpus_with_one(tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "db"
    (res,) = build_corpus([mk.report_pdf(tmp_path / "a.pdf")], db, config=CFG, embedder=HashingEmbedder())
    assert res.ok
    return db, res.doc_id


_KILLER = textwrap.dedent("""
    import os, signal, sys
    from htmlrag.superrag.build.corpus import build_corpus, open_writable
    from htmlrag.superrag.build.embed import HashingEmbedder
    from htmlrag.superrag.graph import store
    from htmlrag.superrag.index import fulltext

    stage, db, pdf = sys.argv[1:4]

    def die(*a, **k):
        os.kill(os.getpid(), signal.SIGKILL)

    if stage == "build":  # after the nodes, before the edges, vectors and full text
        store.KuzuStore.write_edges = die
        build_corpus([pdf], db, embedder=HashingEmbedder())
    else:  # removal: after the full-text entries went, before the vectors and graph nodes
        real = fulltext.BM25Index.delete_document
        def delete_then_die(self, doc_id):
            real(self, doc_id)
            die()
        fulltext.BM25Index.delete_document = delete_then_die
        with open_writable(db, embedder=HashingEmbedder()) as c:
            c.remove_document(pdf)
""")


def _killed(stage: str, db: Path, arg: str) -> None:
    out = subprocess.run([sys.executable, "-c", _KILLER, stage, str(db), arg], capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=300)
    assert out.returncode == -signal.SIGKILL, out.stderr[-2000:]


def test_a_build_killed_half_way_is_removed_when_the_corpus_is_next_opened(corpus_with_one, tmp_path: Path) -> None:
    db, first = corpus_with_one
    pdf = mk.report_pdf(tmp_path / "b.pdf", pages=2)
    _killed("build", db, str(pdf))
    manifest = json.loads((db / "manifest.json").read_text())
    (killed,) = manifest["pending"]
    assert _counts(db, killed)[0] > 0  # the premise: the kill left the nodes it had written
    with open_writable(db, embedder=HashingEmbedder()):
        pass
    assert _counts(db, killed) == (0, 0, 0, False)
    assert _counts(db, first)[0] > 0 and _counts(db, first)[3]  # the other document is untouched
    assert "pending" not in json.loads((db / "manifest.json").read_text())


def test_a_removal_killed_half_way_is_finished_when_the_corpus_is_next_opened(corpus_with_one) -> None:
    db, doc = corpus_with_one
    _killed("remove", db, doc)
    assert not _counts(db, doc)[3] and _counts(db, doc)[0] > 0  # unlisted at once; nodes still there
    with open_writable(db, embedder=HashingEmbedder()):
        pass
    assert _counts(db, doc) == (0, 0, 0, False)


def test_nodes_of_an_unlisted_document_are_removed(corpus_with_one) -> None:
    """A corpus damaged before pending marks existed: the graph holds a document the manifest does not list."""
    db, doc = corpus_with_one
    mf = json.loads((db / "manifest.json").read_text())
    del mf["documents"][doc]
    (db / "manifest.json").write_text(json.dumps(mf))
    with open_writable(db, embedder=HashingEmbedder()):
        pass
    assert _counts(db, doc) == (0, 0, 0, False)


def test_a_build_failing_half_way_leaves_nothing(corpus_with_one, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from htmlrag.superrag.graph.store import KuzuStore

    db, first = corpus_with_one

    def broken(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(KuzuStore, "write_edges", broken)
    with open_writable(db, embedder=HashingEmbedder()) as c:
        res = c.add_document(mk.report_pdf(tmp_path / "b.pdf", pages=2))
    assert not res.ok and "disk full" in res.error
    assert _counts(db, res.doc_id) == (0, 0, 0, False)
    assert "pending" not in json.loads((db / "manifest.json").read_text())
    assert _counts(db, first)[3]


def test_remove_document_takes_graph_vectors_and_full_text(corpus_with_one) -> None:
    db, doc = corpus_with_one
    before = _counts(db, doc)
    assert min(before[:3]) > 0 and before[3]
    with open_writable(db, embedder=HashingEmbedder()) as c:
        assert c.remove_document(doc) is True
        assert c.remove_document(doc) is False  # nothing left to remove
    assert _counts(db, doc) == (0, 0, 0, False)
