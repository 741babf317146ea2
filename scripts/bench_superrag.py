"""Benchmark the SuperRAG layout parser and retrievers on the real PDFs in ../shared/data/pdf.

(a) docling (5 PDFs with a reference structure in ``groundtruth/*.json``): per file, section-header recall
    and precision, and table and picture counts vs the reference. Reference headers are the docling items
    labelled ``section_header`` or ``title``. Texts are normalised (NFKC, lower case, letters and digits
    only); a detected heading matches an unmatched reference header when the normalised strings are equal,
    hold the same characters in another order (docling puts "1 Introduction"'s number last on some
    layouts), or have a difflib ratio >= 0.9. Matching is greedy and one-to-one.
    recall = matched / reference headers; precision = matched / detected headings.

(b) Any folder(s) in the sec-10-q layout (``docs/*.pdf``, ``qna_data.csv`` with ``Question``, ``Source Docs``,
    ``Question Type``, ``Source Chunk Type``, ``Answer``): ``--data DIR [DIR ...]``, default
    ``../shared/data/pdf/sec-10-q``. Build time per document (parse + graph + embeddings + indexes,
    all-MiniLM-L6-v2 on CPU), and **evidence hit rate** for each retriever vs a flat baseline.
    Companies come from the file names (:func:`htmlrag.superrag.build.owners.owner_of`: the name without its period,
    form and numbers, ``2023 Q3 AAPL.pdf`` -> ``AAPL``), never from a list; a question's company is the owner
    of the filings its ``Source Docs`` pattern names in its folder.
    Gold items of a question (:func:`htmlrag.docqa.items.gold_items`, the same definition the harness's
    ``evidence_*`` metrics use): the numbers in its gold answer (``$``, ``,`` and ``%`` removed; years
    1990-2035, integers below 10, the days of dates ("October 30, 2022") and numbers that also occur in the
    question are left out); when the answer has none, its key phrases instead: adjacent pairs of lower-cased
    content words (3+ letters, not stop words) that are not in the question. An item is found when it occurs in the text of the evidence
    (numbers compared as normalised numbers, phrases as word pairs). Per question, recall = found / items;
    the question is a **hit** when recall >= 0.5. Two evidence sizes:

    * **at k = 10**: the retriever's top 10 (``tables`` and ``full`` append up to 3 related tables/figures, so
      up to 13 items);
    * **at equal evidence tokens** (``--budgets``, default 1,500 and 3,000 tokens of the project's tokenizer,
      :func:`htmlrag.pruning.tokens.load_tokenizer`): the retriever's top 40 cut to the budget greedily in rank order
      (:func:`htmlrag.superrag.retrieve.budget.fill_budget`: an item that does not fit is skipped, later
      smaller ones fill the room, the best item alone over the budget is cut to it), so every retriever and
      the flat baseline give the reader the same amount of text.

    The evidence text of an item is its title and text; its tokens are counted on that text, and the mean
    evidence tokens per retriever are printed beside each table. We report hit rate (with the exact McNemar
    test vs flat) and mean recall (paired t-test vs flat), over all questions and split by the dataset's
    Source Chunk Type (Table / Text). Retrieval is restricted to the filings the question's ``Source Docs``
    pattern names (e.g. ``*AAPL*``), and filings no question names are not built. The flat baseline: each page's plain text (PyMuPDF ``get_text``) joined
    per document, cut into fixed 150-word chunks (no overlap, no layout), embedded with the same model, exact
    cosine ranking.
    **Held out**: leave one company out, for every company: the rerank mode of ``full`` (replace, ``:fuse``,
    ``:off``; those measured) is chosen on the other companies' questions by ``full``'s hit rate at 10, and
    every retriever is read on the left-out company's questions in that mode. ``--hide C`` runs company C's
    questions but keeps them out of every printed table (and out of every choice), so a company stays unseen
    while defaults are developed. ``--out FILE``: per question, ``recall`` and ``tokens`` per retriever, and
    ``budget[<tokens>]`` with the same at each budget.
    **Tables and text** (``~soft``, ``~none`` after a retriever's name, before its rerank mode: ``hybrid~soft``,
    ``full~soft:off``): the ``mix_tables`` of the layout retrievers (default ``turns``); each such name is read
    as a retriever of its own in every table.
    **Document headers** (``--doc-header none,embed[,both]``, :attr:`~htmlrag.superrag.build.corpus.CorpusConfig.doc_header`):
    one corpus per setting; with more than one, every retriever's name gets ``@<setting>`` (``hybrid@embed``),
    the held-out report chooses the setting together with ``full``'s rerank mode on the other companies (ties:
    the order given, then off, fuse, replace: the library's defaults first), and one summary table per setting
    shows it fixed for every company. The flat baseline is the same in every setting (plain page text, no header).

Usage::

    python scripts/bench_superrag.py                 # both parts
    python scripts/bench_superrag.py --part docling  # (a) only, a few seconds
    python scripts/bench_superrag.py --part sec --data ../shared/data/pdf/sec-10-q ../shared/data/pdf/sec-10-q-more
    python scripts/bench_superrag.py --part sec --data data/pdfs --db /tmp/secdb --retrievers hybrid,toc,full:off
"""

