"""The metric registry is one table (htmlrag.evaluation.scoring.metrics.METRICS), not import side effects.

The per-example functions live with what they measure (QA: htmlrag.evaluation.scoring.qa; document QA:
htmlrag.docqa.metrics); the table lists every one, and nothing has to be imported for a metric to exist.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from htmlrag.core.errors import HtmlRagError
from htmlrag.evaluation.scoring import metrics as registry

ROOT = Path(__file__).resolve().parents[2]

#: The metric names users write in ``metric.names`` and read as columns of predictions.jsonl / metrics.json.
NAMES = {"em", "hit1", "exact_match", "f1", "rouge_l", "bleu", "str_em", "ref_em", "response_tokens",
         "evidence_recall", "evidence_hit", "answer_recall", "answer_hit", "answer_f1", "judge", "judge_invalid"}


def test_importing_the_registry_alone_gives_every_metric() -> None:
    # a fresh interpreter: no test or harness module has imported docqa first
    code = ("import json, sys; from htmlrag.evaluation.scoring.metrics import METRICS; "
            "print(json.dumps({n: [m.fn.__module__, m.needs, m.higher_is_better] for n, m in METRICS.items()}))")
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                    cwd=ROOT).stdout)
    assert set(out) == NAMES
    assert {out[n][0] for n in ("em", "bleu", "ref_em")} == {"htmlrag.evaluation.scoring.qa"}
    assert {out[n][0] for n in ("evidence_hit", "answer_f1", "judge")} == {"htmlrag.docqa.metrics"}
    assert out["evidence_recall"][1] == "context" and out["judge"][1] == "judge"
    assert out["response_tokens"][2] is False and out["judge_invalid"][2] is False


def test_every_entry_is_complete() -> None:
    for name, m in registry.METRICS.items():
        assert m.name == name
        assert m.needs in ("response", "context", "judge"), name
        assert m.description and m.fn.__doc__, f"{name}: the table shows the definition, the function states it"
        assert callable(m.aggregate)


def test_a_name_listed_twice_is_an_error() -> None:
    em = registry.METRICS["em"]
    with pytest.raises(HtmlRagError, match="listed twice"):
        registry._table(em, registry.Metric("em", em.fn))


def test_nothing_registers_a_metric_by_being_imported() -> None:
    """No module calls ``register`` at import time and no import exists only for its side effect."""
    offenders = []
    for folder in ("htmlrag", "eval", "training", "scripts", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == Path(__file__).resolve():
                continue
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
            for node in tree.body:  # module level only: a call there runs on import
                calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and any(
                        ast.unparse(c.func).endswith(("register", "register_all")) and "metric" in ast.unparse(c).lower()
                        for c in calls):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            offenders += [f"{path.relative_to(ROOT)}:{i}" for i, line in enumerate(text.splitlines(), 1)
                          if "noqa: F401" in line and "regist" in line]
    assert not offenders, f"metrics registered as an import side effect: {offenders}"


def test_the_document_qa_metrics_do_not_import_the_evaluation() -> None:
    for module in ("metrics", "items"):
        tree = ast.parse((ROOT / "htmlrag" / "docqa" / f"{module}.py").read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not {m for m in imported if m and m.startswith("htmlrag.evaluation")}, module
