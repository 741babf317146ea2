"""Fingerprints of our outputs on real pages, to check that a refactor changes nothing (or to count what a fix
changes).

``contexts`` (default): BM25 contexts of the first ``--limit`` (60) questions of ``../shared/data/wtq-html-qa``
at budgets 512/1024/2048/4096 in the formats ``--formats`` (html, text), with ``scripts/bench_prune.py``'s
settings for BM25 (the pipeline's defaults, blocks of 128 words, page prior 0.5, split-to-fill 4; Mistral-7B's
tokenizer). Printed: the SHA-1 of all contexts concatenated in the order budget, format, question (the form
earlier commits quote: ``147fb192...`` from fca990b to ce682f3 for 60 questions, html and text).

``clean``: the cleaned HTML (``clean_html``), with links kept (``keep_href``) and hidden text kept
(``keep_hidden``), and the word counts cleaning hands to the block tree (``clean_page_counted``), of every
page of bench_clean's set (readability-pages, article-extraction-benchmark) and of the WTQ pages. Printed:
one SHA-1 over them all.

``--out FILE`` writes one digest per item (JSON), so two runs can be compared item by item
(``--diff OLD.json NEW.json``).

    PYTHONPATH=$PWD python scripts/hash_contexts.py contexts --out /tmp/ctx.json
    PYTHONPATH=$PWD python scripts/hash_contexts.py clean --out /tmp/clean.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "scripts"))


def context_digests(limit: int, budgets: list[int], formats: list[str]) -> tuple[str, dict[str, str]]:
    """(SHA-1 of all contexts in order budget, format, question; per-item SHA-1 keyed ``budget/fmt/id``)."""
    from bench_prune import load_items  # a sibling script

    from htmlrag.factory import make_pipeline, make_ranker
    from htmlrag.pruning.tokens import load_tokenizer

    tok = load_tokenizer()
    items = load_items(SHARED / "wtq-html-qa", limit)
    ranker = make_ranker("bm25", page_prior=0.5)
    whole = hashlib.sha1()
    per: dict[str, str] = {}
    for b in budgets:
        for fmt in formats:
            pipe = make_pipeline(ranker, None, tok, budget2=b, max_words1=128, fmt=fmt)
            for it in items:
                data = pipe.run(it["question"], it["pages"]).context.encode()
                whole.update(data)
                per[f"{b}/{fmt}/{it['id']}"] = hashlib.sha1(data).hexdigest()
    return whole.hexdigest(), per


def clean_digests() -> tuple[str, dict[str, str]]:
    """(SHA-1 over every page's cleaned outputs; per-page SHA-1 keyed by the page's path)."""
    from bench_clean import find_pages, load  # a sibling script

    from htmlrag.html.clean import clean_html, clean_page_counted

    pages = find_pages([str(SHARED / d) for d in ("readability-pages", "article-extraction-benchmark",
                                                  "wtq-html-qa")])
    whole = hashlib.sha1()
    per: dict[str, str] = {}
    for p in pages:
        raw = load(p)
        h = hashlib.sha1()
        for kw in ({}, {"keep_href": True}, {"keep_hidden": True}):
            h.update(clean_html(raw, **kw).encode() + b"\0")
        html, root, counts = clean_page_counted(raw)
        if root is not None:
            words = [counts.by_id[id(e)] for e in root.iter()] if counts is not None else None
            h.update(json.dumps([html, words]).encode())
        whole.update(h.digest())
        per[str(p.relative_to(SHARED))] = h.hexdigest()
    return whole.hexdigest(), per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="?", choices=("contexts", "clean"), default="contexts")
    ap.add_argument("--limit", type=int, default=60, help="WTQ questions (contexts)")
    ap.add_argument("--budgets", default="512,1024,2048,4096")
    ap.add_argument("--formats", default="html,text")
    ap.add_argument("--out", help="write the per-item digests here (JSON)")
    ap.add_argument("--diff", nargs=2, metavar=("OLD", "NEW"), help="compare two --out files and exit")
    args = ap.parse_args()
    if args.diff:
        old, new = (json.loads(Path(f).read_text(encoding="utf-8")) for f in args.diff)
        changed = sorted(k for k in old if old[k] != new.get(k))
        print(f"{len(changed)} of {len(old)} items differ")
        for k in changed:
            print(k)
        return
    if args.what == "contexts":
        total, per = context_digests(args.limit, [int(b) for b in args.budgets.split(",")],
                                     args.formats.split(","))
    else:
        total, per = clean_digests()
    if args.out:
        Path(args.out).write_text(json.dumps(per, indent=0), encoding="utf-8")
    print(f"{args.what}: {len(per)} items, sha1 {total}")


if __name__ == "__main__":
    main()
