"""From a parsed PDF to the nodes and edges of the layout-aware graph.

Node ids are ``<doc_id>:<kind>:<n>``.

Chunking: body paragraphs are packed in reading order into SectionChunks of at most ``chunk_words`` words (a
longer paragraph is cut at word boundaries). A section's text is cut into chunks of equal size (315 words at
150: three of 105, not 150 + 150 + 15), so no section leaves a short tail that runs on into the next section.
A section boundary closes the chunk being packed only when it already holds ``min_chunk_words`` words; a
shorter one runs on into the next section, with that section's heading kept in its text (so a document cut
into many small sections by its headings does not become many tiny chunks). Tables and figures between
paragraphs do not close a chunk. A chunk hangs (``IS_UNDER``) under the section it starts in and under every
later section whose text it holds, so each section still reaches its text; its title is the title path
(``Item 2 > Gross Margin``, up to ``title_depth`` levels, 3 by default) of the section that holds most of its
words, embedded with its text (a chunk of 15 words of "Divestitures" and 135 of "Note 9: Borrowings" is titled
by the borrowings).

A table becomes a Table node (full HTML) and TableChunks of at most ``table_rows`` body rows, each repeating
the table's heading rows (:func:`header_rows`: the leading rows without a value, e.g. "Three Months Ended" /
"July 1, 2023"). ``HAS_NEXT`` links pages, sections (reading order), SectionChunks, the TableChunks of a
table, and a table to the next table when it sits on the following page with the same number of columns (a
table continued over a page break).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from htmlrag.superrag.graph.store import node_row
from htmlrag.superrag.parse.model import FigureItem, Paragraph, ParsedDocument, TableItem
from htmlrag.superrag.parse.tables import rows_to_html, rows_to_text


@dataclass
class GraphDoc:
    """Nodes by label and edges by (rel, src label, dst label), plus the content to index."""

    doc_id: str
    nodes: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    edges: dict[tuple[str, str, str], list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))

    def add(self, label: str, **props: Any) -> str:
        self.nodes[label].append(node_row(kind=label, doc_id=self.doc_id, **props))
        return props["id"]

    def link(self, rel: str, src: tuple[str, str], dst: tuple[str, str], score: float = 1.0) -> None:
        self.edges[(rel, src[0], dst[0])].append({"src": src[1], "dst": dst[1], "score": float(score)})

    def content(self, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
        """Rows of the given labels, in insertion order."""
        return [r for k in kinds for r in self.nodes.get(k, [])]


def section_paths(doc: ParsedDocument, depth: int = 3) -> list[str]:
    """Each section's title path (at most ``depth`` titles, outermost first), joined by `` > ``."""
    out: list[str] = []
    for sec in doc.sections:
        chain, j = [sec.title], sec.parent
        while j is not None and len(chain) < depth:
            chain.append(doc.sections[j].title)
            j = doc.sections[j].parent
        out.append(" > ".join(t for t in reversed(chain) if t))
    return out


@dataclass
class _Chunk:
    """A SectionChunk being packed: words, pages, the section it starts in and its reading-order position."""

    section: int
    ord: int
    words: list[str] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)
    more: list[int] = field(default_factory=list)  # later sections whose text it also holds
    counts: dict[int, int] = field(default_factory=dict)  # words per section (headings kept in the text included)

    def add(self, section: int, words: list[str]) -> None:
        self.words += words
        self.counts[section] = self.counts.get(section, 0) + len(words)

    @property
    def main(self) -> int:
        """The section holding most of the chunk's words (the first of equals): it names the chunk."""
        return max(self.counts, key=lambda s: (self.counts[s], -s)) if self.counts else self.section


def pack_chunks(doc: ParsedDocument, chunk_words: int, min_words: int) -> list[_Chunk]:
    """Body text packed into chunks of at most ``chunk_words`` words (see the module docstring)."""
    out: list[_Chunk] = []
    cur: _Chunk | None = None
    for si, sec in enumerate(doc.sections):
        if cur is not None and len(cur.words) >= min_words:
            out.append(cur)
            cur = None
        if cur is not None:  # a short section's text runs on: keep the heading in the text
            cur.add(si, sec.title.split())
            cur.pages.append(sec.page)
            cur.more.append(si)
        size = _even_size((len(cur.words) if cur else 0)
                          + sum(len(it.text.split()) for it in sec.items if isinstance(it, Paragraph)), chunk_words)
        for pos, item in enumerate(sec.items):
            if not isinstance(item, Paragraph):
                continue
            words = item.text.split()
            while words:
                if cur is None:
                    cur = _Chunk(si, si * 10_000 + pos)
                room = size - len(cur.words)
                if room <= 0:
                    out.append(cur)
                    cur = None
                    continue
                cur.add(si, words[:room])
                cur.pages.append(item.page)
                words = words[room:]
    if cur is not None and cur.words:
        out.append(cur)
    return out


