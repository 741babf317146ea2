"""The parse of a set of PDFs before and after a parser change: how issue 35's parser rounds were checked.

    python scripts/parse_compare.py dump before.json docs/*.pdf          # with the code before the change
    python scripts/parse_compare.py dump after.json docs/*.pdf           # with the code after it
    python scripts/parse_compare.py diff before.json after.json [--show 20] [--only NAME]

``dump`` parses each PDF (``htmlrag.superrag.parse.document.parse_pdf``, the library's defaults) and writes, per
file, its sections (title, level, page, parent's title, heading source, number of items, a digest of their
paragraphs), each table's page, number of rows, first rows and a digest of its HTML, a digest of all paragraph
text, and the contents entries. Run it with the code to compare on the path (``PYTHONPATH=<a worktree of the
commit>``). ``diff`` prints, per file that changed, the sections gone and new (by title and page), the sections
whose parent changed, the tables gone and new (by page and digest) and whether the paragraph text changed; then
the totals, and with ``--show`` the changed sections and tables themselves.

No model, no torch: the parser alone. ``--workers`` parses files in parallel processes (default: 2).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def dump_one(path: str) -> tuple[str, dict]:
    """One PDF's parse, as :func:`main`'s ``dump`` stores it (keyed by the file's name)."""
    from htmlrag.superrag.parse.document import parse_pdf
    from htmlrag.superrag.parse.model import Paragraph

    doc = parse_pdf(path)
    sections = []
    for s in doc.sections:
        paras = [it.text for it in s.items if isinstance(it, Paragraph)]
        sections.append({"title": s.title, "level": s.level, "page": s.page,
                         "parent": doc.sections[s.parent].title if s.parent is not None else None,
                         "source": s.heading.source if s.heading else None, "items": len(s.items),
                         "paragraphs": _digest("\n".join(paras))})
    text = "\n".join(it.text for s in doc.sections for it in s.items if isinstance(it, Paragraph))
    tables = [{"page": t.page, "rows": len(t.rows), "digest": _digest(t.html),
               "text": " / ".join(" | ".join(c for c in r if c) for r in t.rows[:3])[:160]} for t in doc.tables]
    return Path(path).name, {"sections": sections, "tables": tables,
                             "paragraphs": _digest(text), "toc": [[e.level, e.title, e.page] for e in doc.toc]}


def compare(before: dict, after: dict, only: str = "") -> tuple[list[dict], Counter]:
    """Per file in both dumps (whose name contains ``only``) that changed: sections gone and new (a multiset of
    title and page), parents changed (of sections in both, by title and page), tables and paragraph text changed
    or not; and the totals over the files."""
    rows: list[dict] = []
    total: Counter = Counter()
    for name in sorted(set(before) & set(after)):
        if only not in name:
            continue
        a, b = before[name], after[name]
        ka = Counter((s["title"], s["page"]) for s in a["sections"])
        kb = Counter((s["title"], s["page"]) for s in b["sections"])
        pa = {(s["title"], s["page"]): s["parent"] for s in a["sections"]}
        pb = {(s["title"], s["page"]): s["parent"] for s in b["sections"]}
        row = {"file": name, "gone": sum((ka - kb).values()), "new": sum((kb - ka).values()),
               "parent_changed": sum(1 for k in pa.keys() & pb.keys() if pa[k] != pb[k]),
               "levels_changed": sum(1 for x, y in zip(a["sections"], b["sections"], strict=False)
                                     if (x["title"], x["page"]) == (y["title"], y["page"]) and x["level"] != y["level"]),
               "tables_gone": sum((_tables(a) - _tables(b)).values()),
               "tables_new": sum((_tables(b) - _tables(a)).values()),
               "paragraphs_changed": a["paragraphs"] != b["paragraphs"]}
        if any(row[k] for k in ("gone", "new", "parent_changed", "levels_changed", "tables_gone", "tables_new",
                                "paragraphs_changed")):
            rows.append(row)
            total.update({k: int(row[k]) for k in row if k != "file"} | {"files": 1})
    return rows, total


def _tables(entry: dict) -> Counter:
    """The file's tables as a multiset: page and digest (a dump written before tables had pages: the digest)."""
    return Counter((t["page"], t["digest"]) if isinstance(t, dict) else t for t in entry["tables"])


def _table_lines(entry: dict) -> list[str]:
    return [f"table p{t['page']} ({t['rows']} rows) {t['text']}" if isinstance(t, dict) else f"table {t}"
            for t in entry["tables"]]


def _lines(entry: dict) -> list[str]:
    return [f"{s['level']} p{s['page']} {s['title'][:70]} <- {str(s['parent'])[:40]}" for s in entry["sections"]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="parse PDFs and write their structure")
    d.add_argument("out", type=Path)
    d.add_argument("pdfs", nargs="+")
    d.add_argument("--workers", type=int, default=2)
    c = sub.add_parser("diff", help="compare two dumps")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--only", default="", help="files whose name contains this")
    c.add_argument("--show", type=int, default=0, help="print up to this many changed section lines per file")
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        missing = [p for p in args.pdfs if not Path(p).is_file()]
        if missing:
            print(f"parse_compare: not a file: {', '.join(missing)}", file=sys.stderr)
            return 2
        if args.workers < 1:
            print(f"parse_compare: --workers must be at least 1, not {args.workers}", file=sys.stderr)
            return 2
        with ProcessPoolExecutor(args.workers) as pool:
            parsed = dict(pool.map(dump_one, args.pdfs))
        args.out.write_text(json.dumps(parsed, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"parse_compare: {len(parsed)} files -> {args.out}")
        return 0
    dumps = []
    for p in (args.before, args.after):
        try:
            dumps.append(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, ValueError) as e:
            print(f"parse_compare: cannot read the dump {p}: {e}", file=sys.stderr)
            return 2
    rows, total = compare(dumps[0], dumps[1], args.only)
    for row in rows:
        marks = "paragraphs changed" if row["paragraphs_changed"] else ""
        print(f"{row['file'][:40]:40s} gone {row['gone']:4d}  new {row['new']:4d}  parent changed "
              f"{row['parent_changed']:4d}  levels changed {row['levels_changed']:4d}  tables gone "
              f"{row['tables_gone']:3d} new {row['tables_new']:3d}  {marks}")
        if args.show:
            a, b = dumps[0][row["file"]], dumps[1][row["file"]]
            for old, new in ((_lines(a), _lines(b)), (_table_lines(a), _table_lines(b))):
                diff = [x for x in difflib.unified_diff(old, new, lineterm="", n=0)
                        if x[:1] in "+-" and x[:3] not in ("---", "+++")]
                for x in diff[: args.show]:
                    print("    " + x)
    print(f"total: {total['files']} files changed; sections gone {total['gone']}, new {total['new']}, parent "
          f"changed {total['parent_changed']}, level changed {total['levels_changed']}; tables gone "
          f"{total['tables_gone']}, new {total['tables_new']}; paragraph text changed in "
          f"{total['paragraphs_changed']} files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
