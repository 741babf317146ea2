"""Every link the results pages render leads where it says, whatever the folder, file and question names hold
(``%``, ``#``, ``?``, spaces, ``~``, non-ASCII, ``%25``, ``a%41b``, ``\\``, quotes; ids with ``/``, ``.``,
``..``): the pages are rendered, every link on them followed, and each must answer 200 with the right content.
Before, file links were not quoted (``#`` and ``?`` cut them, ``%41`` was decoded once more) and a question id
holding ``/`` could not be opened."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
import starlette.testclient
from fastapi.testclient import TestClient
from markupsafe import escape

from htmlrag.app.server import create_app
from tests.app.conftest import settings_for
from tests.helpers.app_data import png_bytes

ODD = ["%", "#", "?", " ", "~", "é日本", "%25", "a%41b", "100%", "%zz", "a+b&c=d;e", "[x]", "it's", 'say "hi"',
       "x\\y", "~tmp", "%2F", "..a", "a..", "a b%20c"]
EXPERIMENTS = ["exp %25 #?~ é", "~tmp", "a%41b"]
RUNS = ["run %2525 #1?x", "r\\x é", "plain"]
QIDS = ["q/1", "a/b/c", "%2F", "%", "#3", "?x=1", "..", ".", " sp ", "é", "a+b", "q%41", "/lead", "trail/", "x//y"]


def make_odd_results(root: Path) -> dict[str, bytes]:
    """Runs with odd names, odd question ids and files in odd folders; returns {relative path: bytes} of every
    file the results browser serves."""
    files: dict[str, bytes] = {}

    def put(rel: str, data: bytes) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if not any(part.startswith(".") for part in rel.split("/")) and path.suffix in (".csv", ".md", ".txt", ".json", ".log", ".yaml", ".png", ".tex", ".jsonl"):
            files[rel] = data

    for e, exp in enumerate(EXPERIMENTS):
        put(f"{exp}/figure5.png", png_bytes())
        put(f"{exp}/tables/{ODD[e]} table #{e}.csv", f"metric,value\nref_em,0.{e}\n".encode())
        for r, run in enumerate(RUNS):
            base = f"{exp}/{run}"
            rows = [{"id": q, "index": i, "question": f"Question about {q}?", "answers": [f"answer {i}"], "error": None,
                     "systems": {"bm25": {"scores": {"ref_em": float((i + r) % 2)}, "response": f"reply {i}",
                                          "tokens": 3}}}
                    for i, q in enumerate(QIDS)]
            put(f"{base}/predictions.jsonl", "".join(json.dumps(x) + "\n" for x in rows).encode())
            put(f"{base}/config.yaml", b"name: odd\n")
            put(f"{base}/metrics.json", json.dumps({
                "dataset": "odd", "metric_names": ["ref_em"], "n_examples": len(QIDS), "n_failed_examples": 0,
                "system_order": ["bm25"], "systems": {"bm25": {"metrics": {"ref_em": 1.0}, "n": len(QIDS)}}}).encode())
            put(f"{base}/plots/frontier_{ODD[r]}.png", png_bytes())
            for k, name in enumerate(ODD[(e + r) % 5::3]):
                put(f"{base}/{name}/{ODD[(k + 1) % len(ODD)]} {k}.log", f"log {name} {k} é\n".encode())
                put(f"{base}/{name}/notes {k}.md", f"# notes {k}\n".encode())
            put(f"{base}/results.md", b"| system | ref_em |\n| --- | --- |\n| bm25 | 100.00 |\n")
            put(f"{base}/model.bin", b"\x00binary")  # listed, not served: no link
    return files


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for k, v in attrs:
            if k in ("href", "src") and v and v.startswith("/results"):
                self.links.append(v)  # the parser has unescaped the attribute, as a browser does


def links_of(page: str) -> list[str]:
    """The ``/results`` links of ``page``; none holds a dot segment (``.``, ``..``, ``%2e``...), which a browser
    would resolve away before sending (the test client does not)."""
    parser = Links()
    parser.feed(page)
    for link in parser.links:
        segments = urllib.parse.urlsplit(link).path.split("/")
        assert not any(seg.lower().replace("%2e", ".") in (".", "..") for seg in segments), link
    return parser.links


@pytest.fixture(scope="module")
def odd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, bytes]]]:
    d = tmp_path_factory.mktemp("odd-results")
    files = make_odd_results(d / "results")
    with pytest.MonkeyPatch.context() as mp, TestClient(create_app(settings_for(d))) as c:
        # Starlette's test client decodes the path twice (httpx2's URL.path is decoded already, and it unquotes
        # it again); a server (uvicorn) decodes it once, as this makes the client do.
        mp.setattr(starlette.testclient, "unquote", lambda path: path)
        yield c, files


def test_every_link_of_the_results_pages_leads_to_its_content(odd: tuple[TestClient, dict[str, bytes]]) -> None:
    client, files = odd
    seen_files: set[str] = set()
    seen_questions: set[tuple[str, str]] = set()
    runs: list[str] = []
    todo, done = ["/results"], set()
    while todo:
        url = todo.pop()
        if url in done:
            continue
        done.add(url)
        r = client.get(url)
        assert r.status_code == 200, (url, r.status_code, r.text[:300])
        path = urllib.parse.unquote(urllib.parse.urlsplit(url).path)
        if url.startswith("/results/files/"):
            rel = path[len("/results/files/"):]
            assert r.content == files[rel], url  # the file the link names, whole
            seen_files.add(rel)
        elif "/q/" in path or path.endswith("/q"):
            run = path[len("/results/run/"):].split("/q", 1)[0]
            qid = path.split("/q/", 1)[1] if "/q/" in path else urllib.parse.parse_qs(
                urllib.parse.urlsplit(url).query, keep_blank_values=True)["id"][0]
            assert f"Question about {escape(qid)}?" in r.text and f"id {escape(qid)}" in r.text, url
            seen_questions.add((run, qid))
        else:
            if path.startswith("/results/run/"):
                runs.append(path[len("/results/run/"):])
            todo += [link for link in links_of(r.text) if not link.startswith("/results/diff")]
    all_runs = {f"{e}/{r}" for e in EXPERIMENTS for r in RUNS}
    assert set(runs) == all_runs
    assert seen_files == set(files)  # every served file is linked, and every link opened it
    assert seen_questions == {(run, q) for run in all_runs for q in QIDS}


def test_files_the_browser_does_not_serve_are_listed_without_a_link(odd: tuple[TestClient, dict[str, bytes]]) -> None:
    client, _ = odd
    run = client.get(f"/api/results/runs/{urllib.parse.quote(EXPERIMENTS[0])}/plain").json()
    model = next(f for f in run["files"] if f["name"] == "model.bin")
    assert model["url"] is None
    assert all(f["url"] for f in run["files"] if f["name"] != "model.bin")


@pytest.mark.parametrize("qid", [q for q in QIDS if q not in (".", "..")])
def test_the_json_twin_opens_every_question(odd: tuple[TestClient, dict[str, bytes]], qid: str) -> None:
    client, _ = odd
    exp, run = (urllib.parse.quote(x, safe="") for x in (EXPERIMENTS[0], RUNS[0]))
    r = client.get(f"/api/results/runs/{exp}/{run}/questions/{urllib.parse.quote(qid, safe='')}")
    assert r.status_code == 200 and r.json()["id"] == qid


def test_the_diff_pages_links_open_each_flipped_question(odd: tuple[TestClient, dict[str, bytes]]) -> None:
    client, _ = odd
    a, b = f"{EXPERIMENTS[0]}/{RUNS[0]}", f"{EXPERIMENTS[1]}/{RUNS[1]}"
    page = client.get("/results/diff", params={"a": a, "b": b})
    assert page.status_code == 200
    pairs = [link for link in links_of(page.text) if "#pair" in link]
    assert len(pairs) == len(QIDS)  # every question flipped between the two runs
    for link in pairs:
        qid = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query, keep_blank_values=True)["q"][0]
        r = client.get(link)
        assert r.status_code == 200 and 'id="pair"' in r.text and f"Question about {escape(qid)}?" in r.text, link
    assert {urllib.parse.parse_qs(urllib.parse.urlsplit(x).query)["q"][0] for x in pairs} == set(QIDS)
