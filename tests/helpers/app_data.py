"""Data for the web app's tests: a small results/ folder with two runs of one experiment, and an HTTP stub of an
OpenAI-compatible endpoint (a thread on 127.0.0.1)."""

from __future__ import annotations

import json
import struct
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

QUESTIONS = [
    ("q1", "Who designed Harrow Point Lighthouse?", ["Margaret Ellis"]),
    ("q2", "How many steps does the tower have?", ["164"]),
    ("q3", "What is the range of the light?", ["22 nautical miles"]),
]
#: run -> system -> scores (ref_em) per question: q2 flips for bm25 (1 -> 0), q3 for minilm (0 -> 1).
SCORES = {"A": {"bm25": [1, 1, 0], "minilm": [1, 1, 0]}, "B": {"bm25": [1, 0, 0], "minilm": [1, 1, 1]}}
RUN_IDS = {"A": "aaaaaaaaaaa1", "B": "bbbbbbbbbbb2"}


def png_bytes(width: int = 4, height: int = 3) -> bytes:
    """A valid RGB PNG, all grey."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\x80\x80\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def make_results(root: Path, experiment: str = "demo") -> dict[str, str]:
    """Two runs of ``experiment`` under ``root`` (run A records fidelity and saves contexts; B does neither);
    returns {"A": "demo/<id>", "B": "demo/<id>"}."""
    out = {}
    for name, budget in (("A", 128), ("B", 256)):
        d = root / experiment / RUN_IDS[name]
        (d / "tables").mkdir(parents=True)
        (d / "config.yaml").write_text(f"name: {experiment}\npruner:\n  budget: {budget}\n", encoding="utf-8")
        (d / "overrides.yaml").write_text(f'- "experiment={experiment}"\n- "pruner.budget={budget}"\n', encoding="utf-8")
        (d / "env.json").write_text(json.dumps({"git_commit": "0123456789abcdef", "git_dirty": False}))
        rows = []
        for i, (qid, q, gold) in enumerate(QUESTIONS):
            systems = {}
            for s, sc in SCORES[name].items():
                rec = {"scores": {"ref_em": float(sc[i])}, "response": "", "tokens": budget - 10, "error": None}
                if name == "A":
                    rec["context"] = f"<p>{s} context for {qid} at {budget}</p>"
                systems[s] = rec
            rows.append({"id": qid, "index": i, "question": q, "answers": gold, "error": None, "systems": systems})
        (d / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        metrics = {"dataset": "sample_pages", "experiment": experiment, "metric_names": ["ref_em"], "n_examples": 3,
                   "n_failed_examples": 0, "ours": "minilm", "run_id": RUN_IDS[name], "system_order": ["bm25", "minilm"],
                   "systems": {s: {"metrics": {"ref_em": sum(v) / 3, "tokens": budget - 10.0}, "n": 3}
                               for s, v in SCORES[name].items()}}
        if name == "A":
            metrics["fidelity"] = {"name": "paper", "deviations": ["cleaner.keep_hidden=false"]}
        (d / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
        (d / "tables" / "results.csv").write_text("system,metric,value\nbm25,ref_em,0.5\n", encoding="utf-8")
        (d / "tables" / "provenance.csv").write_text(f"cell,run\nbm25/ref_em,{d}\n", encoding="utf-8")
        if name == "A":  # the plots a run writes (htmlrag.evaluation.report)
            (d / "plots").mkdir()
            for plot in ("pareto.png", "waterfall.png", "frontier_ref_em.png"):
                (d / "plots" / plot).write_bytes(png_bytes())
        out[name] = f"{experiment}/{RUN_IDS[name]}"
    (root / experiment / "figure5.png").write_bytes(png_bytes())
    return out


class _Stub(BaseHTTPRequestHandler):
    mode = "ok"  # "ok": answer; "echo401": a 401 whose body echoes the Authorization header
    answer = "Margaret Ellis"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.mode == "echo401":
            body = json.dumps({"error": f"invalid key: {self.headers.get('Authorization')}"}).encode()
            code = 401
        else:
            body = json.dumps({"choices": [{"message": {"content": self.answer}}], "usage": {"prompt_tokens": 9}}).encode()
            code = 200
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def openai_stub(mode: str = "ok") -> Iterator[str]:
    """An OpenAI-compatible endpoint on 127.0.0.1; yields its base URL (``.../v1``)."""
    handler = type("Stub", (_Stub,), {"mode": mode})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


#: Long system names, as real experiments have them (the paper's baselines with their settings).
WIDE_SYSTEMS = [f"{name}_budget_4096_window_131072_fidelity_paper" for name in (
    "vanilla_html", "plain_text", "markdown", "chunk_rerank_bm25", "chunk_rerank_bge_large_en_v1_5",
    "chunk_rerank_e5_mistral_7b_instruct", "longllmlingua", "jina_reader_lm_1_5b", "htmlrag_without_pruning",
    "htmlrag_bge_then_phi_3_5_mini_generative_pruner")]
LONG_QUESTION = ("Which lighthouse on the northern headland of Merrow Bay, first lit on 12 March 1871 and designed by "
                 "the engineer Margaret Ellis, was automated after the keepers left, according to the page at "
                 "https://example.org/coastal-heritage-trust/lighthouses/harrow-point/history/automation-and-keepers"
                 "-cottages-restoration-programme-2019-2024?section=timeline&lang=en ? " * 2)


def make_wide_results(root: Path, experiment: str = "paper_table1_main_llama_3_1_70b_instruct_128k") -> list[str]:
    """Two runs written as the harness writes them (rows, metrics.json, tables/) with realistic long content:
    ten long-named systems, long overrides, a long question; returns the runs' names."""
    from htmlrag.evaluation.run_tables import run_tables
    from htmlrag.evaluation.store import atomic_write, dump_json, manifest_text, rows_record
    from htmlrag.evaluation.summary import summarize

    names = []
    for k, budget in enumerate((2048, 4096)):
        d = root / experiment / f"{k}f3c9a1b2d4e{k}"
        rows = []
        for i in range(6):
            systems = {s: {"response": "Harrow Point" if (i + j + k) % 3 else "no", "tokens": budget - j, "error": None,
                           "scores": {"em": float(i <= j % 6), "hit1": float(i <= (j + k) % 4)},
                           "stage_tokens": {"cleaned": 9000 + j, "step1": budget}, "fmt": "html",
                           "context": f"<p>{s} context {i}</p>"} for j, s in enumerate(WIDE_SYSTEMS)}
            rows.append({"id": f"harrow-point-lighthouse-question-{i}", "index": i, "answers": ["Harrow Point"],
                         "question": LONG_QUESTION if i == 0 else f"Question {i}?", "long_answers": [],
                         "answer_groups": [], "error": None, "systems": systems})
        atomic_write(d / "predictions.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
        atomic_write(d / "rows.sha256", manifest_text(rows))
        overrides = ["experiment=paper/table1_main", f"pruner.budget={budget}", "reader=vllm_llama_3_1_70b_instruct",
                     "reader.window=131072", "dataset=asqa", "dataset.limit=1000", "fidelity=paper",
                     *(f"baselines.{s}.budget={budget}" for s in WIDE_SYSTEMS)]
        atomic_write(d / "overrides.yaml", "".join(f"- {json.dumps(o)}\n" for o in overrides))
        atomic_write(d / "config.yaml", f"name: {experiment}\ncaption: Table 1 with long names.\npruner:\n"
                                        f"  budget: {budget}\n")
        summary = summarize(rows, WIDE_SYSTEMS, ["em", "hit1"], ours=WIDE_SYSTEMS[-1], experiment=experiment,
                            run_id=d.name, dataset="asqa", fidelity={"name": "paper", "deviations": []})
        summary |= {"rows": rows_record(rows)}
        atomic_write(d / "metrics.json", dump_json(summary))
        for rel, text in run_tables(summary, rows, run=f"{experiment}/{d.name}", caption="Table 1.").items():
            atomic_write(d / "tables" / rel, text)
        names.append(f"{experiment}/{d.name}")
    return names
