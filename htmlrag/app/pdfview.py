"""Looking at a built corpus: counts per document, the section path of a node, page images, and where a piece
of evidence lies on its page (for ``htmlrag serve`` and notebooks).

The graph stores pages, not coordinates, for text and table nodes (a figure keeps its box). Where evidence lies
is therefore found on the page itself: the evidence text and the page's words (PyMuPDF, in reading order) are
aligned word by word (:class:`difflib.SequenceMatcher`), matched runs of at least ``min_run`` words are kept
(shorter evidence: all of it), and the matched words are merged into one box per text line. Coordinates are
PDF points, origin top-left, as in :mod:`htmlrag.superrag.parse.model`.
"""

from __future__ import annotations

import difflib
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from htmlrag.core.errors import InputError
from htmlrag.superrag.parse.pdfio import capped_zoom

_WORD = re.compile(r"\w[\w.,%$'’/-]*\w|\w", re.UNICODE)

#: Per document: node counts by kind (``pages`` is the Page count).
STATS = "MATCH (n) WHERE n.doc_id IS NOT NULL AND n.doc_id <> '' RETURN n.doc_id AS doc, n.kind AS kind, count(*) AS n"
#: The node one level above each given node (section_paths walks it up, level by level: a one-hop query per
#: level is far cheaper on Kuzu than one ``IS_UNDER*1..6`` pattern: 0.38 s -> ~0.02 s per question).
PARENTS = ("UNWIND $ids AS i MATCH (a)-[:IS_UNDER]->(s) WHERE a.id = i "
           "RETURN a.id AS source, s.id AS id, s.kind AS kind, s.title AS title, s.level AS level")
SECTION_KINDS = ("MainSection", "Section")
#: Page images rendered at the same time, by default (each holds its pixels, up to the cap, while it renders).
RENDER_SLOTS = 2
_slots: dict[int, threading.BoundedSemaphore] = {}
_slots_lock = threading.Lock()


@dataclass(frozen=True)
class Region:
    """A highlighted box on a page.

    Attributes:
        page: physical page, 1-based.
        bbox: ``(x0, y0, x1, y1)`` in PDF points, origin top-left.
        width, height: the page's size in points (to place the box on a scaled image).
    """

    page: int
    bbox: tuple[float, float, float, float]
    width: float
    height: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def document_stats(corpus: Any) -> dict[str, dict[str, int]]:
    """Node counts per document id and kind (``Page``, ``MainSection``, ``Section``, ``SectionChunk``,
    ``Table``, ``TableChunk``, ``Figure``, ...), from the corpus's graph store."""
    out: dict[str, dict[str, int]] = {}
    for r in corpus.store.query(STATS):
        out.setdefault(str(r["doc"]), {})[str(r["kind"])] = int(r["n"])
    return out


def section_paths(corpus: Any, ids: Sequence[str], depth: int = 6) -> dict[str, list[str]]:
    """The titles of the sections enclosing each node, outermost first (``[]`` for a node under none), up to
    ``depth`` levels up."""
    ids = [i for i in dict.fromkeys(ids) if i]
    if not ids:
        return {}
    found: dict[str, list[tuple[int, str]]] = {i: [] for i in ids}
    frontier = {i: [i] for i in ids}  # node to look above -> the nodes whose path it is on
    for _ in range(depth):
        if not frontier:
            break
        nxt: dict[str, list[str]] = {}
        for r in corpus.store.query(PARENTS, {"ids": list(frontier)}):
            for owner in frontier.get(str(r["source"]), []):
                if r["kind"] in SECTION_KINDS:
                    found[owner].append((int(r["level"] or 0), str(r["title"] or "")))
                nxt.setdefault(str(r["id"]), []).append(owner)
        frontier = nxt
    return {i: [t for _, t in sorted(set(v))] for i, v in found.items()}


