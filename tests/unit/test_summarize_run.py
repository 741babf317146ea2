"""scripts/summarize_run.py --against: two runs compared system by system on the questions both answered."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _run(folder: Path, em: dict[str, dict[str, float]]) -> Path:
    folder.mkdir(parents=True)
    cfg = {"name": "x", "system_name": "ours", "baselines": {"base": {}}, "dataset": {"name": "d"},
           "metric": {"names": ["em"], "alpha": 0.05}}
    (folder / "config.yaml").write_text(yaml.safe_dump(cfg))
    rows = []
    for i, (qid, scores) in enumerate(em.items()):
        rows.append({"id": qid, "index": i, "question": "q", "answers": ["a"], "error": None,
                     "systems": {s: {"scores": {"em": v}, "error": None, "seconds": 0.1, "tokens": 10} for s, v in scores.items()}})
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_against_pairs_by_question_id_and_tests_each_system(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", {"q1": {"ours": 1, "base": 0}, "q2": {"ours": 1, "base": 1}, "q3": {"ours": 0, "base": 0},
                              "q4": {"ours": 1, "base": 0}, "only_a": {"ours": 0, "base": 0}})
    b = _run(tmp_path / "b", {"q4": {"ours": 0, "base": 0}, "q3": {"ours": 0, "base": 1}, "q2": {"ours": 1, "base": 1},
                              "q1": {"ours": 0, "base": 0}})
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "summarize_run.py"), str(a), "--against", str(b)],
                         capture_output=True, text=True, check=True).stdout
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in out.splitlines() if line.startswith("| ours ") or line.startswith("| base ")}
    # ours: A 1,1,0,1 vs B 0,1,0,0 on the 4 shared questions (order differs between the files; only_a left out)
    assert rows["ours"][:5] == ["em", "4", "75.00", "25.00", "+50.00"]
    assert 0.05 < float(rows["ours"][5]) < 1.0
    assert rows["base"][:5] == ["em", "4", "25.00", "50.00", "-25.00"]
