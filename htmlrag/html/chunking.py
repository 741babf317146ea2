"""Plain chunk-and-rerank contexts (the baseline family the HtmlRAG paper compares against).

:func:`section_chunks` splits a cleaned page into text chunks: a new section starts at every ``h1``-``h4``
heading, and each section is cut into chunks of at most ``max_words`` words (at sentence-ish boundaries
when possible). :func:`chunk_tree` wraps chunks as ``<p>`` blocks so the same rankers and the same exact
budget pruning apply; the context is plain text, one chunk per line, in document order.
"""

from __future__ import annotations

import html as html_lib
import re

import lxml.etree as etree

from htmlrag.html.blocktree import BlockTree, build_block_tree
from htmlrag.html.formats import html_to_text
from htmlrag.html.parse import parse_html

_HEADING = re.compile(r"^h[1-4]$")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def section_chunks(html: str, max_words: int = 128) -> list[str]:
    """Text chunks of a page: sections split at h1-h4, then cut to at most ``max_words`` words."""
    root = parse_html(html)
    if root is None:
        return []
    sections: list[list[str]] = [[]]  # headings start new sections
    for event, el in etree.iterwalk(root, events=("start", "end")):
        tag = el.tag if isinstance(el.tag, str) else ""
        if event == "start":
            if _HEADING.match(tag):
                sections.append([])
            sections[-1].append(" ")
            if el.text:
                sections[-1].append(el.text)
            if tag == "img" and el.get("alt"):
                sections[-1].append(el.get("alt"))
        else:
            sections[-1].append(" ")
            if el.tail and el is not root:
                sections[-1].append(el.tail)
    chunks: list[str] = []
    for sec in sections:
        text = " ".join("".join(sec).split())
        if not text:
            continue
        chunks.extend(cut_words(text, max_words))
    return chunks


def cut_words(text: str, max_words: int) -> list[str]:
    """``text`` in pieces of at most ``max_words`` whitespace words, cut at sentence ends where one fits (a
    sentence longer than ``max_words`` is cut inside)."""
    out: list[str] = []
    cur: list[str] = []
    for sent in _SENTENCE_END.split(text):
        words = sent.split()
        at = 0  # an offset, not slices: a sentence of n words is cut in O(n)
        while at < len(words):
            room = max_words - len(cur)
            if len(words) - at <= room:
                cur.extend(words[at:])
                at = len(words)
            elif cur:
                out.append(" ".join(cur))
                cur = []
            else:
                out.append(" ".join(words[at : at + max_words]))
                at += max_words
    if cur:
        out.append(" ".join(cur))
    return out


def chunk_tree(chunks: list[str], page: int = 0) -> BlockTree:
    """A block tree whose blocks are exactly ``chunks`` (each a ``<p>``), for ranking and budget pruning."""
    body = "".join(f"<p>{html_lib.escape(c, quote=False)}</p>" for c in chunks)
    big = max((len(c.split()) for c in chunks), default=1)
    # max_words = the longest chunk: the body (all chunks) is split and every <p> becomes one leaf block
    return build_block_tree(f"<html><body>{body}</body></html>", max_words=max(1, big), page=page)


def chunks_to_text(html: str) -> str:
    """The plain-text context of pruned chunk pages."""
    return html_to_text(html)