from __future__ import annotations

import argparse
import csv
import difflib
import fnmatch
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from htmlrag.docqa.items import gold_items, item_recall

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "pdf"


def recall(kind: str, items: set[str] | list[str], evidence_text: str) -> float:
    """Share of gold items in the evidence text (NaN without items); see :mod:`htmlrag.docqa.items`."""
    if not items:
        return float("nan")
    return item_recall(list(items), evidence_text)


# ---------------------------------------------------------------------------------------------- (a)
def header_match(a: str, b: str) -> bool:
    return a == b or sorted(a) == sorted(b) or difflib.SequenceMatcher(None, a, b).ratio() >= 0.9


def bench_docling() -> None:
    from htmlrag.superrag.parse.document import parse_pdf
    from htmlrag.superrag.parse.headings import normalise

    folder = DATA / "docling"
    print("\n(a) docling: section headers, tables, pictures vs groundtruth")
    print(f"{'file':28s} {'recall':>12s} {'precision':>12s} {'tables':>9s} {'pictures':>9s} {'sec':>6s}")
    for pdf in sorted(folder.glob("*.pdf")):
        gt = json.loads((folder / "groundtruth" / f"{pdf.stem}.json").read_text(encoding="utf-8"))
        ref = [normalise(t["text"]) for t in gt["texts"] if t["label"] in ("section_header", "title")]
        t0 = time.perf_counter()
        doc = parse_pdf(pdf)
        dt = time.perf_counter() - t0
        got = [normalise(h.text) for h in doc.headings]
        used: set[int] = set()
        for g in got:
            j = next((i for i, r in enumerate(ref) if i not in used and header_match(g, r)), None)
            if j is not None:
                used.add(j)
        tp = len(used)
        r = f"{tp}/{len(ref)}={tp / max(len(ref), 1):.2f}"
        p = f"{tp}/{len(got)}={tp / max(len(got), 1):.2f}"
        print(f"{pdf.stem:28s} {r:>12s} {p:>12s} {len(doc.tables):>4d}/{len(gt['tables']):<4d} "
              f"{len(doc.figures):>4d}/{len(gt['pictures']):<4d} {dt:6.2f}")


# ---------------------------------------------------------------------------------------------- (b)
#: Evidence budgets (tokens of the default tokenizer, :func:`htmlrag.pruning.tokens.load_tokenizer`) for the comparison
#: at equal evidence size; each retriever's ranked evidence is cut to them greedily in rank order.
BUDGETS = (1500, 3000)
#: Evidence items asked of each retriever for the budgeted comparison (enough to fill the largest budget).
BUDGET_K = 40


def rel(path: Path) -> str:
    """``path`` relative to the repository root when it is inside the repository or beside it
    (``../shared/data/pdf/sec-10-q``), else ``…/<its name>``: logs and committed results never hold machine paths."""
    r = os.path.relpath(Path(path).resolve(), ROOT)
    return r if not r.startswith(os.pardir + os.sep + os.pardir) and not os.path.isabs(r) else f"…/{Path(path).resolve().name}"


