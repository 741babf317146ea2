"""Parser quality of our layout parser against ground truth, with PyPI parsers run on the same files in the same run.

Files: the 5 docling PDFs in ``../shared/data/pdf/docling`` (truth: their docling JSON, read with
``docling-core``), and PDFs generated here with known content (:mod:`htmlrag.testing.pdfs`: a report with
a ruled table, a two-column page, a contents page, unruled and shaded statement tables; truth: what was drawn).
Measures (:mod:`htmlrag.evaluation.parse_quality`): NID over the reading-order text (tables included, row by row), TEDS
and TEDS-S over tables (a parser without table output scores 0 on files that have tables; "-" when a file has
none), heading recall/precision (parsers that mark no headings: "-"), seconds per file.

Peers run in a SEPARATE virtual environment (never ours), each in its own subprocess
(``scripts/peers/parse_peers.py``); the docling truth is read there too::

    python3 -m venv /tmp/parse-peers
    /tmp/parse-peers/bin/pip install pymupdf4llm pdfplumber pypdf pdfminer.six pypdfium2 docling-core
    python scripts/bench_parse.py --peer-python /tmp/parse-peers/bin/python

Without ``--peer-python`` (or ``PARSE_PEER_PYTHON``) only the generated files are scored, ours alone.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "pdf"
PEERS = ("pymupdf4llm", "pdfplumber", "pypdf", "pdfminer", "pypdfium2")


def ours(path: Path) -> dict[str, Any]:
    """Our parse of one PDF as reading-order text, headings and tables (rows of cells)."""
    from htmlrag.superrag.parse.document import parse_pdf
    from htmlrag.superrag.parse.model import FigureItem, Paragraph, TableItem

    t0 = time.perf_counter()
    doc = parse_pdf(path)
    secs = time.perf_counter() - t0
    text: list[str] = []
    for sec in doc.sections:
        if sec.heading is not None:
            text.append(sec.title)
        for it in sec.items:
            if isinstance(it, Paragraph):
                text.append(it.text)
            elif isinstance(it, TableItem):
                text += [" ".join(r) for r in it.rows]
            elif isinstance(it, FigureItem):
                text += [x for x in (it.caption, it.text) if x]
    return {"text": "\n".join(text), "headings": [h.text for h in doc.headings], "tables": [t.rows for t in doc.tables],
            "seconds": secs}


def run_peer(python: str, parser: str, paths: list[Path]) -> dict[str, dict[str, Any]]:
    """One peer over all files in a subprocess of the peer environment; rows by path."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.jsonl"
        cmd = [python, "-P", str(ROOT / "scripts" / "peers" / "parse_peers.py"), parser, str(out), *map(str, paths)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"peer {parser} failed: {proc.stderr[-2000:]}")
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {r["path"]: r for r in rows}


def score(truth: dict[str, Any], got: dict[str, Any], marks_headings: bool, has_tables: bool) -> dict[str, float]:
    from htmlrag.evaluation.parse_quality import heading_scores, match_tables, nid

    if got.get("error"):
        return {"nid": 0.0, "teds": 0.0, "teds_s": 0.0, "h_rec": 0.0, "h_prec": 0.0, "seconds": float("nan")}
    out = {"nid": nid(truth["text"], got["text"]), "seconds": float(got.get("seconds", float("nan")))}
    ref_tables = truth["tables"]
    if ref_tables:
        pred = got["tables"] if has_tables else []
        out["teds"] = float(np.mean(match_tables(ref_tables, pred)))
        out["teds_s"] = float(np.mean(match_tables(ref_tables, pred, structure_only=True)))
    if marks_headings and truth["headings"]:
        m, n_ref, n_got = heading_scores(truth["headings"], got["headings"])
        out["h_rec"] = m / n_ref
        out["h_prec"] = m / n_got if n_got else 0.0
    return out


def generated(folder: Path) -> dict[Path, dict[str, Any]]:
    """PDFs made here and what was drawn on them (text in reading order, headings, tables)."""
    from htmlrag.testing import pdfs as mk

    out: dict[Path, dict[str, Any]] = {}
    for fn in mk.TRUTH_MAKERS:
        path, truth = fn(folder)
        out[path] = truth
    return out


def fmt(v: float | None) -> str:
    return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.3f}"


def report(title: str, truths: dict[Path, dict[str, Any]], results: dict[str, dict[Path, dict[str, float]]]) -> None:
    keys = ("nid", "teds", "teds_s", "h_rec", "h_prec", "seconds")
    print(f"\n{title}")
    print(f"{'file':28s} {'parser':12s} " + " ".join(f"{k:>8s}" for k in keys))
    for path in truths:
        for parser, res in results.items():
            r = res.get(path, {})
            print(f"{path.stem[:28]:28s} {parser:12s} " + " ".join(f"{fmt(r.get(k)):>8s}" for k in keys))
    print(f"\n{'mean over files':28s} {'parser':12s} " + " ".join(f"{k:>8s}" for k in keys) + "   ours / parser")
    means: dict[str, dict[str, float | None]] = {}
    for parser, res in results.items():
        means[parser] = {}
        for k in keys:
            vals = [r[k] for r in res.values() if k in r and not np.isnan(r[k])]
            means[parser][k] = float(np.mean(vals)) if vals else None
    for parser, m in means.items():
        ratio = ""
        if parser != "ours":
            ratio = "  ".join(f"{k} {means['ours'][k] / m[k]:.2f}x" for k in ("nid", "teds", "h_rec")
                              if m.get(k) and means["ours"].get(k) is not None)
        print(f"{'':28s} {parser:12s} " + " ".join(f"{fmt(m[k]):>8s}" for k in keys) + f"   {ratio}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer-python", default=os.environ.get("PARSE_PEER_PYTHON"),
                    help="Python of the peers' virtual environment")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--sets", default="generated,docling", help="which file sets to score")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR, format="%(message)s")
    peers = [p for p in args.peers.split(",") if p] if args.peer_python else []
    heads = {"ours": True, "pymupdf4llm": True}
    tables = {"ours": True, "pymupdf4llm": True, "pdfplumber": True}
    sets: list[tuple[str, dict[Path, dict[str, Any]]]] = []
    tmp = tempfile.TemporaryDirectory()
    if "generated" in args.sets:
        sets.append(("generated PDFs (truth: what was drawn)", generated(Path(tmp.name))))
    folder = DATA / "docling"
    if "docling" not in args.sets:
        pass
    elif folder.exists() and args.peer_python:
        pdfs = sorted(folder.glob("*.pdf"))
        rows = run_peer(args.peer_python, "truth", [folder / "groundtruth" / f"{p.stem}.json" for p in pdfs])
        truth = {p: rows[str(folder / "groundtruth" / f"{p.stem}.json")] for p in pdfs}
        bad = [str(p) for p, t in truth.items() if t.get("error")]
        if bad:
            raise SystemExit(f"cannot read docling truth: {bad}: {truth[Path(bad[0])]['error']}")
        sets.append(("docling PDFs (truth: docling JSON, read with docling-core)", truth))
    elif not args.peer_python:
        print("no --peer-python: docling truth and peers skipped (see the module docstring)", file=sys.stderr)
    for title, truths in sets:
        paths = list(truths)
        results: dict[str, dict[Path, dict[str, float]]] = {"ours": {}}
        for p in paths:
            results["ours"][p] = score(truths[p], ours(p), True, True)
        for peer in peers:
            rows = run_peer(args.peer_python, peer, paths)
            results[peer] = {p: score(truths[p], rows[str(p)], heads.get(peer, False), tables.get(peer, False))
                             for p in paths}
        report(title, truths, results)
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
