"""Quickstart without servers or downloads: clean and block-tree the project's sample pages in data/pages.

Writes ``results/quickstart/cleaned/*.html`` and ``results/quickstart/summary.md`` (bytes before/after
cleaning, blocks at 256 and 128 words, losslessness) and prints the summary.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from htmlrag import build_block_tree, check_lossless, clean_html
from htmlrag.core.io import page_stem, read_page

log = logging.getLogger("quickstart")
ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pages", default=str(ROOT / "data" / "pages"))
    ap.add_argument("--out", default=str(ROOT / "results" / "quickstart"))
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    out = Path(args.out)
    (out / "cleaned").mkdir(parents=True, exist_ok=True)
    rows = ["| page | bytes in | bytes out | ratio | blocks@256 | blocks@128 | lossless |", "|---|---:|---:|---:|---:|---:|:-:|"]
    for path in sorted(Path(args.pages).glob("*.html*")):
        raw = read_page(path)
        cleaned = clean_html(raw, name=str(path))
        (out / "cleaned" / f"{page_stem(path)}.html").write_text(cleaned, encoding="utf-8")
        b256 = len(build_block_tree(cleaned, 256))
        b128 = len(build_block_tree(cleaned, 128))
        ok = check_lossless(raw, cleaned).ok
        rows.append(f"| {path.name} | {len(raw)} | {len(cleaned.encode())} | {len(cleaned.encode()) / len(raw):.3f} "
                    f"| {b256} | {b128} | {'yes' if ok else 'NO'} |")
    text = "\n".join(rows) + "\n"
    (out / "summary.md").write_text(text, encoding="utf-8")
    log.info("%s\nwritten to %s", text, out)


if __name__ == "__main__":
    main()
