"""HTML pages as the app shows them: facts for the document list, blocks marked in the cleaned page, and table
markup reduced to plain table elements.

Marked pages are only ever served with :data:`SANDBOX_CSP` and shown in ``<iframe sandbox>``: no script runs,
nothing is fetched (images included), and the page cannot reach the app's origin.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import lxml.etree as etree
from lxml import html as lhtml

from htmlrag.html.blocktree import build_block_tree
from htmlrag.html.clean import clean_html
from htmlrag.html.encoding import decode_html
from htmlrag.html.parse import parse_html
from htmlrag.pruning.tokens import load_tokenizer

#: Content-Security-Policy of every response carrying uploaded or pruned HTML.
SANDBOX_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'"

MARK_STYLE = """
[data-hr="kept"]{background:#dcf5dc;outline:2px solid #2e8b3a}
[data-hr="own"]{background:#eef9ee;outline:1px dashed #2e8b3a}
[data-hr="evidence"]{background:#fff3b0;outline:3px solid #e0a800}
body{font-family:system-ui,sans-serif;font-size:14px;line-height:1.4;margin:8px}
table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:2px 4px}
"""
_TABLE_TAGS = frozenset(("table", "caption", "thead", "tbody", "tfoot", "tr", "td", "th", "colgroup", "col"))


def page_facts(data: bytes, name: str, tokenizer: str | None = None) -> dict[str, Any]:
    """Title, blocks (of :data:`EVIDENCE_WORDS` words), tables, headings, words and tokens (raw, cleaned).

    Raises:
        InputError: the page cannot be parsed (the message names it).
    """
    cleaned = clean_html(data, name=name)
    tree = build_block_tree(cleaned, EVIDENCE_WORDS, pack_siblings=True, name=name)
    root = tree.root
    raw_root = parse_html(data, name)
    title = ""
    if raw_root is not None:
        t = raw_root.find(".//title")
        title = " ".join("".join(t.itertext()).split()) if t is not None else ""
    tok = load_tokenizer(tokenizer)
    return {
        "title": title[:200],
        "blocks": len(tree),
        "tables": sum(1 for _ in root.iter("table")) if root is not None else 0,
        "headings": sum(1 for e in root.iter() if e.tag in ("h1", "h2", "h3", "h4", "h5", "h6")) if root is not None else 0,
        "words": sum(b.words for b in tree if b.is_leaf),
        "tokens_raw": tok.count(decode_html(data, name)),  # the one page decoder (UTF-16 pages too)
        "tokens_cleaned": tok.count(cleaned),
    }


#: Block size (words) of HTML pages as evidence: small enough that a block is a passage, not the page.
EVIDENCE_WORDS = 64


def block_tree(data: bytes | str, name: str, max_words: int = EVIDENCE_WORDS, *, pack: bool = True) -> Any:
    """The cleaned page's block tree (the same call every time, so block indices are stable)."""
    return build_block_tree(clean_html(data, name=name), max_words, pack_siblings=pack, name=name)


def mark_blocks(tree: Any, marks: Mapping[Any, str], *, anchor_first: bool = True) -> str:
    """The page of ``tree`` as an HTML document with the given blocks marked.

    Args:
        tree: a :class:`~htmlrag.html.blocktree.BlockTree` (not modified: a copy is marked).
        marks: block -> mark (``kept``, ``own`` for a kept non-leaf block's own text, ``evidence``); keys are
            :class:`~htmlrag.html.blocktree.Block` objects of ``tree`` (or of trees sharing its root).
        anchor_first: give the first marked element (document order) ``id="hr-0"`` so ``#hr-0`` scrolls to it.
    """
    if tree.root is None:
        return f"<!DOCTYPE html><html><head><style>{MARK_STYLE}</style></head><body><p>(empty page)</p></body></html>"
    elements = list(tree.root.iter())
    where = {id(e): i for i, e in enumerate(elements)}
    root = copy.deepcopy(tree.root)
    copies = list(root.iter())
    marked: list[int] = []
    for block, mark in marks.items():
        for el in block.elements:
            i = where.get(id(el))
            if i is not None:
                copies[i].set("data-hr", mark)
                marked.append(i)
    if anchor_first and marked:
        copies[min(marked)].set("id", "hr-0")
    head = root.find("head")
    if head is None:
        head = etree.Element("head")
        root.insert(0, head)
    style = etree.SubElement(head, "style")
    style.text = MARK_STYLE
    meta = etree.Element("meta")
    meta.set("charset", "utf-8")
    head.insert(0, meta)
    html = etree.tostring(root, method="html", encoding="unicode")
    return "<!DOCTYPE html>" + html


def standalone(html: str) -> str:
    """An HTML fragment or page as a document with the marking style (for pruned pages)."""
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>{MARK_STYLE}</style></head>"
            f"<body>{html}</body></html>")


def safe_table_html(html: str) -> str:
    """Table markup reduced to table elements and text (every attribute but numeric colspan/rowspan dropped;
    any other element replaced by its text)."""
    if not html.strip():
        return ""

    try:
        frag = lhtml.fragment_fromstring(html, create_parent="div")
    except (etree.ParserError, ValueError):
        return ""
    for el in list(frag.iter()):
        if el is frag or not isinstance(el.tag, str):
            continue
        if el.tag not in _TABLE_TAGS:
            el.drop_tag()
            continue
        for k in list(el.attrib):
            if not (k in ("colspan", "rowspan") and el.attrib[k].isdigit()):
                del el.attrib[k]
    for el in list(frag.iter()):  # comments, processing instructions
        if not isinstance(el.tag, str):
            el.drop_tree()
    return "".join(etree.tostring(c, method="html", encoding="unicode") for c in frag)
