"""The run id and every cache key follow the code that can change a row, declared by package
(htmlrag.core.fingerprint): presentation and storage edits keep them, ranker or wiring edits change them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htmlrag.core import fingerprint as fp

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def tree(tmp_path: Path):
    """A copy of the library and the harness, and a ``files`` function that lists a package's files in it."""
    shutil.copytree(ROOT / "htmlrag", tmp_path / "htmlrag", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "eval", tmp_path / "htmlrag_bench" / "eval", ignore=shutil.ignore_patterns("__pycache__"))

    def files(name: str) -> list[Path]:
        parts = name.split(".")
        base = tmp_path.joinpath(*parts)
        if base.is_dir():
            return sorted(p for p in base.rglob("*.py") if "__pycache__" not in p.parts)
        module = base.with_suffix(".py")
        return [module] if module.is_file() else []

    return tmp_path, files


def _edit(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n# an edit\n", encoding="utf-8")


@pytest.mark.parametrize("rel", ["htmlrag/app/views.py", "htmlrag/app/runs.py", "htmlrag/cli/main.py",
                                 "htmlrag/cli/batch.py", "htmlrag/core/redact.py", "htmlrag/core/cache.py",
                                 "htmlrag/evaluation/tables.py", "htmlrag/evaluation/store.py",
                                 "htmlrag/evaluation/runs.py", "htmlrag_bench/eval/table.py",
                                 "htmlrag_bench/eval/app.py"])
def test_presentation_and_storage_edits_keep_the_run_fingerprint(tree, rel):
    root, files = tree
    before = {s: fp.fingerprint(s, files=files) for s in (fp.ROWS, fp.PDF_ROWS)}
    _edit(root / rel)
    assert {s: fp.fingerprint(s, files=files) for s in (fp.ROWS, fp.PDF_ROWS)} == before


@pytest.mark.parametrize("rel", ["htmlrag/rankers/bm25.py", "htmlrag/rankers/embedding.py", "htmlrag/pruning/prune.py",
                                 "htmlrag/html/clean.py", "htmlrag/readers/base.py", "htmlrag/baselines/chunk_rerank.py",
                                 "htmlrag/evaluation/scoring/metrics.py", "htmlrag/evaluation/scoring/loop.py",
                                 "htmlrag/core/models/__init__.py", "htmlrag_bench/eval/systems/refiners.py",
                                 "htmlrag_bench/eval/systems/build.py", "htmlrag/data/local.py"])
def test_row_shaping_edits_change_the_run_fingerprint(tree, rel):
    root, files = tree
    before = fp.fingerprint(fp.ROWS, files=files)
    _edit(root / rel)
    assert fp.fingerprint(fp.ROWS, files=files) != before


def test_superrag_edits_change_pdf_runs_only_and_the_parse_key_follows_the_parser(tree):
    root, files = tree
    rows, pdf = fp.fingerprint(fp.ROWS, files=files), fp.fingerprint(fp.PDF_ROWS, files=files)
    parse, corpus = fp.fingerprint(fp.PDF_PARSE, files=files), fp.fingerprint(fp.PDF_CORPUS, files=files)
    _edit(root / "htmlrag/superrag/retrieve/hybrid.py")  # retrieval: PDF runs, not the parse cache nor corpora
    assert fp.fingerprint(fp.ROWS, files=files) == rows
    assert fp.fingerprint(fp.PDF_ROWS, files=files) != pdf
    assert (fp.fingerprint(fp.PDF_PARSE, files=files), fp.fingerprint(fp.PDF_CORPUS, files=files)) == (parse, corpus)
    _edit(root / "htmlrag/superrag/parse/tables.py")  # the parser: parse cache and corpora too
    assert fp.fingerprint(fp.PDF_PARSE, files=files) != parse
    assert fp.fingerprint(fp.PDF_CORPUS, files=files) != corpus


def test_a_new_file_in_a_declared_package_changes_it(tree):
    root, files = tree
    before = fp.fingerprint(fp.ROWS, files=files)
    (root / "htmlrag/rankers/new_ranker.py").write_text("X = 1\n", encoding="utf-8")
    assert fp.fingerprint(fp.ROWS, files=files) != before


def test_the_installed_fingerprint_reads_the_same_files():
    """The default (installed packages) agrees with a listing of this checkout's folders."""
    def files(name: str) -> list[Path]:
        parts = name.split(".")
        if parts[0] == "htmlrag_bench":
            parts = parts[1:]
        base = ROOT.joinpath(*parts)
        if base.is_dir():
            return sorted(p for p in base.rglob("*.py") if "__pycache__" not in p.parts)
        return [base.with_suffix(".py")] if base.with_suffix(".py").is_file() else []

    assert fp.fingerprint(fp.ROWS) == fp.fingerprint(fp.ROWS, files=files)


def test_every_declared_package_exists():
    for name in {*fp.ROWS, *fp.PDF_ROWS, *fp.PDF_PARSE, *fp.PDF_CORPUS, *fp.METRICS}:
        assert fp.locate(name), f"{name} is declared in htmlrag.core.fingerprint but has no source files"
