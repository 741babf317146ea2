"""Judge reliability end to end, offline: the SuperRAG quickstart (the project's sample reports, the fake reader)
judged by a stub endpoint that contradicts itself on purpose (:mod:`htmlrag.testing.judge_stub`: answers of odd
length get 1, 0, 1, ... on successive requests), three draws per answer, and a second "model" on the same stub.

    python scripts/judge_agreement_stub.py          # results/judge_stub/<run id>

Prints the run's ``judge.json`` agreement and ``tables/judge_agreement.md``. The figures are those of a judge
built to disagree: they show the machinery, not any real judge's reliability.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=str(ROOT / "results"), help="paths.results (the run goes to judge_stub/)")
    ap.add_argument("--draws", type=int, default=3)
    args = ap.parse_args()
    from hydra import compose, initialize_config_dir

    from htmlrag.testing.judge_stub import FlipStub, serve
    from htmlrag_bench.eval.app import run
    from htmlrag_bench.eval.schemas import CONF_DIR, register_configs

    register_configs()
    stub = FlipStub(parity=True)
    with serve(stub) as url:
        os.environ.update({"FLIP_URL": url, "FLIP_KEY": "sk-stub"})
        judge = ["judge=docbench_gpt4", "judge.reader.base_url_env=FLIP_URL", "judge.reader.api_key_env=FLIP_KEY",
                 "judge.reader.model=stub-judge-a", f"judge.draws={args.draws}",
                 "judge.second={_target_: htmlrag.readers.openai.OpenAIReader, model: stub-judge-b, "
                 "base_url_env: FLIP_URL, api_key_env: FLIP_KEY, generation: {max_new_tokens: 4}}"]
        overrides = ["experiment=superrag_quickstart", "reader=fake", "metric=docqa", *judge,
                     f"paths.results={args.results}", "run.progress=false", "name=judge_stub"]
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=overrides)
        run(cfg)
    (run_dir,) = [p for p in (Path(args.results) / "judge_stub").iterdir() if p.is_dir()]
    report = json.loads((run_dir / "judge.json").read_text())
    print(f"run {run_dir}; {stub.requests} judge requests")
    print(json.dumps({k: report["agreement"][k]["all"] for k in report["agreement"]}, indent=1))
    print((run_dir / "tables" / "judge_agreement.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