def flat_chunks(pdf: Path, words: int = 150) -> list[str]:
    """The issue's flat baseline: the whole document's PyMuPDF plain text cut into ``words``-word chunks."""
    from htmlrag.superrag.parse.pdfio import open_pdf

    doc, _ = open_pdf(pdf)
    toks = " ".join(p.get_text() for p in doc).split()
    doc.close()
    return [" ".join(toks[i : i + words]) for i in range(0, len(toks), words)]


def read_questions(folder: Path) -> list[dict[str, str]]:
    """The rows of ``folder/qna_data.csv`` (the sec-10-q layout)."""
    with (folder / "qna_data.csv").open(encoding="utf-8-sig", newline="") as f:
        return list(csv.DictReader(f))


def load_sets(folders: list[Path]) -> tuple[list[Path], list[dict[str, Any]]]:
    """The filings and questions of one or more folders in the sec-10-q layout. Each question keeps the file
    names its ``Source Docs`` pattern matches in its own folder (``_names``; all its folder's files when the
    pattern matches none). File names must differ across folders."""
    pdfs: list[Path] = []
    rows: list[dict[str, Any]] = []
    for folder in folders:
        mine = sorted((folder / "docs").glob("*.pdf"))
        clash = {p.name for p in mine} & {p.name for p in pdfs}
        if clash:
            raise SystemExit(f"{rel(folder)}: file names also in another --data folder: {sorted(clash)}")
        pdfs += mine
        for row in read_questions(folder):
            pattern = (row.get("Source Docs") or "*").strip()
            names = [p.name for p in mine if fnmatch.fnmatch(p.name, pattern)] or [p.name for p in mine]
            rows.append({**row, "_names": names, "_set": rel(folder)})
    return pdfs, rows


def question_owner(names: list[str], owner: dict[str, str]) -> str:
    """The company of a question: the owner of the filings its ``Source Docs`` pattern names (several owners
    joined with ``+``; such a question is in no company's held-out split)."""
    return "+".join(sorted({owner[n] for n in names})) or "?"


def build(pdfs: list[Path], root: Path, config: Any, emb: Any, cache: Path) -> Path:
    """The corpus of ``config`` and these files (built once per config, file set and code version; parses
    cached under ``cache``)."""
    from dataclasses import asdict

    from htmlrag.core.cache import content_key
    from htmlrag.core.fingerprint import PDF_CORPUS, fingerprint
    from htmlrag.superrag.build.corpus import open_writable
    from htmlrag.superrag.to_html import parse_cached

    names = sorted(p.name for p in pdfs)
    folder = root / content_key("bench", asdict(config), names, fingerprint(PDF_CORPUS))[:16]
    with open_writable(folder, config=config, embedder=emb) as corpus:
        for pdf in pdfs:
            t0 = time.perf_counter()
            doc = parse_cached(pdf, cache_dir=cache)
            if corpus.has_document(doc.doc_id):
                continue
            r = corpus.add_document(pdf, parsed=doc)
            print(f"  built {pdf.name:22s} {r.pages:3d} pages {r.nodes:6d} nodes {time.perf_counter() - t0:6.1f} s "
                  f"{'ok' if r.ok else r.error}", flush=True)
    return folder


#: Rerank modes by the retriever name's suffix: "full" reranks with the cosine order replacing the first stage's
#: (the paper's shape), "full:fuse" fuses both orders (RRF), "full:off" has no rerank stage (the library's
#: default for ``full``/``nonlayout``). The ``rerank`` retriever always reranks (its ":off" is ":fuse").
RERANK_MODES: dict[str, dict[str, bool]] = {"": {"rerank": True, "rerank_fuse": False},
                                            "fuse": {"rerank": True, "rerank_fuse": True},
                                            "off": {"rerank": False, "rerank_fuse": True}}


