"""The paper's prompts against an OpenAI-compatible stub server on 127.0.0.1 (a thread in this process): the
few-shot ToC selection, the Cypher-generation prompt, and figure descriptions by a vision model (cached)."""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("pymupdf")
pytest.importorskip("kuzu")
pytest.importorskip("httpx")

from htmlrag.readers.base import GenerationConfig
from htmlrag.readers.openai import OpenAIReader
from htmlrag.superrag.build.corpus import CorpusConfig, build_corpus, open_corpus
from htmlrag.superrag.build.embed import HashingEmbedder
from htmlrag.superrag.prompts import chosen_lines
from htmlrag.superrag.settings import GraphSetting, setting_retriever
from htmlrag.testing import pdfs as mk

KEY = "sk-stub-never-stored-5e1d"
FIGURE_REPLY = "A bar chart: widget sales rise from 10 to 40 units over four quarters."


class _Stub:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.auth: list[str | None] = []
        self.cypher = "none"

    def reply(self, body: dict) -> str:
        content = body["messages"][-1]["content"]
        if isinstance(content, list):  # a picture: the figure step
            url = next(p["image_url"]["url"] for p in content if p["type"] == "image_url")
            assert base64.b64decode(url.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
            return FIGURE_REPLY
        if "### Table of contents" in content:
            return "The question asks about region B's details, found under C.\n- 3.1 Details of C .... p. 3"
        if "Cypher query" in content:
            return f"```cypher\n{self.cypher}\n```"
        return "no"


@pytest.fixture(scope="module")
def stub() -> Iterator[tuple[_Stub, str]]:
    s = _Stub()

    class H(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            s.requests.append(body)
            s.auth.append(self.headers.get("Authorization"))
            out = json.dumps({"choices": [{"message": {"content": s.reply(body)}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield s, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def _chat(base_url_env: str = "STUB_BASE_URL"):
    reader = OpenAIReader("stub-model", generation=GenerationConfig(max_new_tokens=64), base_url_env=base_url_env,
                          api_key_env="STUB_KEY", max_retries=0)
    return lambda prompt: reader._generate([[{"role": "user", "content": prompt}]])[0][0]


@pytest.fixture(scope="module")
def corpus(stub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    url = stub[1]
    mp = pytest.MonkeyPatch()
    mp.setenv("STUB_BASE_URL", url)
    mp.setenv("STUB_KEY", KEY)
    folder = tmp_path_factory.mktemp("db")
    pdf = mk.report_pdf(folder / "report.pdf")
    cfg = CorpusConfig(vector_backend="numpy", figure_model="stub-vlm", figure_base_url_env="STUB_BASE_URL",
                       figure_api_key_env="STUB_KEY")
    (res,) = build_corpus([pdf], folder / "db", config=cfg, embedder=HashingEmbedder())
    assert res.ok, res.error
    yield folder
    mp.undo()


def test_figures_are_described_by_the_vision_model_and_indexed(stub, corpus: Path) -> None:
    s, _ = stub
    images = [r for r in s.requests if isinstance(r["messages"][-1]["content"], list)]
    assert len(images) == 1 and images[0]["model"] == "stub-vlm"
    assert "Figure 1: Widget sales chart" in images[0]["messages"][-1]["content"][0]["text"]  # the caption is quoted
    assert s.auth[s.requests.index(images[0])] == f"Bearer {KEY}"
    with open_corpus(corpus / "db", embedder=HashingEmbedder()) as c:
        (fig,) = c.store.query("MATCH (f:Figure) RETURN f.text AS t")
        assert fig["t"].endswith(f"Description: {FIGURE_REPLY}")
        hits = c.retrieve("bar chart widget sales rise quarters", retriever="bm25", k=3)
        assert hits[0].kind == "Figure"
    manifest = (corpus / "db" / "manifest.json").read_text()
    assert KEY not in manifest and "STUB_KEY" in manifest  # the variable's name, never the key


def test_figure_descriptions_are_cached(stub, corpus: Path, tmp_path: Path) -> None:
    from htmlrag.superrag.build.figdesc import FigureDescriber
    from htmlrag.superrag.parse.document import parse_pdf

    reader = OpenAIReader("stub-vlm", base_url_env="STUB_BASE_URL", api_key_env="STUB_KEY", max_retries=0)
    describe = FigureDescriber(reader, tmp_path / "figs.sqlite")
    doc = parse_pdf(corpus / "report.pdf")
    first = describe(doc)
    again = FigureDescriber(reader, tmp_path / "figs.sqlite")(doc)
    assert describe.requests == 1 and first.figures[0].text == again.figures[0].text
    assert first.figures[0] in [i for sec in first.sections for i in sec.items]  # the section's item too
    assert not doc.figures[0].text.endswith(FIGURE_REPLY)  # the input is not changed


def test_toc_selection_prompt_picks_the_sections_the_model_names(stub, corpus: Path) -> None:
    s = stub[0]
    with open_corpus(corpus / "db", embedder=HashingEmbedder()) as c:
        n = len(s.requests)
        ev = c.retrieve("What are the details of region B?", retriever="toc", k=5, toc_reader=_chat())
        prompt = s.requests[n]["messages"][-1]["content"]
        # the paper's few-shot shape: instructions, a worked example, then this document's contents and the query
        assert prompt.startswith("Assume you are reading a book.") and prompt.count("### Table of contents") == 2
        assert "  2.1 Details of B .... p. 2" in prompt and prompt.rstrip().endswith("### Answer")
        # the model's choice, not title similarity (which would pick "2.1 Details of B"), decides
        assert ev and all(e.pages == (3,) for e in ev) and any("Marker3." in e.text for e in ev)
        retr = setting_retriever(c, GraphSetting(toc=True, toc_select="reader", k=3), toc_reader=_chat())
        assert len(retr("What are the details of region B?", 3)) == 3
        from htmlrag.core.errors import HtmlRagError

        with pytest.raises(HtmlRagError, match="needs a reader"):
            setting_retriever(c, GraphSetting(toc=True, toc_select="reader"))


def test_chosen_lines_ignores_reasoning_bullets_and_page_suffixes() -> None:
    lines = ["Item 2. MD&A .... p. 17", "  Gross Margin .... p. 20", "  Gross Margin .... p. 31"]
    reply = "Step 1: the query is about margins.\n* gross margin\n1. Gross Margin .... p. 20\nItem 2. MD&A"
    assert chosen_lines(reply, lines) == [1, 2, 0]
    assert chosen_lines("nothing relevant", lines) == []


def test_cypher_prompt_has_the_papers_shape_and_an_empty_reply_runs_nothing(stub, corpus: Path) -> None:
    s = stub[0]
    with open_corpus(corpus / "db", embedder=HashingEmbedder()) as c:
        doc = c.documents()[0]["id"]
        s.cypher = "none"
        n = len(s.requests)
        assert c.retrieve("Which table is on page 2?", retriever="cypher", cypher_writer=_chat(), doc_ids=[doc]) == []
        prompt = s.requests[n]["messages"][-1]["content"]
        for part in ("graph schema", "Guidelines", "Good examples:", "Bad examples:", "User request: Which table",
                     f'doc_ids: ["{doc}"]', "return nothing"):
            assert part in prompt
        assert re.search(r"- Table: a table;", prompt)  # the schema is in it
        s.cypher = f'MATCH (t:`Table`)-[:ON_PAGE]->(p:Page) WHERE p.page_start = 2 AND t.doc_id IN ["{doc}"] RETURN t.id AS id'
        ev = c.retrieve("Which table is on page 2?", retriever="cypher", cypher_writer=_chat(), doc_ids=[doc])
        assert [e.kind for e in ev] == ["Table"] and ev[0].pages == (2,)
        s.cypher = "MATCH (n) DETACH DELETE n"
        from htmlrag.superrag.graph.readonly import WriteQueryError

        with pytest.raises(WriteQueryError):
            c.retrieve("delete everything", retriever="cypher", cypher_writer=_chat(), doc_ids=[doc])
