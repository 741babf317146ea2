"""Print the name each PDF gives itself (cover page, else metadata title, else the file name's owner).

This is the name the corpus puts in the header of every chunk it embeds
(:attr:`htmlrag.superrag.build.corpus.CorpusConfig.doc_header`); run it on a new corpus to see what its
chunks will be headed with.

Usage::

    python scripts/doc_names.py data/pdfs/docs ../shared/data/pdf/sec-10-q/docs ../shared/data/pdf/sec-10-q-more/docs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main() -> int:
    from htmlrag.superrag.build.owners import owner_of
    from htmlrag.superrag.parse.names import pdf_name

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", type=Path, nargs="+", help="folders of PDFs (or PDF files)")
    args = ap.parse_args()
    pdfs = [p for f in args.folders for p in (sorted(f.glob("*.pdf")) if f.is_dir() else [f])]
    print("| file | metadata title | name from the document | header name |")
    print("|---|---|---|---|")
    for pdf in pdfs:
        meta, name = pdf_name(str(pdf))
        print(f"| {pdf.name} | {meta} | {name} | {name or owner_of(pdf.name)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