def parse_name(name: str) -> tuple[str, str, str]:
    """A retriever's name in the bench, ``<retriever>[~<mix>][:<rerank mode>]`` (``hybrid``, ``full:off``,
    ``full~soft:off``), as (retriever, ``mix_tables``, rerank mode); the mix defaults to the library's."""
    from htmlrag.superrag.pipelines import MIX_TABLES

    head, _, mode = name.partition(":")
    base, _, mix = head.partition("~")
    if mode not in RERANK_MODES:
        raise SystemExit(f"--retrievers: {name!r}: rerank mode {mode!r} is not one of {', '.join(RERANK_MODES)}")
    if mix and mix not in MIX_TABLES:
        raise SystemExit(f"--retrievers: {name!r}: mix {mix!r} is not one of {', '.join(MIX_TABLES)}")
    return base, mix or "turns", mode


class Scorer:
    """Recall and evidence tokens of one ranked evidence list: at k (the list as returned) and cut to each
    budget (:func:`htmlrag.superrag.retrieve.budget.fill_budget` over the longer list)."""

    def __init__(self, counter: Any, budgets: tuple[int, ...]) -> None:
        self.counter, self.budgets = counter, budgets

    def score(self, rec: dict[str, Any], name: str, items: list[str], at_k: list[str], ranked: list[str]) -> None:
        from htmlrag.superrag.retrieve.budget import fill_budget

        rec["recall"][name] = recall("", items, " \n ".join(at_k))
        rec["tokens"][name] = sum(self.counter.count_many(at_k))
        for b in self.budgets:
            cut = fill_budget(ranked, self.counter, b)
            slot = rec["budget"].setdefault(str(b), {"recall": {}, "tokens": {}})
            slot["recall"][name] = recall("", items, " \n ".join(cut.texts))
            slot["tokens"][name] = cut.tokens


def evaluate(folder: Path, pdfs: list[Path], rows: list[dict[str, Any]], owner: dict[str, str],
             retrievers: list[str], emb: Any, scorer: Scorer, k: int = 10) -> list[dict[str, Any]]:
    """Per question: company, type, and the recall and evidence tokens of every retriever (and of flat chunks)
    at k and at each budget."""
    from htmlrag.superrag.build.corpus import open_corpus

    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    name_to_id = {Path(d["path"]).name: did for did, d in manifest["documents"].items()}
    flat = {}
    for pdf in pdfs:
        ch = flat_chunks(pdf)
        flat[pdf.name] = (ch, emb.encode(ch))
    out: list[dict[str, Any]] = []
    with open_corpus(folder, embedder=emb) as corpus:
        for qi, row in enumerate(rows):
            q, names = row["Question"], row["_names"]
            _, items = gold_items(q, row["Answer"])
            ids = [name_to_id[n] for n in names if n in name_to_id]
            qv = emb.encode([q])[0]
            cands = sorted(((float(v @ qv), c) for n in names for c, v in zip(*flat[n], strict=True)),
                           key=lambda x: -x[0])
            rec = {"i": qi, "set": row["_set"], "company": question_owner(names, owner), "type": row["Source Chunk Type"].strip() or "?",
                   "qtype": row["Question Type"].strip(), "recall": {}, "tokens": {}, "budget": {}}
            ranked = [c for _, c in cands]
            scorer.score(rec, "flat", items, ranked[:k], ranked[:BUDGET_K])
            for name in retrievers:
                base, mix, mode = parse_name(name)
                texts = [[f"{e.title}\n{e.text}" for e in corpus.retrieve(q, retriever=base, k=n, doc_ids=ids,
                                                                          mix_tables=mix, **RERANK_MODES[mode])]
                         for n in ((k, BUDGET_K) if scorer.budgets else (k,))]
                scorer.score(rec, name, items, texts[0], texts[-1])
            out.append(rec)
    return out


def _p(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.3f}"


