"""The LLM judge against a real HTTP stub server on 127.0.0.1 (a thread in this process): verdicts, malformed
verdicts and malformed HTTP replies are reported (never dropped), replies are cached, the key is never stored;
and the judge step of a full run (tiny generated DOCBENCH set, fake reader)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from htmlrag.core.cache import SqliteCache
from htmlrag.docqa.judge import JudgeItem, LLMJudge, ReaderChat, summarize_verdicts
from htmlrag.readers import GenerationConfig
from htmlrag.readers.openai import OpenAIReader

KEY = "sk-judge-test-NEVER-STORED-91c2"
PROMPT = "Question: {{question}}\nUser Answer: {{sys_ans}}\nReference Answer: {{ref_ans}}\nReference Text: {{ref_text}}"


class Stub:
    """Replies by the user answer's marker: GOOD -> "1", BAD -> "Correctness: 0", VAGUE -> a reply without a
    verdict, BOTH -> "0 or 1", BROKEN -> a non-JSON HTTP body; anything else -> "1"."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.auth: list[str | None] = []
        self.lock = threading.Lock()

    def reply(self, body: dict) -> tuple[int, bytes]:
        user = body["messages"][-1]["content"]
        answer = user.split("User Answer:", 1)[1].split("\n", 1)[0]
        if "BROKEN" in answer:
            return 200, b"<html>proxy error</html>"
        text = ("Correctness: 0" if "BAD" in answer else "The answer seems plausible." if "VAGUE" in answer
                else "0 or 1" if "BOTH" in answer else "1")
        return 200, json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode()


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stub]:
    s = Stub()

    class H(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with s.lock:
                s.requests.append(body)
                s.auth.append(self.headers.get("Authorization"))
            code, data = s.reply(body)
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("JUDGE_TEST_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("JUDGE_TEST_KEY", KEY)
    yield s
    server.shutdown()
    server.server_close()


def _reader() -> OpenAIReader:
    return OpenAIReader("judge-model", generation=GenerationConfig(max_new_tokens=8), base_url_env="JUDGE_TEST_URL",
                        api_key_env="JUDGE_TEST_KEY", max_retries=1, backoff=0.01, concurrency=2)


def test_judge_verdicts_malformed_replies_and_cache(stub: Stub, tmp_path: Path) -> None:
    cache = SqliteCache(tmp_path / "judge.sqlite", "judge")
    judge = LLMJudge(ReaderChat(_reader()), PROMPT, cache=cache, concurrency=3)
    items = [JudgeItem("q1", "GOOD answer", "gold", "ref text"), JudgeItem("q2", "BAD answer", "gold"),
             JudgeItem("q3", "VAGUE answer", "gold"), JudgeItem("q4", "BROKEN answer", "gold"),
             JudgeItem("q5", "BOTH answer", "gold")]
    v = judge.judge(items)
    assert [x.status for x in v] == ["ok", "ok", "unparsable", "failed", "unparsable"]
    assert [x.score for x in v] == [1, 0, None, None, None]
    assert [x.judge for x in v] == [1.0, 0.0, 0.0, 0.0, 0.0] and [x.invalid for x in v] == [0, 0, 1, 1, 1]
    assert "malformed response" in v[3].raw
    s = summarize_verdicts(v)
    assert (s["n"], s["ok"], s["unparsable"], s["failed"]) == (5, 2, 2, 1)
    assert s["accuracy"] == pytest.approx(0.2) and s["accuracy_valid_only"] == pytest.approx(0.5)
    assert s["invalid_rate"] == pytest.approx(0.6)
    (first,) = [r for r in stub.requests if "Question: q1" in r["messages"][-1]["content"]]
    assert first["messages"][0] == {"role": "system", "content": "You are a helpful evaluator."}
    assert "Reference Text: ref text" in first["messages"][1]["content"] and first["model"] == "judge-model"
    assert set(stub.auth) == {f"Bearer {KEY}"}
    n = len(stub.requests)  # 4 answered + 2 attempts for BROKEN
    assert n == 6
    again = judge.judge(items)  # answered replies (verdict or not) come from the cache; the failure is retried
    assert [x.cached for x in again] == [True, True, True, False, True] and len(stub.requests) == n + 2
    assert KEY not in (tmp_path / "judge.sqlite").read_bytes().decode("utf-8", "replace")


def test_judge_step_of_a_run_reports_invalid_verdicts(stub: Stub, tmp_path: Path) -> None:
    from hydra import compose, initialize_config_dir

    from htmlrag_bench.eval.app import run
    from htmlrag_bench.eval.schemas import CONF_DIR, register_configs
    from tests.helpers.docqa_data import offline_pdf_overrides

    register_configs()
    overrides = ["experiment=superrag_quickstart", *offline_pdf_overrides(), "judge=docbench_gpt4",
                 "judge.reader.base_url_env=JUDGE_TEST_URL", "judge.reader.api_key_env=JUDGE_TEST_KEY",
                 "judge.reader.max_retries=0", "reader=fake", "metric=docqa", "dataset.limit=3",
                 "+baselines.s1_nonlayout.graph.k=5", f"paths.results={tmp_path}/results",
                 f"paths.cache={tmp_path}/cache", "run.progress=false"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    run(cfg)
    (run_dir,) = (tmp_path / "results" / "superrag_quickstart").iterdir()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    systems = metrics["systems"]
    assert set(systems) == {"htmlrag_pdf", "htmlrag_pdf_bm25", "s1_nonlayout", "s2_layout", "s3_reflect"}
    for s in systems.values():
        assert s["n"] == 3 and s["metrics"]["judge"] is not None and s["metrics"]["judge_invalid"] is not None
    report = json.loads((run_dir / "judge.json").read_text())
    assert report["overall"]["n"] == 15 and report["overall"]["failed"] == 0
    lines = [json.loads(x) for x in (run_dir / "judgments.jsonl").read_text().splitlines()]
    assert len(lines) == 15 and {x["status"] for x in lines} <= {"ok", "unparsable"}
    assert "judge_invalid" in (run_dir / "tables" / "results.md").read_text()
    for f in run_dir.rglob("*"):
        if f.is_file():
            assert KEY not in f.read_text(encoding="utf-8", errors="replace"), f
