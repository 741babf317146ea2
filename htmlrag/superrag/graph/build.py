"""From a parsed PDF to the nodes and edges of the layout-aware graph.

Node ids are ``<doc_id>:<kind>:<n>``. Chunking: a section's paragraphs are packed, in reading order, into
SectionChunks of at most ``chunk_words`` words (a longer paragraph is cut at word boundaries); a chunk never
crosses a section. A table becomes a Table node (full HTML) and TableChunks of at most ``table_rows`` rows,
each repeating the table's first row. ``HAS_NEXT`` links pages, SectionChunks (document order, across
sections), the TableChunks of a table, and a table to the next table when it sits on the following page with
the same number of columns (a table continued over a page break).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from htmlrag.superrag.graph.store import node_row
from htmlrag.superrag.model import FigureItem, Paragraph, ParsedDocument, Section, TableItem
from htmlrag.superrag.tables import rows_to_html, rows_to_text


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


def _words_chunks(paragraphs: list[Paragraph], limit: int) -> list[tuple[str, int, int]]:
    """(text, first page, last page) chunks of at most ``limit`` words."""
    out: list[tuple[str, int, int]] = []
    words: list[str] = []
    pages: list[int] = []
    for p in paragraphs:
        pw = p.text.split()
        while pw:
            room = limit - len(words)
            if room <= 0:
                out.append((" ".join(words), min(pages), max(pages)))
                words, pages = [], []
                continue
            words += pw[:room]
            pages.append(p.page)
            pw = pw[room:]
    if words:
        out.append((" ".join(words), min(pages), max(pages)))
    return out


def document_graph(doc: ParsedDocument, *, corpus_id: str = "corpus", chunk_words: int = 150,
                   table_rows: int = 15) -> GraphDoc:
    """All nodes and structural edges of one document (similarity and stem edges are added separately)."""
    g = GraphDoc(doc.doc_id)
    d = doc.doc_id
    g.add("Document", id=d, title=doc.title, text=doc.path, page_start=1, page_end=doc.page_count)
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
    prev_chunk: str | None = None
    prev_table: tuple[str, TableItem] | None = None

    def new_id(kind: str) -> str:
        counters[kind] += 1
        return f"{d}:{kind.lower()}:{counters[kind]}"

    for si, sec in enumerate(doc.sections):
        label = "MainSection" if sec.parent is None else "Section"
        pages = [i.page for i in sec.items] or [sec.page]
        sid = g.add(label, id=new_id(label), title=sec.title, level=sec.level, page_start=sec.page,
                    page_end=max(pages), ord=si)
        ref = (label, sid)
        sec_ref.append(ref)
        g.link("IS_UNDER", ref, ("TableOfContents", toc) if sec.parent is None else sec_ref[sec.parent])
        g.link("ON_PAGE", ref, page_id(sec.page))
        paras: list[Paragraph] = []
        order = 0

        for item in sec.items:
            if isinstance(item, Paragraph):
                paras.append(item)
                continue
            order, prev_chunk = _flush(g, paras, sec, si, ref, order, prev_chunk, chunk_words)
            if isinstance(item, TableItem):
                tid = _add_table(g, item, sec.title, ref, page_id(item.page), si * 10_000 + order, table_rows)
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
            order += 1
        order, prev_chunk = _flush(g, paras, sec, si, ref, order, prev_chunk, chunk_words)
    return g


def _flush(g: GraphDoc, paras: list[Paragraph], sec: Section, si: int, ref: tuple[str, str], order: int,
           prev_chunk: str | None, chunk_words: int) -> tuple[int, str | None]:
    """Turn the pending paragraphs of a section into SectionChunks; returns the new (order, last chunk)."""
    for text, p0, p1 in _words_chunks(paras, chunk_words):
        cid = f"{g.doc_id}:sectionchunk:{len(g.nodes['SectionChunk']) + 1}"
        g.add("SectionChunk", id=cid, title=sec.title, text=text, page_start=p0, page_end=p1,
              ord=si * 10_000 + order, level=sec.level)
        order += 1
        g.link("IS_UNDER", ("SectionChunk", cid), ref)
        for n in range(p0, p1 + 1):
            g.link("ON_PAGE", ("SectionChunk", cid), ("Page", f"{g.doc_id}:page:{n}"))
        if prev_chunk:
            g.link("HAS_NEXT", ("SectionChunk", prev_chunk), ("SectionChunk", cid))
        prev_chunk = cid
    paras.clear()
    return order, prev_chunk


def _add_table(g: GraphDoc, t: TableItem, section_title: str, parent: tuple[str, str], page: tuple[str, str],
               order: int, table_rows: int) -> str:
    tid = f"{g.doc_id}:table:{t.index + 1}"
    title = t.caption or section_title
    g.add("Table", id=tid, title=title, text=rows_to_text(t.rows), html=t.html, page_start=t.page,
          page_end=t.page, ord=order)
    g.link("IS_UNDER", ("Table", tid), parent)
    g.link("ON_PAGE", ("Table", tid), page)
    head, body = t.rows[0], t.rows[1:]
    prev: str | None = None
    for j in range(0, max(len(body), 1), table_rows):
        rows = [head, *body[j : j + table_rows]]
        cid = f"{tid}:chunk:{j // table_rows + 1}"
        g.add("TableChunk", id=cid, title=title, text=rows_to_text(rows), html=rows_to_html(rows, t.caption),
              page_start=t.page, page_end=t.page, ord=order * 1000 + j)
        g.link("IS_UNDER", ("TableChunk", cid), ("Table", tid))
        g.link("ON_PAGE", ("TableChunk", cid), page)
        if prev:
            g.link("HAS_NEXT", ("TableChunk", prev), ("TableChunk", cid))
        prev = cid
    return tid