def report(recs: list[dict[str, Any]], retrievers: list[str], title: str, measure: str = "@10") -> None:
    """Hit rate (recall >= 0.5) per retriever, all / Table / Text, with the exact McNemar test vs flat; then the
    mean recall over all of them with the paired t-test vs flat (the measure without the 0.5 threshold), and
    the mean evidence tokens."""
    from htmlrag.evaluation.stats import mcnemar_exact, paired_ttest

    print(f"\n  {title}: evidence hit rate {measure} (recall >= 0.5); vs flat: +wins/-losses, McNemar exact p; "
          "mean recall, vs flat, paired t-test p; mean evidence tokens")
    print(f"  {'retriever':14s} " + " ".join(f"{s:>30s}" for s in ("all", "Table", "Text", "mean recall"))
          + f" {'tokens':>7s}")
    for name in ["flat", *retrievers]:
        cells = []
        for split in (None, "Table", "Text"):
            sub = [r for r in recs if (split is None or r["type"] == split) and not np.isnan(r["recall"]["flat"])]
            hit = [r["recall"][name] >= 0.5 for r in sub]
            base = [r["recall"]["flat"] >= 0.5 for r in sub]
            rate = float(np.mean(hit)) if hit else float("nan")
            if name == "flat":
                cells.append(f"{rate:.2f} (n={len(sub)})")
                continue
            m = mcnemar_exact(hit, base)
            diff = rate - float(np.mean(base)) if base else float("nan")
            cells.append(f"{rate:.2f} {diff:+.2f} +{m.a_only}/-{m.b_only} p={_p(m.p)}")
        sub = [r for r in recs if not np.isnan(r["recall"]["flat"])]
        t = paired_ttest([r["recall"][name] for r in sub], [r["recall"]["flat"] for r in sub])
        cells.append(f"{t.mean_a:.3f}" if name == "flat" else f"{t.mean_a:.3f} {t.mean_a - t.mean_b:+.3f} p={_p(t.p)}")
        toks = [r["tokens"][name] for r in recs if name in r.get("tokens", {})]
        print(f"  {name:14s} " + " ".join(f"{c:>30s}" for c in cells) + f" {np.mean(toks) if toks else 0:7.0f}")


def _with_mode(name: str, mode: str, retrievers: list[str]) -> str:
    """``name`` read in rerank ``mode`` where that was measured; the ``rerank`` retriever always reranks, so
    under ``off`` it is read as the library runs it (``:fuse``)."""
    if name == "rerank" and mode == "off":
        mode = "fuse"
    return f"{name}:{mode}" if mode and f"{name}:{mode}" in retrievers else name


def at_budget(recs: list[dict[str, Any]], budget: str) -> list[dict[str, Any]]:
    """The records read at one budget (its recall and tokens in place of those at k)."""
    return [{**r, **r["budget"][budget]} for r in recs if budget in r.get("budget", {})]