def _open(pdf: str | Path, password: str | None = None) -> Any:
    try:
        import pymupdf
    except ImportError as exc:  # pragma: no cover - optional extra
        raise InputError("page images need PyMuPDF: pip install 'htmlrag-bench[graph]'") from exc
    try:
        doc = pymupdf.open(str(pdf))
    except Exception as exc:
        raise InputError(f"{pdf}: cannot open PDF: {exc}") from exc
    if doc.needs_pass and not (password and doc.authenticate(password)):
        doc.close()
        raise InputError(f"{pdf}: encrypted PDF (a password is needed)")
    return doc


def _render_slots(n: int) -> threading.BoundedSemaphore:
    with _slots_lock:
        return _slots.setdefault(n, threading.BoundedSemaphore(n))


def render_page_png(pdf: str | Path, page: int, *, zoom: float = 1.5, password: str | None = None,
                    max_pixels: int = 8_000_000, slots: int = RENDER_SLOTS) -> bytes:
    """PNG bytes of physical page ``page`` (1-based) at ``zoom`` x 72 dpi, or at the smaller zoom that keeps
    the image within ``max_pixels`` (a 4000-point page at 1.5 would be 36 megapixels, ~850 MB while rendering);
    at most ``slots`` renders run at once (per ``slots`` value), the others wait their turn.

    Raises:
        InputError: the file cannot be opened, the page does not exist, or MuPDF cannot render it.
    """
    if not 0.1 <= zoom <= 4:
        raise InputError(f"zoom must be within 0.1-4, got {zoom}")
    import pymupdf

    with _render_slots(max(1, slots)), _open(pdf, password) as doc:
        if not 1 <= page <= doc.page_count:
            raise InputError(f"{Path(pdf).name}: no page {page} (the document has {doc.page_count})")
        p = doc[page - 1]
        z = capped_zoom(p.rect, zoom, max_pixels)
        try:
            return p.get_pixmap(matrix=pymupdf.Matrix(z, z), alpha=False).tobytes("png")
        except Exception as exc:  # MuPDF's own errors (a broken content stream, memory)
            raise InputError(f"{Path(pdf).name}: page {page} cannot be rendered ({exc})") from exc


def _norm(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def locate_text(words: Sequence[tuple], text: str, *, min_run: int = 3) -> list[tuple[float, float, float, float]]:
    """Boxes of the page words that spell ``text`` (matched words -> one box per line -> :func:`merge_boxes`).

    Args:
        words: PyMuPDF ``page.get_text("words")`` tuples ``(x0, y0, x1, y1, word, block, line, wordno)``.
        text: the evidence text (table text's ``|`` separators are ignored).
        min_run: shortest run of consecutive matching words kept (evidence shorter than this: its length).
    """
    target = _norm(text)
    if not target or not words:
        return []
    page_tokens: list[str] = []
    owner: list[int] = []
    for wi, w in enumerate(words):
        for t in _norm(str(w[4])):
            page_tokens.append(t)
            owner.append(wi)
    need = min(min_run, len(target))
    sm = difflib.SequenceMatcher(None, page_tokens, target, autojunk=False)
    hit: set[int] = set()
    for a, _, size in sm.get_matching_blocks():
        if size >= need:
            hit.update(owner[a : a + size])
    lines: dict[tuple[int, int], list[float]] = {}
    for wi in sorted(hit):
        x0, y0, x1, y1, _, block, line = words[wi][:7]
        box = lines.get((block, line))
        lines[(block, line)] = [x0, y0, x1, y1] if box is None else [min(box[0], x0), min(box[1], y0),
                                                                     max(box[2], x1), max(box[3], y1)]
    return merge_boxes([tuple(b) for b in lines.values()])  # type: ignore[misc]


def merge_boxes(boxes: Sequence[tuple[float, float, float, float]], *, gap_y: float = 3.0,
                gap_x: float = 6.0) -> list[tuple[float, float, float, float]]:
    """Merge boxes that touch once grown by ``gap_x``/``gap_y`` points (the lines of one paragraph become one
    box; paragraphs further apart stay separate), in reading order, rounded outwards to 0.1 pt."""
    out = [list(b) for b in boxes]
    merged = True
    while merged:
        merged = False
        for i in range(len(out)):
            for j in range(i + 1, len(out)):
                a, b = out[i], out[j]
                if a[0] - gap_x <= b[2] and b[0] - gap_x <= a[2] and a[1] - gap_y <= b[3] and b[1] - gap_y <= a[3]:
                    out[i] = [min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])]
                    del out[j]
                    merged = True
                    break
            if merged:
                break
    out.sort(key=lambda b: (b[1], b[0]))
    return [(math.floor(b[0] * 10) / 10, math.floor(b[1] * 10) / 10, math.ceil(b[2] * 10) / 10,
             math.ceil(b[3] * 10) / 10) for b in out]


