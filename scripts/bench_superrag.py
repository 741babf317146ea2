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
    **Document headers and title depths** (``--doc-header none,embed[,both]``,
    :attr:`~htmlrag.superrag.build.corpus.CorpusConfig.doc_header`; ``--title-depth 3[,1,2]``,
    :attr:`~htmlrag.superrag.build.corpus.CorpusConfig.title_depth`): one corpus per setting, each header with
    each depth; with more than one, every retriever's name gets ``@<setting>``, which names the axes given more
    than one value: the header (``hybrid@embed``), ``d<depth>`` (``hybrid@d2``), or both (``hybrid@embed/d2``).
    The held-out report chooses the setting together with ``full``'s rerank mode on the other companies (ties:
    the settings in the order given, each header with its depths in turn, the first being the default; then
    off, fuse, replace: the library's defaults first), and one summary table per setting shows it fixed for
    every company. The flat baseline is the same in every setting (plain page text, no header, no titles).

**Inputs** are checked before a model is loaded or a corpus built, and a bad one stops the bench with one line
(``bench_superrag.py: error: <what>: <problem>``, exit status 2): PDFs are ``docs/*.pdf`` in any case of ``.pdf``;
``qna_data.csv`` must be UTF-8 with ``Question`` and ``Answer`` columns and every row as long as the header;
``Source Docs`` holds comma-separated patterns, each a file name (literal) or a case-insensitive glob, and each
must name a filing (:func:`htmlrag.data.pdfqa.match_source_docs`, shared with the harness's loader); every named
filing must open as a PDF (not encrypted, truncated, empty or without pages); ``docs/`` must hold PDFs;
``--retrievers`` must name known retrievers (a rerank mode only for ``rerank``, ``full``, ``nonlayout``; a name
given twice is read once), ``--budgets`` and ``--title-depth`` integers >= 1, ``--doc-header`` settings of
:attr:`~htmlrag.superrag.build.corpus.CorpusConfig.doc_header`, ``--hide`` companies of the corpus, ``--out`` a
regular file (not a folder, FIFO or device; missing folders on its way are made), ``--from-json`` an earlier ``--out`` file. A file name that names no
company (``10-Q.pdf``) gives its questions the company ``?`` (in no held-out split), and the bench says so.
Questions whose answers hold no gold item are counted and left out of every rate (``null`` in ``--out``).
The parser's warnings (a page with no text layer) are shown.

Usage::

    python scripts/bench_superrag.py                 # both parts
    python scripts/bench_superrag.py --part docling  # (a) only, a few seconds
    python scripts/bench_superrag.py --part sec --data ../shared/data/pdf/sec-10-q ../shared/data/pdf/sec-10-q-more
    python scripts/bench_superrag.py --part sec --data data/pdfs --db /tmp/secdb --retrievers hybrid,toc,full:off
"""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.core.options import check_output_file, run_writing
from htmlrag.data.pdfqa import QNA_COLUMNS, company_of_docs, match_source_docs, pdf_files, read_qna
from htmlrag.docqa.items import gold_items, item_recall

PROG = "bench_superrag.py"

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
    for pdf in pdf_files(folder):
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
    """The rows of ``folder/qna_data.csv`` (the sec-10-q layout; :func:`htmlrag.data.pdfqa.read_qna`: UTF-8,
    ``Question`` and ``Answer`` columns, every row as long as the header, else an InputError naming the row)."""
    path = folder / "qna_data.csv"
    try:
        return read_qna(path, QNA_COLUMNS)
    except InputError as exc:  # named as the rest of the log names it: no machine path
        raise InputError(str(exc).replace(str(path), f"{rel(folder)}/qna_data.csv")) from None


def load_sets(folders: list[Path]) -> tuple[list[Path], list[dict[str, Any]]]:
    """The filings (``docs/*.pdf``, any case of ``.pdf``) and questions of one or more folders in the sec-10-q
    layout. Each question keeps the file names its ``Source Docs`` patterns name in its own folder (``_names``;
    :func:`htmlrag.data.pdfqa.match_source_docs`, as the harness's loader reads them: comma-separated, a file
    name literally, else a case-insensitive glob). File names must differ across folders.

    Raises:
        InputError: a folder without PDFs, a malformed ``qna_data.csv``, a pattern that names no filing (the CSV
            row and the pattern), or a file name in two folders.
    """
    pdfs: list[Path] = []
    rows: list[dict[str, Any]] = []
    for folder in folders:
        mine = pdf_files(folder / "docs")
        if not mine:
            raise InputError(f"{rel(folder)}/docs: no PDF files (the sec-10-q layout: docs/*.pdf and qna_data.csv)")
        clash = {p.name for p in mine} & {p.name for p in pdfs}
        if clash:
            raise InputError(f"{rel(folder)}: file names also in another --data folder: {sorted(clash)}")
        pdfs += mine
        names = [p.name for p in mine]
        for i, row in enumerate(read_questions(folder)):
            picked = match_source_docs(row.get("Source Docs"), names, f"{rel(folder)}/qna_data.csv: row {i + 2}")
            rows.append({**row, "_names": picked, "_set": rel(folder)})
        if not any(r["_set"] == rel(folder) for r in rows):
            raise InputError(f"{rel(folder)}/qna_data.csv: no questions")
    return pdfs, rows


def check_pdfs(pdfs: list[Path]) -> None:
    """Open every filing before anything is built (:func:`htmlrag.superrag.parse.pdfio.open_pdf`).

    Raises:
        InputError: the first file that is not a PDF, is empty, truncated or damaged, encrypted or has no pages
            (its name and the problem), and how many more fail.
    """
    from htmlrag.superrag.parse.pdfio import open_pdf

    bad: list[str] = []
    for pdf in pdfs:
        try:
            doc, _ = open_pdf(pdf)
            doc.close()
        except HtmlRagError as exc:
            bad.append(str(exc).replace(str(pdf), rel(pdf)))
    if bad:
        more = f" (and {len(bad) - 1} more bad PDF{'s' if len(bad) > 2 else ''})" if len(bad) > 1 else ""
        raise InputError(f"{bad[0]}{more}; fix or remove it: nothing was built")


def question_owner(names: list[str], owner: dict[str, str]) -> str:
    """The company of a question: the owner of the filings its ``Source Docs`` patterns name (several owners
    joined with ``+``; such a question is in no company's held-out split); ``?`` when a filing's name names no
    owner (:func:`htmlrag.data.pdfqa.company_of_docs`, as the harness's ``domain``)."""
    return company_of_docs(names, owner)


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


#: Retrievers the bench can run (all of the library's but ``cypher``, which needs a query writer).
BENCH_RETRIEVERS = ("vector", "bm25", "hybrid", "toc", "tables", "reflect", "merge", "rerank", "full", "nonlayout")
#: Retrievers with a rerank stage, the only ones a rerank mode (``:fuse``, ``:off``) applies to.
RERANKED = ("rerank", "full", "nonlayout")


def parse_name(name: str) -> tuple[str, str, str]:
    """A retriever's name in the bench, ``<retriever>[~<mix>][:<rerank mode>]`` (``hybrid``, ``full:off``,
    ``full~soft:off``), as (retriever, ``mix_tables``, rerank mode); the mix defaults to the library's. A rerank
    mode is only for the retrievers with a rerank stage (:data:`RERANKED`)."""
    from htmlrag.superrag.pipelines import MIX_TABLES

    head, _, mode = name.partition(":")
    base, _, mix = head.partition("~")
    if base not in BENCH_RETRIEVERS:
        raise SystemExit(f"{PROG}: error: --retrievers: {name!r}: unknown retriever {base!r}; choose from "
                         f"{', '.join(BENCH_RETRIEVERS)}")
    if mode not in RERANK_MODES:
        raise SystemExit(f"{PROG}: error: --retrievers: {name!r}: rerank mode {mode!r} is not one of "
                         f"{', '.join(RERANK_MODES)}")
    if ":" in name and base not in RERANKED:
        raise SystemExit(f"{PROG}: error: --retrievers: {name!r}: {base} has no rerank stage; a rerank mode is "
                         f"only for {', '.join(RERANKED)}")
    if mix and mix not in MIX_TABLES:
        raise SystemExit(f"{PROG}: error: --retrievers: {name!r}: mix {mix!r} is not one of {', '.join(MIX_TABLES)}")
    return base, mix or "turns", mode


def parse_retrievers(text: str) -> list[str]:
    """``--retrievers``: the names, checked (:func:`parse_name`) before anything is built; a name given twice is
    read once (with a note on stderr)."""
    given = [r.strip() for r in text.split(",") if r.strip()]
    if not given:
        raise SystemExit(f"{PROG}: error: --retrievers: no retriever named; give names such as hybrid,full:off")
    for name in given:
        parse_name(name)
    names = list(dict.fromkeys(given))
    if len(names) < len(given):
        twice = sorted({n for n in given if given.count(n) > 1})
        print(f"{PROG}: note: --retrievers: {', '.join(twice)} given more than once; read once", file=sys.stderr)
    return names


def _positive_ints(option: str, text: str, *, empty_ok: bool = False) -> list[int]:
    """``option``'s comma-separated integers >= 1, in the order given, each once (``''`` gives none when
    ``empty_ok``); anything else stops the bench with one line."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if empty_ok and not text.strip():
            continue
        bad = f"{PROG}: error: {option}: must be integers >= 1, comma-separated, got {part!r}"
        try:
            value = int(part)
        except ValueError:
            raise SystemExit(bad) from None
        if value < 1:
            raise SystemExit(bad)
        out.append(value)
    return list(dict.fromkeys(out))


def parse_budgets(text: str) -> tuple[int, ...]:
    """``--budgets``: evidence budgets in tokens, comma-separated integers >= 1 (``''``: none); a budget given
    twice is read once."""
    return tuple(_positive_ints("--budgets", text, empty_ok=True))


#: ``--doc-header`` settings (:attr:`~htmlrag.superrag.build.corpus.CorpusConfig.doc_header`).
DOC_HEADERS = ("none", "embed", "both")


def parse_depths(text: str) -> list[int]:
    """``--title-depth``: section-title depths (:attr:`~htmlrag.superrag.build.corpus.CorpusConfig.title_depth`),
    comma-separated integers >= 1, in the order given (the first is the default a tie falls to); a depth given
    twice is read once."""
    return _positive_ints("--title-depth", text)


def setting_grid(headers: list[str], depths: list[int]) -> list[tuple[str, str, int]]:
    """(label, doc_header, title_depth) of every corpus to build, each header with each depth, in the order
    given. The label (the ``@`` suffix of the retriever names) names the axes given more than one value: the
    header, ``d<depth>``, or both joined by ``/`` (``embed/d2``); '' when there is one setting, so its names
    stay as they were before depths were measured."""
    def label(header: str, depth: int) -> str:
        return "/".join(([header] if len(headers) > 1 else []) + ([f"d{depth}"] if len(depths) > 1 else []))

    return [(label(h, d), h, d) for h in headers for d in depths]


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
            rec = {"i": qi, "set": row["_set"], "company": question_owner(names, owner), "type": (row.get("Source Chunk Type") or "").strip() or "?",
                   "qtype": (row.get("Question Type") or "").strip(), "recall": {}, "tokens": {}, "budget": {}}
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
            if not sub:  # no question of this kind (FinanceBench says none is Table or Text): no figure to print
                cells.append("- (n=0)" if name == "flat" else "-")
                continue
            rate = float(np.mean(hit))
            if name == "flat":
                cells.append(f"{rate:.2f} (n={len(sub)})")
                continue
            m = mcnemar_exact(hit, base)
            diff = rate - float(np.mean(base))
            cells.append(f"{rate:.2f} {diff:+.2f} +{m.a_only}/-{m.b_only} p={_p(m.p)}")
        sub = [r for r in recs if not np.isnan(r["recall"]["flat"])]
        t = paired_ttest([r["recall"][name] for r in sub], [r["recall"]["flat"] for r in sub])
        cells.append(f"{t.mean_a:.3f}" if name == "flat" else f"{t.mean_a:.3f} {t.mean_a - t.mean_b:+.3f} p={_p(t.p)}")
        toks = [r["tokens"][name] for r in recs if name in r.get("tokens", {})]
        print(f"  {name:14s} " + " ".join(f"{c:>30s}" for c in cells) + f" {np.mean(toks) if toks else 0:7.0f}")


def _with_mode(name: str, mode: str, retrievers: list[str]) -> str:
    """``name`` (a retriever without its rerank mode) read in rerank ``mode`` where that was measured, else as
    given without a mode, else in the first mode measured (``full:off`` alone is read as ``full:off``); the
    ``rerank`` retriever always reranks, so under ``off`` it is read as the library runs it (``:fuse``)."""
    if name == "rerank" and mode == "off":
        mode = "fuse"
    if mode and f"{name}:{mode}" in retrievers:
        return f"{name}:{mode}"
    if name in retrievers:
        return name
    return next(n for n in retrievers if n.partition(":")[0] == name)


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
    """The settings the names hold (:func:`setting_grid`'s labels: ``hybrid@embed`` -> ``embed``,
    ``hybrid@embed/d2`` -> ``embed/d2``), in order; [''] for none."""
    return list(dict.fromkeys(n.partition("@")[2] for n in retrievers))


def setting_words(variant: str) -> list[str]:
    """A setting's label as the corpus settings it stands for: ``embed/d2`` -> ``doc_header=embed``,
    ``title_depth=2``."""
    return [f"title_depth={p[1:]}" if p[:1] == "d" and p[1:].isdigit() else f"doc_header={p}"
            for p in variant.split("/")]


def _at(name: str, variant: str) -> str:
    return f"{name}@{variant}" if variant else name


#: Rerank modes of ``full`` in the order that breaks a tie: the library's default (no rerank stage) first. (Until
#: issue 35's fifth round a tie fell to replace, the first mode measured; see docs/superrag.md.)
TIE_ORDER = ("off", "fuse", "")


def choose_setting(tune: list[dict[str, Any]], retrievers: list[str]) -> tuple[str, str, str]:
    """The setting (:func:`variants`: document header and/or title depth) and rerank mode of ``full`` with the
    best hit rate at k on ``tune`` (ties fall to the library's defaults: the settings' order on the command line,
    the first being the default, then rerank mode off, fuse, replace). Returns setting, mode and a line saying
    how they were chosen."""
    found = variants(retrievers)
    if len(found) == 1:
        mode, how = choose_mode(tune, retrievers, found[0])
        return found[0], mode, how
    sub = [r for r in tune if not np.isnan(r["recall"]["flat"])]
    options = [(v, m) for v in found for m in TIE_ORDER if _at(f"full:{m}" if m else "full", v) in retrievers]
    if not sub:
        v, m = options[0]
        return v, m, f"no other company's questions to choose on: the first setting ({v}, {m or 'replace'})"
    rate = {o: float(np.mean([r["recall"][_at(f"full:{o[1]}" if o[1] else "full", o[0])] >= 0.5 for r in sub]))
            for o in options}
    best = max(options, key=lambda o: rate[o])
    shown = ", ".join(f"{v}/{m or 'replace'} {x:.2f}" for (v, m), x in rate.items())
    return best[0], best[1], (f"chosen on the other companies' {len(sub)} questions by full's hit rate @10 "
                              f"({shown}) -> setting {best[0]}, rerank {best[1] or 'replace'}")


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
        heads = dict.fromkeys(n.partition(":")[0] for n in plain)  # each retriever once, in its chosen mode
        names = [_at(_with_mode(n, best, plain), variant) for n in heads]
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


def _json_safe(x: Any) -> Any:
    """``x`` with NaN (a recall with no gold items) as None, so ``--out`` is valid JSON (``null``)."""
    if isinstance(x, float) and x != x:
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_json_safe(v) for v in x]
    return x


def _nan_for_null(x: Any) -> Any:
    """A ``--out`` record read back: ``null`` recalls are NaN again."""
    if isinstance(x, dict):
        return {k: (float("nan") if v is None and k not in ("company", "type", "qtype", "set") else _nan_for_null(v))
                for k, v in x.items()}
    return x


def read_runs(path: Path) -> list[dict[str, Any]]:
    """The records of an earlier ``--out`` file (``--from-json``).

    Raises:
        InputError: the file is missing, empty, not JSON, or not a list of this bench's records.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"--from-json {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--from-json {path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if not text.strip():
        raise InputError(f"--from-json {path}: empty file; give an --out file of this bench")
    try:
        recs = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"--from-json {path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    ok = isinstance(recs, list) and recs and all(
        isinstance(r, dict) and isinstance(r.get("recall"), dict) and "flat" in r["recall"]
        and isinstance(r.get("company"), str) and isinstance(r.get("type"), str) for r in recs)
    if not ok:
        raise InputError(f"--from-json {path}: not an --out file of this bench (a list of records with company, "
                         "type and recall per retriever)")
    return [_nan_for_null(r) for r in recs]


def check_hidden(hidden: set[str], known: set[str]) -> set[str]:
    """``--hide``'s companies as the corpus spells them (case aside).

    Raises:
        InputError: a company that is not in the corpus (the ones that are are listed).
    """
    spelled = {c.casefold(): c for c in known}
    unknown = sorted(c for c in hidden if c.casefold() not in spelled)
    if unknown:
        raise InputError(f"--hide: no company {unknown[0]!r} in the corpus; companies: {', '.join(sorted(known)) or 'none'}")
    return {spelled[c.casefold()] for c in hidden}


def bench_sec(args: argparse.Namespace) -> None:
    from htmlrag.pruning.tokens import load_tokenizer
    from htmlrag.superrag.build.corpus import CorpusConfig
    from htmlrag.superrag.build.embed import CachedEmbedder, SentenceTransformerEmbedder
    from htmlrag.superrag.build.owners import owner_glob, owners

    # every input is checked here, before a model is loaded or a corpus built: a bad one costs no build
    retrievers = parse_retrievers(args.retrievers)
    budgets = parse_budgets(args.budgets)
    headers = list(dict.fromkeys(h.strip() for h in args.doc_header.split(",") if h.strip()))
    if not headers or set(headers) - set(DOC_HEADERS):
        bad = next((h for h in headers if h not in DOC_HEADERS), "")
        raise SystemExit(f"{PROG}: error: --doc-header: {bad!r} is not one of {', '.join(DOC_HEADERS)} "
                         "(comma-separated)")
    grid = setting_grid(headers, parse_depths(args.title_depth))
    hidden = {c.strip() for c in args.hide.split(",") if c.strip()}
    if args.from_json:
        recs = read_runs(args.from_json)
        retrievers = [n for n in recs[0]["recall"] if n != "flat"]
        hidden = check_hidden(hidden, {c for r in recs for c in r["company"].split("+")})
        summarise([r for r in recs if not hidden & set(r["company"].split("+"))], retrievers)
        return
    if args.out is not None:
        check_output_file(args.out, "--out")  # a folder, FIFO or device there, or a file on its way: refused now
    if Path(args.db).exists() and not Path(args.db).is_dir():
        raise InputError(f"--db {args.db}: not a folder (a file is in the way)")
    pdfs, rows = load_sets(list(args.data))
    owner = owners(p.name for p in pdfs)  # over every file, as the harness's loader reads a folder
    # Retrieval is scoped to the filings a question names, so a filing no question names is never read: it is
    # not built (FinanceBench's folder holds 72 filings, its qna_data.csv names 25).
    named = {n for r in rows for n in r["_names"]}
    unused = [p.name for p in pdfs if p.name not in named]
    pdfs = [p for p in pdfs if p.name in named]
    owner = {p.name: owner[p.name] for p in pdfs}
    hidden = check_hidden(hidden, {c for c in owner.values() if c})
    check_pdfs(pdfs)
    print(f"\n(b) {', '.join(rel(d) for d in args.data)}: {len(pdfs)} filings, {len(rows)} questions; companies from the file names: "
          + ", ".join(f"{c or '?'} ({sum(o == c for o in owner.values())})" for c in dict.fromkeys(owner.values()))
          + (f"; not built, as no question names them: {', '.join(unused)}" if unused else ""))
    nameless = [n for n, c in owner.items() if not c]
    if nameless:
        print(f"  company unknown (the file name names none; name it like '2023 Q1 ACME.pdf'): {', '.join(nameless)}; "
              "its questions are in no held-out split")
    root = Path(args.db)
    emb = CachedEmbedder(SentenceTransformerEmbedder(), root / "embeddings.sqlite")
    scorer = Scorer(load_tokenizer(), budgets)
    recs: list[dict[str, Any]] = []
    for label, header, depth in grid:
        config = CorpusConfig(vector_backend=args.vector_backend, chunk_words=args.chunk_words,
                              min_chunk_words=args.min_chunk_words, flat_words=150, doc_header=header,
                              title_depth=depth, companies={owner_glob(n): c for n, c in owner.items()})
        t0 = time.perf_counter()
        folder = build(pdfs, root, config, emb, root / "parsed")
        print(f"  corpus <db>/{folder.name} (doc_header={header}, title_depth={depth}) ready in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        t0 = time.perf_counter()
        part = evaluate(folder, pdfs, rows, owner, retrievers, emb, scorer)
        print(f"  {len(part)} questions x {len(retrievers) + 1} retrievers in {time.perf_counter() - t0:.1f} s",
              flush=True)
        recs = recs or part
        for rec, new in zip(recs, part, strict=True):
            for key in ("recall", "tokens"):
                rec[key].update({_at(n, label): new[key][n] for n in retrievers})
            for b, slot in new["budget"].items():
                for key in ("recall", "tokens"):
                    rec["budget"][b][key].update({_at(n, label): slot[key][n] for n in retrievers})
    if len(grid) > 1:
        retrievers = [_at(n, label) for label, _, _ in grid for n in retrievers]
        for rec in recs:  # the first pass stored its own names unsuffixed as well: keep only the suffixed ones
            for store in (rec, *rec["budget"].values()):
                for key in ("recall", "tokens"):
                    store[key] = {n: v for n, v in store[key].items() if n == "flat" or "@" in n}
    out = args.out or root / "last_run.json"
    out.parent.mkdir(parents=True, exist_ok=True)  # a missing folder is made (check_output_file found none in the way)
    out.write_text(json.dumps(_json_safe(recs), allow_nan=False), encoding="utf-8")
    if hidden:
        print(f"  hidden from the tables: {', '.join(sorted(hidden))}")
    summarise([r for r in recs if not hidden & set(r["company"].split("+"))], retrievers)


def summarise(recs: list[dict[str, Any]], retrievers: list[str]) -> None:
    """Every table of the records: all questions at each measure, then the held-out report. Questions without
    gold items (no number or key phrase in the answer) have no recall: they are counted here and left out of
    every rate."""
    empty = sum(np.isnan(r["recall"]["flat"]) for r in recs)
    if empty:
        print(f"\n  {empty} of {len(recs)} questions have no gold items (their answers hold no number or key phrase): "
              "left out of every rate (null in --out)")
    for label, view in measures(recs):
        report(view, retrievers, f"all {len(recs)} questions", label)
    found = variants(retrievers)
    if len(found) > 1:  # each setting fixed (only the rerank mode chosen on the other companies)
        for v in found:
            print(f"\n  ==== {', '.join(setting_words(v))} for every company")
            summary_table(heldout_report(recs, [n for n in retrievers if n.partition("@")[2] == v], verbose=False))
        axes = dict.fromkeys(w.partition("=")[0] for w in setting_words(found[0]))
        print(f"\n  ==== {', '.join(axes)} and rerank mode chosen on the other companies")
    summary_table(heldout_report(recs, retrievers))


class _RelPaths(logging.Filter):
    """Log records with the ``--data`` folders named as :func:`rel` names them and the ``--db`` folder as ``<db>``,
    as the bench's own lines name it (no machine paths in the log: a resumed build's warning named the corpus
    folder it cleaned, issue 35)."""

    def __init__(self, folders: list[Path], db: Path | None = None) -> None:
        super().__init__()
        named = [(d, rel(d)) for d in folders] + ([(db, "<db>")] if db is not None else [])
        self.pairs = sorted({(str(x), name) for d, name in named for x in (Path(d), Path(d).resolve())},
                            key=lambda p: -len(p[0]))

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        for path, name in self.pairs:
            msg = msg.replace(path, name)
        record.msg, record.args = msg, ()
        return True


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
                    help="doc_header settings to build corpora for (comma-separated: none, embed, both), each with "
                    "every --title-depth; with more than one, retriever names get '@<header>' and the held-out "
                    "report chooses the setting with full's rerank mode on the other companies (a tie falls to the "
                    "first given)")
    ap.add_argument("--title-depth", default="3",
                    help="section-title depths to build corpora for (comma-separated integers >= 1: how many "
                    "titles, innermost first, name a chunk; 1 = its own section's); with more than one, retriever "
                    "names get '@d<depth>' ('@<header>/d<depth>' when several --doc-header settings are given too) "
                    "and the held-out report chooses the depth as it chooses the header (a tie falls to the first "
                    "given)")
    ap.add_argument("--chunk-words", type=int, default=150)
    ap.add_argument("--min-chunk-words", type=int, default=75)
    args = ap.parse_args()
    # the parser's warnings (a page with no text layer, a damaged table) are shown; other libraries' are not
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s: %(message)s")
    logging.getLogger("htmlrag").setLevel(logging.WARNING)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_RelPaths(list(args.data) if args.part != "docling" else [], args.db))
    need = [DATA / "docling"] if args.part == "docling" else []
    if args.part in ("all", "sec") and not args.from_json:
        need += [d / "qna_data.csv" for d in args.data]
    if args.part == "all":
        need.append(DATA / "docling")
    missing = [p for p in need if not p.exists()]
    if missing:
        print(f"{PROG}: error: no data at {rel(missing[0])}", file=sys.stderr)
        return 2

    def body() -> int:
        try:
            if args.part in ("all", "docling"):
                bench_docling()
            if args.part in ("all", "sec"):
                bench_sec(args)
        except HtmlRagError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
        except SystemExit as exc:  # a bad option (parse_name, parse_budgets): its one line, argparse's status
            if not isinstance(exc.code, str):
                raise
            print(exc.code, file=sys.stderr)
            return 2
        return 0

    return run_writing(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