def measures(recs: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(label, records) for every measure the records hold: the budgets first (what the docs lead with), then
    the top 10."""
    budgets = sorted({b for r in recs for b in r.get("budget", {})}, key=int)
    return [*((f"at {int(b):,} evidence tokens", at_budget(recs, b)) for b in budgets), ("@10", recs)]


def companies(recs: list[dict[str, Any]]) -> list[str]:
    """The companies whose questions name only their own filings, in order of first appearance."""
    return list(dict.fromkeys(r["company"] for r in recs if "+" not in r["company"] and r["company"] != "?"))


def variants(retrievers: list[str]) -> list[str]:
    """The ``doc_header`` variants the names hold (``hybrid@embed`` -> ``embed``), in order; [''] for none."""
    return list(dict.fromkeys(n.partition("@")[2] for n in retrievers))


def _at(name: str, variant: str) -> str:
    return f"{name}@{variant}" if variant else name


#: Rerank modes of ``full`` in the order that breaks a tie: the library's default (no rerank stage) first. (Until
#: issue 35's fifth round a tie fell to replace, the first mode measured; see docs/superrag.md.)
TIE_ORDER = ("off", "fuse", "")


def choose_setting(tune: list[dict[str, Any]], retrievers: list[str]) -> tuple[str, str, str]:
    """The ``doc_header`` variant and rerank mode of ``full`` with the best hit rate at k on ``tune`` (ties fall to
    the library's defaults: the variants' order on the command line, the first being the default, then rerank
    mode off, fuse, replace). Returns variant, mode and a line saying how they were chosen."""
    found = variants(retrievers)
    if len(found) == 1:
        mode, how = choose_mode(tune, retrievers, found[0])
        return found[0], mode, how
    sub = [r for r in tune if not np.isnan(r["recall"]["flat"])]
    options = [(v, m) for v in found for m in TIE_ORDER if _at(f"full:{m}" if m else "full", v) in retrievers]
    if not sub:
        v, m = options[0]
        return v, m, f"no other company's questions to choose on: the first variant ({v}, {m or 'replace'})"
    rate = {o: float(np.mean([r["recall"][_at(f"full:{o[1]}" if o[1] else "full", o[0])] >= 0.5 for r in sub]))
            for o in options}
    best = max(options, key=lambda o: rate[o])
    shown = ", ".join(f"{v}/{m or 'replace'} {x:.2f}" for (v, m), x in rate.items())
    return best[0], best[1], (f"chosen on the other companies' {len(sub)} questions by full's hit rate @10 "
                              f"({shown}) -> header {best[0]}, rerank {best[1] or 'replace'}")


def choose_mode(tune: list[dict[str, Any]], retrievers: list[str], variant: str = "") -> tuple[str, str]:
    """The rerank mode of ``full`` (replace, ``:fuse`` or ``:off``, those measured) with the best hit rate at
    k on ``tune`` (ties fall to the library's default: off, then fuse, then replace); without tuning questions
    the library's default (off). Returns the mode and a line saying how it was chosen."""
    modes = [m for m in TIE_ORDER if _at(f"full:{m}" if m else "full", variant) in retrievers]
    sub = [r for r in tune if not np.isnan(r["recall"]["flat"])]
    if len(modes) < 2 or not sub:
        default = "off" if "off" in modes else (modes[0] if modes else "")
        return default, f"no other company's questions to choose on: the library's default ({default or 'replace'})"
    rates = {m: float(np.mean([r["recall"][_at(f"full:{m}" if m else "full", variant)] >= 0.5 for r in sub]))
             for m in modes}
    best = max(modes, key=lambda m: rates[m])  # first of the best: the order above breaks ties
    shown = ", ".join(f"{m or 'replace'} {v:.2f}" for m, v in rates.items())
    return best, f"chosen on the other companies' {len(sub)} questions by full's hit rate @10 ({shown}) -> {best or 'replace'}"


def heldout_report(recs: list[dict[str, Any]], retrievers: list[str], verbose: bool = True) -> dict[str, dict[str, Any]]:
    """Leave one company out, for every company: the rerank mode is chosen on the other companies' questions,
    then every retriever is read on the left-out company's questions with that mode, at each budget and at k.
    Returns, per company, the retrievers read and the rows of its questions (for :func:`summary_table`)."""
    out: dict[str, dict[str, Any]] = {}
    for test in companies(recs):
        tune = [r for r in recs if test not in r["company"].split("+")]
        variant, best, how = choose_setting(tune, retrievers)
        plain = [n.partition("@")[0] for n in retrievers if n.partition("@")[2] == variant]
        names = [_at(_with_mode(n, best, plain), variant) for n in plain if ":" not in n]
        rows = [r for r in recs if r["company"] == test]
        print(f"\n  == held out {test} ({len(rows)} questions): {'setting' if variant else 'rerank mode'} {how}")
        for label, view in measures(rows) if verbose else ():
            report(view, names, f"{test} questions, held out", label)
        out[test] = {"names": names, "rows": rows}
    return out
def summary_table(held: dict[str, dict[str, Any]]) -> None:
    """One line per retriever: hit rate and difference to flat on each held-out company, at each measure
    (Markdown, as the docs show it)."""
    if not held:
        return
    first = next(iter(held.values()))
    labels = [label for label, _ in measures(first["rows"])]
    print("\n  held-out summary: evidence hit rate (difference to flat) per company left out; "
          + "; ".join(labels))
    head = " | ".join(f"{c} {'/'.join(lab.split()[1] if lab.startswith('at') else lab for lab in labels)}"
                      for c in held)
    print(f"  | retriever | {head} |")
    print("  |---|" + "---|" * len(held))
    for j in range(len(first["names"]) + 1):
        cells = []
        for h in held.values():
            name = "flat" if j == 0 else h["names"][j - 1]
            parts = []
            for _, view in measures(h["rows"]):
                sub = [r for r in view if not np.isnan(r["recall"]["flat"])]
                rate = float(np.mean([r["recall"][name] >= 0.5 for r in sub])) if sub else float("nan")
                base = float(np.mean([r["recall"]["flat"] >= 0.5 for r in sub])) if sub else float("nan")
                parts.append(f"{rate:.2f}" if j == 0 else f"{rate:.2f} ({rate - base:+.2f})")
            cells.append(" / ".join(parts))
        label = "flat" if j == 0 else first["names"][j - 1].split(":")[0].split("@")[0]
        print(f"  | {label} | " + " | ".join(cells) + " |")


def bench_sec(args: argparse.Namespace) -> None:
    from htmlrag.pruning.tokens import load_tokenizer
    from htmlrag.superrag.build.corpus import CorpusConfig
    from htmlrag.superrag.build.embed import CachedEmbedder, SentenceTransformerEmbedder
    from htmlrag.superrag.build.owners import owner_glob, owners

    retrievers = [r for r in args.retrievers.split(",") if r]
    for name in retrievers:  # a misspelt name fails here, not after the corpora are built
        parse_name(name)
    hidden = {c for c in args.hide.split(",") if c}
    if args.from_json:
        recs = json.loads(args.from_json.read_text(encoding="utf-8"))
        retrievers = [n for n in recs[0]["recall"] if n != "flat"]
        summarise([r for r in recs if not hidden & set(r["company"].split("+"))], retrievers)
        return
    pdfs, rows = load_sets(list(args.data))
    # Retrieval is scoped to the filings a question names, so a filing no question names is never read: it is
    # not built (FinanceBench's folder holds 72 filings, its qna_data.csv names 25).
    named = {n for r in rows for n in r["_names"]}
    unused = [p.name for p in pdfs if p.name not in named]
    pdfs = [p for p in pdfs if p.name in named]
    owner = owners(p.name for p in pdfs)
    print(f"\n(b) {', '.join(rel(d) for d in args.data)}: {len(pdfs)} filings, {len(rows)} questions; companies from the file names: "
          + ", ".join(f"{c} ({sum(o == c for o in owner.values())})" for c in dict.fromkeys(owner.values()))
          + (f"; not built, as no question names them: {', '.join(unused)}" if unused else ""))
    root = Path(args.db)
    emb = CachedEmbedder(SentenceTransformerEmbedder(), root / "embeddings.sqlite")
    headers = [h for h in args.doc_header.split(",") if h]
    budgets = tuple(int(b) for b in args.budgets.split(",") if b) if args.budgets else ()
    scorer = Scorer(load_tokenizer(), budgets)
    recs: list[dict[str, Any]] = []
    for header in headers:
        config = CorpusConfig(vector_backend=args.vector_backend, chunk_words=args.chunk_words,
                              min_chunk_words=args.min_chunk_words, flat_words=150, doc_header=header,
                              companies={owner_glob(n): c for n, c in owner.items()})
        t0 = time.perf_counter()
        folder = build(pdfs, root, config, emb, root / "parsed")
        print(f"  corpus <db>/{folder.name} (doc_header={header}) ready in {time.perf_counter() - t0:.1f} s",
              flush=True)
        t0 = time.perf_counter()
        part = evaluate(folder, pdfs, rows, owner, retrievers, emb, scorer)
        print(f"  {len(part)} questions x {len(retrievers) + 1} retrievers in {time.perf_counter() - t0:.1f} s",
              flush=True)
        recs = recs or part
        for rec, new in zip(recs, part, strict=True):
            for key in ("recall", "tokens"):
                rec[key].update({_at(n, header if len(headers) > 1 else ""): new[key][n] for n in retrievers})
            for b, slot in new["budget"].items():
                for key in ("recall", "tokens"):
                    rec["budget"][b][key].update({_at(n, header if len(headers) > 1 else ""): slot[key][n]
                                                  for n in retrievers})
    if len(headers) > 1:
        retrievers = [_at(n, h) for h in headers for n in retrievers]
        for rec in recs:  # the first pass stored its own names unsuffixed as well: keep only the suffixed ones
            for store in (rec, *rec["budget"].values()):
                for key in ("recall", "tokens"):
                    store[key] = {n: v for n, v in store[key].items() if n == "flat" or "@" in n}
    (args.out or root / "last_run.json").write_text(json.dumps(recs), encoding="utf-8")
    if hidden:
        print(f"  hidden from the tables: {', '.join(sorted(hidden))}")
    summarise([r for r in recs if not hidden & set(r["company"].split("+"))], retrievers)


def summarise(recs: list[dict[str, Any]], retrievers: list[str]) -> None:
    for label, view in measures(recs):
        report(view, retrievers, f"all {len(recs)} questions", label)
    found = variants(retrievers)
    if len(found) > 1:  # each doc_header setting fixed (only the rerank mode chosen on the other companies)
        for v in found:
            print(f"\n  ==== doc_header={v} for every company")
            summary_table(heldout_report(recs, [n for n in retrievers if n.partition("@")[2] == v], verbose=False))
        print("\n  ==== doc_header and rerank mode chosen on the other companies")
    summary_table(heldout_report(recs, retrievers))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["all", "docling", "sec"], default="all")
    ap.add_argument("--data", type=Path, nargs="+", default=[DATA / "sec-10-q"],
                    help="one or more folders in the sec-10-q layout: docs/*.pdf and qna_data.csv (Question, Source Docs, "
                    "Question Type, Source Chunk Type, Answer); companies are read from the file names")
    ap.add_argument("--hide", default="",
                    help="companies (comma-separated) whose questions are run but left out of every printed table: "
                    "keeps a company unseen while defaults are developed (the --out JSON still holds them)")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)),
                    help="evidence budgets in tokens for the comparison at equal evidence size ('' for none)")
    ap.add_argument("--db", type=Path, default=Path(tempfile.gettempdir()) / "superrag-bench",
                    help="corpora (one per setting and code version), parse and embedding caches")
    ap.add_argument("--retrievers", default="vector,bm25,hybrid,toc,tables,merge,rerank,full,nonlayout,rerank:fuse,"
                    "full:fuse,nonlayout:fuse,full:off,nonlayout:off",
                    help="names; a suffix picks the rerank mode: none = replace, :fuse, :off (no rerank stage); "
                         "'~soft' or '~none' before it picks how tables and text share the lists (default turns): "
                         "hybrid~soft, full~soft:off")
    ap.add_argument("--vector-backend", default="numpy", help="numpy (exact, fast to open) or milvus-lite")
    ap.add_argument("--out", type=Path, help="per-question recalls as JSON (default: <db>/last_run.json)")
    ap.add_argument("--from-json", type=Path, help="print the tables of an earlier --out file (nothing is run)")
    ap.add_argument("--doc-header", default="none,embed,both",
                    help="doc_header settings to build a corpus for (comma-separated: none, embed, both); with more "
                    "than one, retriever names get '@<setting>' and the held-out report chooses the setting with "
                    "full's rerank mode on the other companies")
    ap.add_argument("--chunk-words", type=int, default=150)
    ap.add_argument("--min-chunk-words", type=int, default=75)
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR, format="%(message)s")
    need = [DATA / "docling"] if args.part == "docling" else []
    if args.part in ("all", "sec") and not args.from_json:
        need += [d / "qna_data.csv" for d in args.data]
    if args.part == "all":
        need.append(DATA / "docling")
    missing = [p for p in need if not p.exists()]
    if missing:
        print(f"no data at {rel(missing[0])}", file=sys.stderr)
        return 2
    if args.part in ("all", "docling"):
        bench_docling()
    if args.part in ("all", "sec"):
        bench_sec(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