def figure_box(row: dict[str, Any]) -> tuple[float, float, float, float] | None:
    """A Figure node's box (the graph keeps it as ``"x0,y0,x1,y1"`` in ``html``), else None."""
    if row.get("kind") != "Figure":
        return None
    try:
        x0, y0, x1, y1 = (float(v) for v in str(row.get("html") or "").split(","))
    except ValueError:
        return None
    return (x0, y0, x1, y1)


def _mtime(pdf: str | Path) -> float:
    try:
        return Path(pdf).stat().st_mtime
    except OSError:
        return 0.0


_PAGES: OrderedDict[tuple[str, float, int], tuple[float, float, list[tuple]] | None] = OrderedDict()
_PAGES_LOCK = threading.Lock()


class _Pages:
    """Pages of one PDF as evidence regions need them -- size in points and words in reading order -- from a
    cache (per file, modification time and page; the last ``keep``), opening the file only on a miss:
    questions about the same filing look at the same pages again."""

    def __init__(self, pdf: str | Path, password: str | None, keep: int = 512) -> None:
        self.pdf, self.password, self.keep, self.doc = pdf, password, keep, None
        self.stamp = (str(pdf), _mtime(pdf))

    def get(self, page_no: int) -> tuple[float, float, list[tuple]] | None:
        """``(width, height, words)`` of physical page ``page_no`` (1-based), or None when there is none."""
        key = (*self.stamp, page_no)
        with _PAGES_LOCK:
            if key in _PAGES:
                _PAGES.move_to_end(key)
                return _PAGES[key]
        if self.doc is None:
            self.doc = _open(self.pdf, self.password)
        info = None
        if 1 <= page_no <= self.doc.page_count:
            page = self.doc[page_no - 1]
            info = (float(page.rect.width), float(page.rect.height), page.get_text("words", sort=True))
        with _PAGES_LOCK:
            _PAGES[key] = info
            while len(_PAGES) > self.keep:
                _PAGES.popitem(last=False)
        return info

    def close(self) -> None:
        if self.doc is not None:
            self.doc.close()


def evidence_regions(pdf: str | Path, evidence: Sequence[Any], *, corpus: Any = None, min_run: int = 3,
                     password: str | None = None) -> dict[str, list[Region]]:
    """Where each evidence item of one PDF lies: ``{node_id: [Region, ...]}`` (see the module docstring).

    Args:
        pdf: the PDF the evidence comes from.
        evidence: :class:`~htmlrag.superrag.retrieve.evidence.Evidence` items (or objects with ``node_id``,
            ``kind``, ``pages``, ``text``, ``title``).
        corpus: the corpus, to read figures' stored boxes (without it figures are located by their text).
        min_run: see :func:`locate_text`.
    """
    rows = corpus.nodes([e.node_id for e in evidence if e.kind == "Figure"]) if corpus is not None else {}
    out: dict[str, list[Region]] = {}
    pages = _Pages(pdf, password)
    try:
        for e in evidence:
            regs: list[Region] = []
            for p in e.pages:
                info = pages.get(p)
                if info is None:
                    continue
                w, h, words = info
                box = figure_box(rows.get(e.node_id, {}))
                if box is not None:
                    regs.append(Region(p, box, w, h))
                    continue
                regs += [Region(p, b, w, h) for b in locate_text(words, e.text, min_run=min_run)]
            out[e.node_id] = regs
    finally:
        pages.close()
    return out
