"""Flows a new user tries (issue 21): labels and captions follow the config, reader windows are derived or
refused, out-of-range settings exit non-zero naming the field, and our command lines print a summary and no
other package's chatter."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from htmlrag.core.errors import HtmlRagError
from htmlrag_bench.eval.schemas import CONF_DIR, register_configs
from tests.conftest import ROOT
from tests.helpers.configs import experiments

register_configs()
EXPERIMENTS = experiments()
#: Experiments whose caption or label may name a fixed setting (none: every caption follows the config).
NOT_YET: set[str] = set()


def _compose(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("config", overrides=overrides)


def _tmp(tmp_path: Path) -> list[str]:
    return [f"paths.results={tmp_path}/results", f"paths.cache={tmp_path}/cache", "run.progress=false"]


# ---------------------------------------------------------------- labels and captions
def test_quickstart_labels_and_caption_follow_ranker_and_budget() -> None:
    cfg = _compose(["experiment=quickstart", "ranker=bm25", "pruner.budget=256"])
    assert cfg.system_name == "ours_bm25" and "minilm" not in cfg.system_name
    assert "256-token budget" in cfg.caption and "128" not in cfg.caption and "bm25" in cfg.caption
    assert _compose(["experiment=quickstart"]).system_name == "ours_minilm"


@pytest.mark.parametrize("experiment", [e for e in EXPERIMENTS if e not in NOT_YET])
def test_no_experiment_caption_or_label_goes_stale(experiment: str) -> None:
    """The class of the quickstart bug: with another budget and ranker, no caption states the old budget and
    no label names a ranker that is not the one configured."""
    cfg = _compose([f"experiment={experiment}", "pruner.budget=777", "ranker=bm25"])
    stated = re.findall(r"(\d+)(?:-token| tokens|K context|K-context)", cfg.caption)
    configured = {"777"} | {str(b.budget) for b in cfg.baselines.values() if b is not None and "budget" in b}
    assert stated == [] or "777" in stated, (experiment, cfg.caption)  # the changed budget shows
    assert all(s in configured for s in stated), (experiment, cfg.caption)
    assert not re.search(r"minilm|bge|e5|embedding", cfg.system_name, re.I), (experiment, cfg.system_name)


# ---------------------------------------------------------------- reader windows
def test_fake_reader_window_is_derived_and_answers_score(tmp_path: Path) -> None:
    from htmlrag_bench.eval.app import run

    cfg = _compose(["experiment=quickstart", "ranker=bm25", "reader=fake", "metric=short", *_tmp(tmp_path)])
    run(cfg)
    (run_dir,) = (tmp_path / "results" / "quickstart").iterdir()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["systems"]["ours_bm25"]["metrics"]["hit1"] > 0  # was 0: the window left 25 context tokens
    rows = [json.loads(x) for x in (run_dir / "predictions.jsonl").read_text().splitlines()]
    shown = [r["systems"]["ours_bm25"]["tokens"] for r in rows]  # context tokens the reader was shown
    assert max(shown) > 100 and all(t <= 128 for t in shown), shown  # was <= ~25: the prompt ate the window


@pytest.mark.parametrize("reader", ["fake", "none"])
def test_a_set_window_that_cuts_contexts_is_refused(reader: str, tmp_path: Path) -> None:
    from htmlrag_bench.eval.app import run

    cfg = _compose(["experiment=quickstart", "ranker=bm25", f"reader={reader}", "reader.window=100",
                    "metric=context", *_tmp(tmp_path)])
    with pytest.raises(HtmlRagError, match=r"reader.window=100 cannot show the 128-token context of system 'ours_bm25' whole"):
        run(cfg)


def test_ensure_window_for_every_reader_kind() -> None:
    from htmlrag.readers import FakeReader, NoneReader
    from htmlrag.readers.base import BudgetError, ReadRequest, ensure_window
    from htmlrag.readers.openai import OpenAIReader

    req = ReadRequest("who designed the lighthouse?", "", "html", True)
    for make in (FakeReader, OpenAIReader.__init__ and (lambda window=None: OpenAIReader("m", window=window)),
                 NoneReader):
        r = make()
        need = ensure_window(r, [("a", 512, req), ("b", 1024, req)])
        assert r.window == need >= 1024 and r.fit(ReadRequest(req.question, "word " * 2000, "html")).context
        assert r.context_budget(req) >= 1024  # the largest context fits whole
        small = make(window=1024)
        if isinstance(small, NoneReader):
            assert ensure_window(small, [("b", 1024, req)]) == 1024
        else:
            with pytest.raises(BudgetError, match=r"reader\.window=1024"):
                ensure_window(small, [("b", 1024, req)])


# ---------------------------------------------------------------- ranges
@pytest.mark.parametrize("override,field", [
    ("pruner.budget=0", "pruner.budget"), ("pruner.max_words=0", "pruner.max_words"),
    ("pruner.max_words2=-1", "pruner.max_words2"), ("dataset.limit=0", "dataset.limit"),
    ("dataset.loader.sample_size=0", "dataset.loader.sample_size"), ("metric.alpha=1.5", "metric.alpha"),
    ("ranker.b=2", "ranker.b"), ("run.chunk_size=0", "run.chunk_size"),
    ("reader=openai reader.generation.top_p=0", "reader.generation.top_p"),
    ("reader=vllm reader.gpu_memory_utilization=1.5", "reader.gpu_memory_utilization"),
    ("ranker=minilm ranker.cpu_workers=0", "ranker.cpu_workers"),
    ("experiment=superrag_settings +baselines.s1_nonlayout.graph.k=0", "baselines.s1_nonlayout.graph.k"),
    ("experiment=superrag_settings docqa.corpus.title_depth=0", "docqa.corpus.title_depth"),
    ("experiment=paper/figure5_offline pruner.budget1=1000", "pruner.budget1"),
    # numpy's seed is 32-bit (a traceback from np.random.seed before); budgets checked before any work (a -1
    # made every system, valid budgets included, an error row)
    ("seed=-1", "seed"), ("seed=4294967296", "seed"), ("pruner.budget=99999999999", "pruner.budget"),
    ("pruner.budgets=[64,-1]", "pruner.budgets[1]"), ("pruner.budgets=[64,64]", "pruner.budgets[1]"),
    ("pruner.budgets=[0]", "pruner.budgets[0]"),
    ("experiment=quickstart +baselines.bm25.budgets=[64,20000000]", "baselines.bm25.budgets[1]"),
])
def test_out_of_range_settings_fail_naming_the_field(override: str, field: str) -> None:
    from htmlrag_bench.eval.schemas import validate

    cfg = _compose(override.split())
    with pytest.raises(HtmlRagError, match=re.escape(field) + ":"):
        validate(cfg)


def test_valid_settings_pass() -> None:
    from htmlrag_bench.eval.schemas import validate

    for overrides in ([], ["experiment=quickstart"], ["pruner.budget=8192"], ["dataset.limit=null"],
                      ["experiment=paper/figure5_offline"], ["metric.alpha=1"], ["seed=4294967295"],
                      ["pruner.budgets=[64,128,10000000]"]):
        validate(_compose(overrides))


def test_cli_budget_zero_exits_1_naming_the_field(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "htmlrag_bench.eval.app", "pruner.budget=0", *_tmp(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1
    assert "pruner.budget: must be >= 1, got 0" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "results" / "default").exists()  # refused before any work


# ---------------------------------------------------------------- output of our command lines
def test_third_party_chatter_is_filtered_ours_is_kept() -> None:
    import bm25s

    from htmlrag.core.logs import quiet_third_party

    root = logging.getLogger()
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    root.addHandler(handler)
    old = root.level
    root.setLevel(logging.DEBUG)
    try:
        quiet_third_party()
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(["a lighthouse on the point", "a river festival"], show_progress=False),
                        show_progress=False)
        logging.getLogger("htmlrag.pruning.pipeline").info("ours at info")
        logging.getLogger("bm25s").warning("theirs at warning")
    finally:
        root.removeHandler(handler)
        root.setLevel(old)
    text = buf.getvalue()
    assert "Building index" not in text
    assert "ours at info" in text and "theirs at warning" in text


def _prune(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "htmlrag", "prune", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                                       "HF_HUB_OFFLINE": "1"})


def test_prune_prints_one_summary_line_single_and_batch(tmp_path: Path) -> None:
    page = ROOT / "data" / "pages" / "lighthouse.html"
    single = _prune(str(page), "-q", "Who designed Harrow Point Lighthouse?", "--budget", "64", cwd=tmp_path)
    assert single.returncode == 0 and single.stdout.strip()
    assert re.fullmatch(r"htmlrag: prune: 1 page\(s\) -> \d+ tokens \(budget 64, bm25\) in [\d.]+ s\n", single.stderr)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "question": q, "page_paths": [str(page)]}) + "\n"
                           for i, q in enumerate(["Who designed it?", "How many steps?", "When was it lit?"])))
    first = _prune("--batch", str(src), "--out", str(tmp_path / "out.jsonl"), "--budget", "64", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    line = first.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"htmlrag: prune: 3 items: 3 done now, 0 skipped \(already in .*out.jsonl\), 0 errors; "
                        r"\d+ tokens \(\d+ per item\); [\d.]+ s( \((?:[2-9]|[1-9]\d+) processes\))?", line), line
    rerun = _prune("--batch", str(src), "--out", str(tmp_path / "out.jsonl"), "--budget", "64", cwd=tmp_path)
    assert rerun.returncode == 0 and "3 items: 0 done now, 3 skipped" in rerun.stderr
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 3
