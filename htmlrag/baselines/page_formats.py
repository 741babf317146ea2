"""Format baselines: whole pages as vanilla HTML, plain text or Markdown, cut to the budget (no ranking).

- ``html``: the page as given (the harness hands raw pages when cleaning is off: "vanilla HTML"; cleaned pages
  give "HtmlRAG without pruning").
- ``text``: BeautifulSoup's ``get_text`` (lxml parser; script/style/template text is never included by
  BeautifulSoup), one string per line (``separator="\\n", strip=True``) so that words of neighbouring
  elements never fuse.
- ``markdown``: ``markdownify`` of the page (ATX headings; ``script``/``style`` dropped first; nesting deeper
  than :data:`htmlrag.html.formats.MARKDOWN_MAX_DEPTH` levels written as text lines, as in the ``markdown``
  context format).

Pages are converted one by one, joined with newlines in retrieval order, and the joined context is cut on
token boundaries to ``budget`` tokens: the first pages survive, as when a long prompt is truncated.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence

import lxml.etree as etree

from htmlrag.baselines.base import decode_pages, fit_to_budget, make_result
from htmlrag.core.errors import BudgetError, HtmlRagError, InputError
from htmlrag.html.formats import bound_depth
from htmlrag.html.parse import parse_html
from htmlrag.pruning.pipeline import PipelineResult
from htmlrag.pruning.tokens import TokenCounter

log = logging.getLogger(__name__)

PAGE_FORMATS = ("html", "text", "markdown")


def page_text(html: str) -> str:
    """Plain text of a page by BeautifulSoup ``get_text("\\n", strip=True)``."""
    try:
        from bs4 import BeautifulSoup
    except ImportError as exc:
        raise HtmlRagError("the plain-text baseline needs beautifulsoup4: pip install 'htmlrag-bench[eval]'") from exc
    if not html.strip():
        return ""
    return BeautifulSoup(html, "lxml").get_text("\n", strip=True)


def page_title(html: str) -> str:
    """The text of a page's ``<title>`` (``""`` when it has none)."""
    root = parse_html(html) if html.strip() else None
    if root is None:
        return ""
    titles = root.xpath("//title")
    return " ".join("".join(titles[0].itertext()).split()) if titles else ""


def page_markdown(html: str) -> str:
    """Markdown of a page by markdownify (ATX headings), scripts and styles removed, blank-line runs collapsed."""
    from markdownify import markdownify

    if not html.strip():
        return ""

    md = markdownify(bound_depth(_without_code(html)), heading_style="ATX")  # markdownify recurses: bound nesting
    lines: list[str] = []
    for line in (x.rstrip() for x in md.splitlines()):
        if line or (lines and lines[-1]):
            lines.append(line)
    return "\n".join(lines).strip()


def _without_code(html: str) -> str:
    """``html`` without script/style/noscript/template elements (markdownify would keep their text)."""
    root = parse_html(html)
    if root is None:
        return ""
    etree.strip_elements(root, "script", "style", "noscript", "template", with_tail=False)
    return etree.tostring(root, encoding="unicode", method="html")


class FormatRefiner:
    """Convert whole pages to ``fmt`` and cut the joined context to the budget.

    Args:
        fmt: ``html`` (as given), ``text`` (BeautifulSoup) or ``markdown`` (markdownify).
        tokenizer: token counter of the budget.
        budget: context budget in tokens.
        separator: placed between pages.
        cache_pages: how many converted pages to keep in memory.
    """

    def __init__(self, fmt: str, tokenizer: TokenCounter, budget: int = 4096, separator: str = "\n",
                 cache_pages: int = 1024) -> None:
        if fmt not in PAGE_FORMATS:
            raise InputError(f"fmt must be one of {PAGE_FORMATS}, got {fmt!r}")
        if not isinstance(budget, int) or budget <= 0:
            raise BudgetError(f"budget must be a positive number of tokens, got {budget!r}")
        self.fmt, self.tokenizer, self.budget, self.separator = fmt, tokenizer, budget, separator
        self._done: OrderedDict[str, str] = OrderedDict()
        self._cache_pages = cache_pages

    def convert(self, html: str) -> str:
        """One page in this refiner's format (memoised by content: pages recur across questions)."""
        if self.fmt == "html":
            return html
        key = hashlib.sha1(html.encode("utf-8", "surrogatepass")).hexdigest()
        if key in self._done:
            self._done.move_to_end(key)
            return self._done[key]
        out = page_text(html) if self.fmt == "text" else page_markdown(html)
        self._done[key] = out
        if len(self._done) > self._cache_pages:
            self._done.popitem(last=False)
        return out

    def run(self, question: str, pages: Sequence[str | bytes]) -> PipelineResult:
        """The context: every page converted, joined, cut to the budget (``question`` is not used)."""
        t0 = time.perf_counter()
        parts = [self.convert(p) for p in decode_pages(pages)]
        joined = self.separator.join(p for p in parts if p.strip())
        context, tokens = fit_to_budget(joined, self.budget, self.tokenizer)
        return make_result(context, tokens, t0, self.tokenizer)
