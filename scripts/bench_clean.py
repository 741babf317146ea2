"""Benchmark: cleaning and block-tree building vs bare lxml and the authors' toolkit, in one run.

For every page of the page sets (default: ``../shared/data/readability-pages`` and
``../shared/data/article-extraction-benchmark``) it measures, on one core:

- ours: ``htmlrag.clean_html(bytes)`` (decoding included) and ``build_block_tree(cleaned, 256)``;
- the floor: bare lxml ``etree.HTMLParser`` parse + ``tostring`` (what any lxml-based cleaner must pay);
- the peer: the authors' toolkit ``htmlrag==0.1.1`` (``clean_html``, ``build_block_tree``), run in a
  separate venv given by ``--peer-python`` (its package has the same import name as ours), on the same
  pages decoded to text by us (its decoding time is not counted).

Printed: pages, MB, cleaning MB/s, block-tree pages/s, output/input size ratio in characters (and tokens
with ``--tokenizer``), the losslessness rate (``htmlrag.check_lossless``) of each cleaner's output, crashes,
and the ratios ours/peer and ours/lxml.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import lxml.etree as etree

from htmlrag import build_block_tree, check_lossless, clean_html
from htmlrag.html.encoding import decode_html

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def find_pages(dirs: list[str]) -> list[Path]:
    """All ``*.html``/``*.html.gz`` pages under ``dirs`` (readability's ``expected.html`` excluded)."""
    out: list[Path] = []
    for d in dirs:
        for p in sorted(Path(d).rglob("*")):
            if p.is_file() and (p.name.endswith(".html") or p.name.endswith(".html.gz")) and "expected" not in p.name:
                out.append(p)
    return out


def load(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="*", default=[str(SHARED / "readability-pages"),
                                                  str(SHARED / "article-extraction-benchmark")])
    ap.add_argument("--peer-python", default=os.environ.get("HTMLRAG_PEER_PYTHON"),
                    help="python of a venv with htmlrag==0.1.1 installed (env HTMLRAG_PEER_PYTHON)")
    ap.add_argument("--max-words", type=int, default=256)
    ap.add_argument("--tokenizer", default=None, help="also report token ratios (e.g. mistral-7b-v0.1)")
    ap.add_argument("--repeat", type=int, default=1, help="timing repetitions (best is kept)")
    args = ap.parse_args()

    pages = find_pages(args.dirs)
    if not pages:
        sys.exit(f"no pages found under {args.dirs}")
    raw = [load(p) for p in pages]
    texts = [decode_html(b, str(p)) for b, p in zip(raw, pages, strict=True)]
    mb = sum(len(b) for b in raw) / 1e6

    # floor: bare lxml parse + serialize
    best_lxml = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        for b in raw:
            root = etree.fromstring(b, etree.HTMLParser(huge_tree=True))
            if root is not None:
                etree.tostring(root, method="html", encoding="unicode")
        best_lxml = min(best_lxml, time.perf_counter() - t0)

    # ours
    best_clean = float("inf")
    cleaned: list[str] = []
    crashes = 0
    for _ in range(args.repeat):
        cleaned, crashes = [], 0
        t0 = time.perf_counter()
        for b, p in zip(raw, pages, strict=True):
            try:
                cleaned.append(clean_html(b, name=str(p)))
            except Exception as exc:  # counted, reported
                crashes += 1
                cleaned.append("")
                print(f"ours crashed on {p}: {exc}", file=sys.stderr)
        best_clean = min(best_clean, time.perf_counter() - t0)
    t0 = time.perf_counter()
    for c in cleaned:
        build_block_tree(c, args.max_words)
    tree_s = time.perf_counter() - t0
    lossless = sum(check_lossless(b, c).ok for b, c in zip(raw, cleaned, strict=True))
    in_chars = sum(len(t) for t in texts)
    ours_ratio = sum(len(c) for c in cleaned) / in_chars

    tok = None
    if args.tokenizer:
        from htmlrag.pruning.tokens import load_tokenizer

        tok = load_tokenizer(args.tokenizer)
        in_tokens = sum(tok.count_many(texts))
        ours_tok_ratio = sum(tok.count_many(cleaned)) / in_tokens

    rows = [("ours (htmlrag-bench)", mb / best_clean, len(pages) / tree_s, ours_ratio,
             ours_tok_ratio if tok else None, lossless / len(pages), crashes)]
    rows.append(("lxml parse+serialize (floor)", mb / best_lxml, None, None, None, None, 0))

    peer = None
    if args.peer_python:
        with tempfile.TemporaryDirectory() as tmp:
            lst = Path(tmp) / "pages.txt"
            paths = []
            for i, t in enumerate(texts):
                f = Path(tmp) / f"{i}.html"
                f.write_text(t, encoding="utf-8")
                paths.append(str(f))
            lst.write_text("\n".join(paths), encoding="utf-8")
            out = Path(tmp) / "peer.jsonl"
            script = ROOT / "scripts" / "peers" / "htmlrag_toolkit.py"
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # never our package in the peer
            subprocess.run([args.peer_python, "-P", str(script), "clean", str(lst), str(out), str(args.max_words)],
                           check=True, cwd=tmp, env=env)
            prow = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
        ok = [r for r in prow if "cleaned" in r]
        ok_mb = sum(len(raw[i]) for i, r in enumerate(prow) if "cleaned" in r) / 1e6
        clean_s = sum(r["clean_s"] for r in ok)
        trees = [r for r in prow if "tree_s" in r]
        peer_crashes = sum(1 for r in prow if "clean_error" in r or "tree_error" in r)
        peer_out = [r.get("cleaned", "") for r in prow]
        peer_lossless = sum(check_lossless(b, c).ok for b, c in zip(raw, peer_out, strict=True) if c)
        peer_ratio = sum(len(c) for c in peer_out) / in_chars
        peer_tok = sum(tok.count_many(peer_out)) / in_tokens if tok else None
        peer = dict(mbps=ok_mb / clean_s, tree_pps=len(trees) / sum(r["tree_s"] for r in trees))
        rows.append(("htmlrag 0.1.1 (authors)", peer["mbps"], peer["tree_pps"], peer_ratio, peer_tok,
                     peer_lossless / len(pages), peer_crashes))
        errs = [r.get("clean_error") or r.get("tree_error") for r in prow if "clean_error" in r or "tree_error" in r]
        for e in sorted(set(errs))[:5]:
            print(f"  peer error: {e[:150]}")

    print(f"\n{len(pages)} pages, {mb:.1f} MB, max_words={args.max_words}, one process\n")
    print("| system | clean MB/s | tree pages/s | out/in chars | out/in tokens | lossless | crashes |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, mbps, tps, ratio, tr, ll, cr in rows:
        f = lambda v, fmt: "-" if v is None else format(v, fmt)  # noqa: E731
        print(f"| {name} | {f(mbps, '.2f')} | {f(tps, '.1f')} | {f(ratio, '.4f')} | {f(tr, '.4f')} | "
              f"{f(ll, '.1%')} | {cr} |")
    print()
    print(f"cleaning: ours is {best_lxml / best_clean:.2f}x the speed of bare lxml parse+serialize "
          f"(lxml is {best_clean / best_lxml:.2f}x faster than ours)")
    if peer:
        print(f"cleaning: ours / htmlrag 0.1.1 = {rows[0][1] / peer['mbps']:.1f}x")
        print(f"block tree: ours / htmlrag 0.1.1 = {rows[0][2] / peer['tree_pps']:.1f}x")
        print(f"output size (chars): ours / htmlrag 0.1.1 = {ours_ratio / rows[2][3]:.2f}")


if __name__ == "__main__":
    main()
