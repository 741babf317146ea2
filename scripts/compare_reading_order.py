"""Our layout parser's reading-order text against pdfplumber's and pypdf's, page by page, on the same PDFs.

For every page: the words of our parse that sit on it (headings, paragraphs, table rows, figure text, in our
reading order; running headers/footers and ToC rows are dropped by design), pdfplumber's ``extract_text()`` and
pypdf's ``extract_text()``. Printed per file: mean NID (:func:`htmlrag.evaluation.parse_quality.nid`) of ours against
each peer and of the two peers against each other (what agreement between two plain extractors looks like),
the share of the peers' words that our parse keeps (bag of words; words both peers have), and the pages where
ours departs most, with the words it lost (in both peers, not in ours) and the words it added.

pdfplumber and pypdf are benchmark-only (not dependencies): ``pip install pdfplumber pypdf``.

Usage::

    python scripts/compare_reading_order.py ../shared/data/pdf/sec-10-q-more/docs/*.pdf --worst 3
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def our_pages(path: Path) -> dict[int, str]:
    """Our parse's text per physical page (1-based), in reading order."""
    from htmlrag.superrag.parse import parse_pdf
    from htmlrag.superrag.parse.model import FigureItem, Paragraph, TableItem

    doc = parse_pdf(path)
    out: dict[int, list[str]] = {p.number: [] for p in doc.pages}
    for sec in doc.sections:
        if sec.heading is not None:
            out[sec.heading.page].append(sec.title)
        for it in sec.items:
            if isinstance(it, Paragraph):
                out[it.page].append(it.text)
            elif isinstance(it, TableItem):
                out[it.page] += [" ".join(r) for r in it.rows]
            elif isinstance(it, FigureItem):
                out[it.page] += [x for x in (it.caption, it.text) if x]
    return {p: "\n".join(t) for p, t in out.items()}


def peer_pages(path: Path) -> dict[str, dict[int, str]]:
    """pdfplumber's and pypdf's text per physical page."""
    import pdfplumber
    import pypdf

    with pdfplumber.open(str(path)) as pdf:
        plumber = {i: p.extract_text() or "" for i, p in enumerate(pdf.pages, start=1)}
    reader = pypdf.PdfReader(str(path))
    return {"pdfplumber": plumber, "pypdf": {i: p.extract_text() or "" for i, p in enumerate(reader.pages, start=1)}}


def compare(path: Path, worst: int) -> dict[str, float]:
    from htmlrag.evaluation.parse_quality import nid, tokens

    ours = our_pages(path)
    peers = peer_pages(path)
    rows = []
    for p, text in ours.items():
        a, b = peers["pdfplumber"].get(p, ""), peers["pypdf"].get(p, "")
        both = Counter(tokens(a)) & Counter(tokens(b))
        mine = Counter(tokens(text))
        kept = sum((both & mine).values()) / max(sum(both.values()), 1)
        rows.append({"page": p, "plumber": nid(a, text), "pypdf": nid(b, text), "peers": nid(a, b), "kept": kept,
                     "lost": both - mine, "added": mine - (Counter(tokens(a)) | Counter(tokens(b)))})
    mean = {k: sum(r[k] for r in rows) / max(len(rows), 1) for k in ("plumber", "pypdf", "peers", "kept")}
    print(f"\n{path.name}: {len(rows)} pages; NID ours~pdfplumber {mean['plumber']:.3f}, ours~pypdf "
          f"{mean['pypdf']:.3f}, pdfplumber~pypdf {mean['peers']:.3f}; words of both peers kept by ours "
          f"{mean['kept']:.3f}")
    for r in sorted(rows, key=lambda r: r["kept"] + r["plumber"])[:worst]:
        lost = " ".join(w for w, _ in r["lost"].most_common(25))
        added = " ".join(w for w, _ in r["added"].most_common(12))
        print(f"  p{r['page']:<3d} NID {r['plumber']:.2f}/{r['pypdf']:.2f} (peers {r['peers']:.2f}) kept "
              f"{r['kept']:.2f}; lost ({sum(r['lost'].values())}): {lost}; added: {added}")
    return mean


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pdfs", nargs="+", type=Path)
    ap.add_argument("--worst", type=int, default=3, help="pages to show per file, where ours departs most")
    args = ap.parse_args()
    means = [compare(p, args.worst) for p in args.pdfs]
    if len(means) > 1:
        avg = {k: sum(m[k] for m in means) / len(means) for k in means[0]}
        print(f"\nall {len(means)} files (mean of file means): NID ours~pdfplumber {avg['plumber']:.3f}, ours~pypdf "
              f"{avg['pypdf']:.3f}, pdfplumber~pypdf {avg['peers']:.3f}; peers' words kept {avg['kept']:.3f}")
    print(f"(files: {', '.join(os.path.relpath(p.resolve(), ROOT) for p in args.pdfs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