def _even_size(total: int, most: int) -> int:
    """The size of each of the fewest chunks of at most ``most`` words that hold ``total`` words, as equal as
    they can be (315 at 150: 105)."""
    parts = max(1, -(-total // most))
    return max(1, -(-total // parts))


def company_id(name: str) -> str:
    """The node id of a Company: ``company:`` and the name's letters and digits, lower case."""
    return "company:" + ("".join(c.lower() if c.isalnum() else "_" for c in name).strip("_") or "unnamed")


def flat_chunks(doc: ParsedDocument, words: int) -> list[tuple[str, int]]:
    """(text, page) windows of at most ``words`` words of each page's plain text; none crosses a page."""
    out: list[tuple[str, int]] = []
    for pno, text in enumerate(doc.page_texts, start=1):
        toks = text.split()
        out += [(" ".join(toks[i : i + words]), pno) for i in range(0, len(toks), words)]
    return out


def document_graph(doc: ParsedDocument, *, corpus_id: str = "corpus", chunk_words: int = 150,
                   min_chunk_words: int = 75, table_rows: int = 15, company: str | None = None,
                   flat_words: int = 0, title_depth: int = 3) -> GraphDoc:
    """All nodes and structural edges of one document (similarity and stem edges are added separately).

    ``company``: the owner's name; the Document goes under ``Company`` node :func:`company_id` (which the
    caller creates once per corpus) instead of directly under the Corpus. ``flat_words`` > 0 also adds the
    non-layout baseline's FlatChunks (:func:`flat_chunks`), linked by ``HAS_NEXT`` in page order.
    ``title_depth``: the most titles in a section's title path (:func:`section_paths`), which is the text of
    its Section node and the title of its SectionChunks and TableChunks.
    """
    g = GraphDoc(doc.doc_id)
    d = doc.doc_id
    g.add("Document", id=d, title=doc.title, text=doc.path, page_start=1, page_end=doc.page_count)
    if company:
        g.link("IS_UNDER", ("Document", d), ("Company", company_id(company)))
    else:
        g.link("IS_UNDER", ("Document", d), ("Corpus", corpus_id))
    prev_page: str | None = None
    for p in doc.pages:
        pid = g.add("Page", id=f"{d}:page:{p.number}", title=p.printed, page_start=p.number, page_end=p.number,
                    ord=p.number)
        g.link("IS_UNDER", ("Page", pid), ("Document", d))
        if prev_page:
            g.link("HAS_NEXT", ("Page", prev_page), ("Page", pid))
        prev_page = pid
    toc_text = "\n".join(f"{'  ' * (e.level - 1)}{e.title} .... {e.printed_page or e.page or ''}" for e in doc.toc)
    toc = g.add("TableOfContents", id=f"{d}:toc", title=f"Contents of {doc.title}", text=toc_text,
                page_start=min((e.page for e in doc.toc if e.page), default=0))
    g.link("IS_UNDER", ("TableOfContents", toc), ("Document", d))

    def page_id(n: int) -> tuple[str, str]:
        return ("Page", f"{d}:page:{n}")

    sec_ref: list[tuple[str, str]] = []
    counters: dict[str, int] = defaultdict(int)
    prev_table: tuple[str, TableItem] | None = None
    prev_sec: tuple[str, str] | None = None

    def new_id(kind: str) -> str:
        counters[kind] += 1
        return f"{d}:{kind.lower()}:{counters[kind]}"

    paths = section_paths(doc, title_depth)
    for si, sec in enumerate(doc.sections):
        label = "MainSection" if sec.parent is None else "Section"
        pages = [i.page for i in sec.items] or [sec.page]
        sid = g.add(label, id=new_id(label), title=sec.title, level=sec.level, page_start=sec.page,
                    page_end=max(pages), ord=si * 10_000, text=paths[si])
        ref = (label, sid)
        sec_ref.append(ref)
        g.link("IS_UNDER", ref, ("TableOfContents", toc) if sec.parent is None else sec_ref[sec.parent])
        g.link("ON_PAGE", ref, page_id(sec.page))
        if prev_sec is not None:
            g.link("HAS_NEXT", prev_sec, ref)
        prev_sec = ref
        for order, item in enumerate(sec.items):
            if isinstance(item, TableItem):
                tid = _add_table(g, item, paths[si] or sec.title, ref, page_id(item.page), si * 10_000 + order,
                                 table_rows)
                if prev_table and prev_table[1].page + 1 == item.page and \
                        max(map(len, prev_table[1].rows)) == max(map(len, item.rows)):
                    g.link("HAS_NEXT", ("Table", prev_table[0]), ("Table", tid))
                prev_table = (tid, item)
            elif isinstance(item, FigureItem):
                fid = g.add("Figure", id=new_id("Figure"), title=item.caption, level=sec.level,
                            text="\n".join(x for x in (item.caption, item.text) if x), page_start=item.page,
                            page_end=item.page, ord=si * 10_000 + order,
                            html=",".join(f"{v:.1f}" for v in item.bbox))
                g.link("IS_UNDER", ("Figure", fid), ref)
                g.link("ON_PAGE", ("Figure", fid), page_id(item.page))
    _add_chunks(g, pack_chunks(doc, chunk_words, min_chunk_words), doc, sec_ref, paths)
    if flat_words > 0:
        _add_flat(g, flat_chunks(doc, flat_words))
    return g


def _add_flat(g: GraphDoc, chunks: list[tuple[str, int]]) -> None:
    prev: str | None = None
    for n, (text, page) in enumerate(chunks, start=1):
        fid = g.add("FlatChunk", id=f"{g.doc_id}:flatchunk:{n}", title="", text=text, page_start=page,
                    page_end=page, ord=n)
        g.link("IS_UNDER", ("FlatChunk", fid), ("Document", g.doc_id))
        g.link("ON_PAGE", ("FlatChunk", fid), ("Page", f"{g.doc_id}:page:{page}"))
        if prev:
            g.link("HAS_NEXT", ("FlatChunk", prev), ("FlatChunk", fid))
        prev = fid


def _add_chunks(g: GraphDoc, chunks: list[_Chunk], doc: ParsedDocument, sec_ref: list[tuple[str, str]],
                paths: list[str]) -> None:
    """SectionChunk nodes under the section each starts in, linked to their pages and to the next chunk."""
    prev: str | None = None
    for n, ch in enumerate(chunks, start=1):
        cid = f"{g.doc_id}:sectionchunk:{n}"
        p0, p1 = min(ch.pages), max(ch.pages)
        g.add("SectionChunk", id=cid, title=paths[ch.main], text=" ".join(ch.words), page_start=p0,
              page_end=p1, ord=ch.ord, level=doc.sections[ch.main].level)
        for si in dict.fromkeys([ch.section, *ch.more]):
            g.link("IS_UNDER", ("SectionChunk", cid), sec_ref[si])
        for p in range(p0, p1 + 1):
            g.link("ON_PAGE", ("SectionChunk", cid), ("Page", f"{g.doc_id}:page:{p}"))
        if prev:
            g.link("HAS_NEXT", ("SectionChunk", prev), ("SectionChunk", cid))
        prev = cid


_VALUE = re.compile(r"^[($€£¥-]*\d[\d,.]*\s*%?\)?$")


def header_rows(rows: list[list[str]], most: int = 3) -> int:
    """How many leading rows are column headings: rows with no value cell (a number that is not a year
    1900-2100), at most ``most``, at least 1."""
    n = 0
    for r in rows[:most]:
        values = [c for c in r if _VALUE.match(c.strip()) and not (len(c.strip()) == 4 and 1900 <= int(c) <= 2100
                                                                  if c.strip().isdigit() else False)]
        if values:
            break
        n += 1
    return max(1, min(n, len(rows) - 1)) if len(rows) > 1 else 1


def _add_table(g: GraphDoc, t: TableItem, title_path: str, parent: tuple[str, str], page: tuple[str, str],
               order: int, table_rows: int) -> str:
    tid = f"{g.doc_id}:table:{t.index + 1}"
    title = " > ".join(x for x in (title_path, t.caption) if x)
    g.add("Table", id=tid, title=title, text=rows_to_text(t.rows), html=t.html, page_start=t.page,
          page_end=t.page, ord=order)
    g.link("IS_UNDER", ("Table", tid), parent)
    g.link("ON_PAGE", ("Table", tid), page)
    nh = header_rows(t.rows)
    head, body = t.rows[:nh], t.rows[nh:]
    prev: str | None = None
    for j in range(0, max(len(body), 1), table_rows):
        rows = [*head, *body[j : j + table_rows]]
        cid = f"{tid}:chunk:{j // table_rows + 1}"
        g.add("TableChunk", id=cid, title=title, text=rows_to_text(rows), html=rows_to_html(rows, t.caption),
              page_start=t.page, page_end=t.page, ord=order * 1000 + j)
        g.link("IS_UNDER", ("TableChunk", cid), ("Table", tid))
        g.link("ON_PAGE", ("TableChunk", cid), page)
        if prev:
            g.link("HAS_NEXT", ("TableChunk", prev), ("TableChunk", cid))
        prev = cid
    return tid
