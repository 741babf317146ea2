"""Numeric options of every command are checked when parsed (issue 38, class 5): NaN, infinities, negatives,
zero where it is not allowed and non-numbers exit 2 with ``argument --x: must be ...``, naming the option --
before any model or file is loaded, and never blamed on a later stage (``--page-prior nan`` blamed the ranker).
Also ``graph build --db <a file>`` and ``graph query --doc <unknown>``."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag.cli.main import main
from tests.conftest import SAMPLE_PAGES

PAGE = str(SAMPLE_PAGES / "lighthouse.html")
BAD_NUMBERS = ["nan", "inf", "-inf", "-1", "abc", ""]

#: (command line before the option, option, bad values beyond BAD_NUMBERS, a good value)
OPTIONS: list[tuple[list[str], str, list[str], str]] = [
    (["tree", PAGE], "--max-words", ["0", "1.5"], "32"),
    (["tree", PAGE], "--preview", ["1e3"], "0"),
    (["prune", PAGE, "-q", "q"], "--budget", ["0", "2.5"], "64"),
    (["prune", PAGE, "-q", "q"], "--max-words", ["0"], "32"),
    (["prune", PAGE, "-q", "q", "--ranker2", "bm25"], "--budget1", ["0"], "8192"),  # >= --budget (4096)
    (["prune", PAGE, "-q", "q", "--ranker2", "bm25"], "--max-words2", ["0"], "16"),
    (["prune", PAGE, "-q", "q"], "--page-prior", ["1e400"], "0.5"),
    (["prune", PAGE, "-q", "q"], "--split-to-fill", [], "0"),
    (["prune", PAGE, "-q", "q"], "--embed-candidates", [], None),
    (["prune", PAGE, "-q", "q"], "--embed-max-seq", ["0"], None),
    (["prune", PAGE, "-q", "q"], "--embed-cpu-workers", ["0"], None),
    (["prune", PAGE, "-q", "q"], "--gen-max-prompt-tokens", ["0"], None),
    (["prune", "--batch", "in.jsonl", "--out", "out.jsonl"], "--workers", ["0", "1.5"], None),
    (["graph", "build", "x.pdf", "--db", "db"], "--chunk-words", ["0"], None),
    (["graph", "build", "x.pdf", "--db", "db"], "--knn-k", [], None),
    (["graph", "query", "q", "--db", "db"], "-k", ["0", "1001"], None),
    (["graph", "query", "q", "--db", "db"], "--preview", [], None),
    (["serve"], "--port", ["0", "65536"], None),
    (["serve"], "--max-new-tokens", ["0"], None),
    (["serve"], "--max-upload-mb", ["0"], None),
    (["serve"], "--max-html-mb", ["0"], None),
]


@pytest.mark.parametrize(("before", "option", "extra", "good"), OPTIONS, ids=[f"{o[0][0]}{o[1]}" for o in OPTIONS])
def test_bad_numbers_are_refused_when_parsed_naming_the_option(before: list[str], option: str, extra: list[str],
                                                               good: str | None,
                                                               capsys: pytest.CaptureFixture) -> None:
    for value in [*BAD_NUMBERS, *extra]:
        if option in ("--preview", "--split-to-fill", "--embed-candidates", "--knn-k") and value == "0":
            continue
        with pytest.raises(SystemExit) as exit_:
            main([*before, f"{option}={value}"])
        err = capsys.readouterr().err
        assert exit_.value.code == 2, (option, value)
        assert f"argument {option}: must be " in err and f"got {value!r}" in err and "Traceback" not in err, err
    if good is not None:
        assert main([*before, option, good]) == 0
        capsys.readouterr()


@pytest.mark.parametrize("value", ["nan", "-0.5", "inf"])
def test_page_prior_nan_never_reaches_the_ranker(value: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(["prune", PAGE, "-q", "q", "--ranker", "embed", "--page-prior", value])
    err = capsys.readouterr().err
    assert "argument --page-prior" in err and "ranker" not in err.split("argument --page-prior")[1]


def test_training_and_tiny_model_options_are_checked(capsys: pytest.CaptureFixture) -> None:
    from htmlrag_bench.training import build_data, tiny_model

    for argv in (["--pages", "q.jsonl", "--out", "o", "--max-words", "0"],
                 ["--pages", "q.jsonl", "--out", "o", "--heldout-fraction", "nan"],
                 ["--pages", "q.jsonl", "--out", "o", "--heldout-fraction", "1.5"],
                 ["--pages", "q.jsonl", "--out", "o", "--buckets", "1024", "-5"],
                 ["--pages", "q.jsonl", "--out", "o", "--limit", "0"]):
        with pytest.raises(SystemExit) as exit_:
            build_data.main(argv)
        assert exit_.value.code == 2 and "must be" in capsys.readouterr().err
    for argv in (["--seed", "-1"], ["--max-position-embeddings", "0"]):
        with pytest.raises(SystemExit) as exit_:
            tiny_model.main(argv)
        assert exit_.value.code == 2 and "must be" in capsys.readouterr().err


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("kuzu")
    pytest.importorskip("pymupdf")
    from htmlrag.testing.pdfs import report_pdf

    d = tmp_path_factory.mktemp("graph")
    pdf = report_pdf(d / "report.pdf")
    assert main(["graph", "build", str(pdf), "--db", str(d / "db"), "--embedding-model", "hashing-64",
                 "--vector-backend", "numpy"]) == 0
    return d / "db"


def test_graph_build_into_a_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    blocker = tmp_path / "db"
    blocker.write_text("a file")
    assert main(["graph", "build", "x.pdf", "--db", str(blocker)]) == 2
    err = capsys.readouterr().err
    assert f"--db {blocker}: not a folder" in err and "Traceback" not in err
    assert blocker.read_text() == "a file"


def test_graph_query_unknown_document_is_an_error(corpus: Path, capsys: pytest.CaptureFixture) -> None:
    capsys.readouterr()
    assert main(["graph", "query", "revenue", "--db", str(corpus), "--doc", "nope", "--doc", "nope2"]) == 1
    err = capsys.readouterr().err
    assert "--doc 'nope', 'nope2': not in the corpus" in err and "report-" in err
    assert main(["graph", "query", "revenue", "--db", str(corpus), "-k", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n      ") == 2   # two evidence items, each with its text line


@pytest.mark.parametrize("override", ["run.shard_timeout_s=inf", "metric.alpha=nan", "ranker=bm25 ranker.k1=inf",
                                      "ranker=bm25 ranker.b=nan", "run.shard_timeout_s=-inf"])
def test_harness_numbers_must_be_finite(override: str) -> None:
    """``htmlrag-bench``'s numeric settings refuse NaN and infinities, naming the field (before any work)."""
    from hydra import compose, initialize_config_dir

    from htmlrag.core.errors import HtmlRagError
    from htmlrag_bench.eval.schemas import CONF_DIR, register_configs, validate

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=override.split())
    field = override.split()[-1].split("=")[0]
    with pytest.raises(HtmlRagError, match=rf"{field}: must be (a finite number|> 0|>= 0)"):
        validate(cfg)
