"""Figure descriptions by a vision-language model (the paper's figure step), cached.

Each figure's box is rendered from the PDF page as a PNG (``dpi``, clipped to the figure) and sent with
:data:`~htmlrag.superrag.prompts.FIGURE_PROMPT` (which quotes the caption) to a chat model that takes images,
through any OpenAI-compatible ``/chat/completions`` endpoint (:class:`~htmlrag.readers.openai.OpenAIReader`:
base URL and key from environment variables only, retries, never logged). The reply is appended to the figure's
``text`` as ``Description: ...``, so it is embedded, indexed and shown with the figure. Replies are cached in
SQLite by model, endpoint, image (SHA-256) and prompt; a failed request is not cached and fails the document
(its error names the file and page).
"""

from __future__ import annotations

import base64
import hashlib
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError
from htmlrag.superrag.parse.model import FigureItem, ParsedDocument
from htmlrag.superrag.prompts import FIGURE_PROMPT

log = logging.getLogger(__name__)


def figure_png(page: Any, bbox: tuple[float, float, float, float], dpi: int = 144) -> bytes:
    """The figure's box on a PyMuPDF page as PNG bytes (at ``dpi``, or lower for a huge box: see
    :data:`~htmlrag.superrag.parse.pdfio.MAX_RENDER_PIXELS`)."""
    import pymupdf

    from htmlrag.superrag.parse.pdfio import capped_zoom

    clip = pymupdf.Rect(*bbox)
    z = capped_zoom(clip, dpi / 72.0)
    return page.get_pixmap(clip=clip, matrix=pymupdf.Matrix(z, z)).tobytes("png")


def figure_messages(png: bytes, caption: str) -> list[dict[str, Any]]:
    """The chat messages for one figure: the prompt and the picture as a data URL."""
    url = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return [{"role": "user", "content": [{"type": "text", "text": FIGURE_PROMPT.format(caption=caption or "(none)")},
                                         {"type": "image_url", "image_url": {"url": url}}]}]


class FigureDescriber:
    """Describes a parsed document's figures (see the module docstring).

    Args:
        reader: an :class:`~htmlrag.readers.openai.OpenAIReader` (or any reader with ``_generate(batch)`` and
            ``cache_identity()``) serving a vision-language model.
        cache_path: SQLite file for replies (None: no cache).
        dpi: rendering resolution.
    """

    def __init__(self, reader: Any, cache_path: str | Path | None = None, *, dpi: int = 144) -> None:
        from htmlrag.core.cache import SqliteCache

        self.reader, self.dpi = reader, dpi
        self.cache = SqliteCache(cache_path, "figures") if cache_path is not None else None
        self.requests = 0

    def _describe(self, png: bytes, caption: str) -> str:
        from htmlrag.core.cache import content_key

        key = content_key("figure", self.reader.name, self.reader.cache_identity(),
                          hashlib.sha256(png).hexdigest(), FIGURE_PROMPT, caption)
        if self.cache is not None and isinstance(hit := self.cache.get(key), str) and hit.strip():
            return hit  # (a damaged entry, or an empty reply stored by older code, is a miss)
        self.requests += 1
        ((text, _),) = self.reader._generate([figure_messages(png, caption)])
        if self.cache is not None and text.strip():  # an empty reply is asked again next time, never kept
            self.cache.put(key, text)
        return text

    def __call__(self, doc: ParsedDocument, pdf: str | Path | None = None) -> ParsedDocument:
        """A copy of ``doc`` whose figures' text ends with the model's description."""
        from htmlrag.superrag.parse.pdfio import open_pdf

        if not doc.figures:
            return doc
        pdf_doc, _ = open_pdf(pdf or doc.path, repair=True)
        described: dict[int, FigureItem] = {}
        try:
            for f in doc.figures:
                try:
                    text = self._describe(figure_png(pdf_doc.load_page(f.page - 1), f.bbox, self.dpi), f.caption)
                except HtmlRagError as exc:
                    raise HtmlRagError(f"{doc.path}: page {f.page}: figure description failed: {exc}") from exc
                described[id(f)] = replace(f, text="\n".join(x for x in (f.text, f"Description: {text.strip()}") if x))
        finally:
            pdf_doc.close()
        sections = [replace(s, items=[described.get(id(i), i) for i in s.items]) for s in doc.sections]
        return replace(doc, sections=sections, figures=[described[id(f)] for f in doc.figures])
