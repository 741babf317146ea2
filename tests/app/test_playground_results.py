"""The pruning playground and the results browser through the JSON API and the pages."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from htmlrag.pruning.tokens import load_tokenizer

LIGHTHOUSE_Q = "Who designed Harrow Point Lighthouse?"


def test_samples_are_listed(client: TestClient) -> None:
    assert "lighthouse.html" in client.get("/api/samples").json()


@pytest.mark.parametrize("budget", [48, 128, 400])
def test_pruning_keeps_the_best_blocks_within_the_budget(client: TestClient, budget: int) -> None:
    r = client.post("/api/prune", json={"sample": "lighthouse.html", "question": LIGHTHOUSE_Q, "budget": budget,
                                        "ranker": "bm25", "max_words": 32})
    assert r.status_code == 200, r.text
    res = r.json()
    t = res["tokens"]
    assert t["raw"] > t["cleaned"] >= t["pruned"] and 0 < t["pruned"] <= budget
    assert load_tokenizer(None).count(res["pruned_html"]) == t["pruned"]
    kept = [b for b in res["blocks"] if b["kept"]]
    assert kept and len(kept) == res["blocks_kept"] and sorted(b["index"] for b in kept) == sorted(res["kept_order"])
    assert "Margaret Ellis" in res["pruned_html"]  # the best block (rank 1) fits every budget here
    best = min((b for b in res["blocks"] if b["rank"]), key=lambda b: b["rank"])
    assert best["kept"] and best["score"] == max(b["score"] for b in res["blocks"])
    assert res["cleaned_marked"].count('data-hr="kept"') + res["cleaned_marked"].count('data-hr="own"') >= len(kept)


def test_a_bigger_budget_keeps_more(client: TestClient) -> None:
    small, big = (client.post("/api/prune", json={"sample": "lighthouse.html", "question": LIGHTHOUSE_Q,
                                                  "budget": b, "max_words": 32}).json() for b in (48, 400))
    assert big["blocks_kept"] > small["blocks_kept"] and big["tokens"]["pruned"] > small["tokens"]["pruned"]


def test_ranker_none_cuts_the_cleaned_page(client: TestClient) -> None:
    res = client.post("/api/prune", json={"sample": "lighthouse.html", "budget": 64, "ranker": "none"}).json()
    assert res["blocks_kept"] == 0 and res["tokens"]["pruned"] <= 64 and all(b["score"] is None for b in res["blocks"])


def test_pasted_html_is_cleaned(client: TestClient) -> None:
    html = "<html><body><script>var x=1</script><div><div><p>Alpha beta gamma.</p></div></div><p>Other text.</p></body></html>"
    res = client.post("/api/prune", json={"html": html, "question": "alpha", "budget": 32}).json()
    assert "<script" not in res["cleaned_html"] and "Alpha beta gamma" in res["pruned_html"]
    assert res["source"] == "pasted HTML"


@pytest.mark.parametrize(("body", "needle"), [
    ({"sample": "nope.html", "question": "q"}, "unknown sample"), ({"sample": "../../etc/passwd"}, "unknown sample"),
    ({"sample": "lighthouse.html", "question": "q", "budget": 3}, "budget"),
    ({"sample": "lighthouse.html", "question": "q", "ranker": "gpt"}, "unknown ranker"),
    ({"sample": "lighthouse.html", "question": " "}, "question is needed"), ({}, "choose a sample"),
    ({"html": "%PDF-1.7 not html"}, "not an HTML page"),
])
def test_bad_playground_input_is_refused(client: TestClient, body: dict, needle: str) -> None:
    r = client.post("/api/prune", json=body)
    assert r.status_code in (400, 415) and needle in r.json()["detail"]


def test_playground_page_renders_both_pages_and_the_block_tree(client: TestClient) -> None:
    html = client.post("/prune", data={"sample": "lighthouse.html", "question": LIGHTHOUSE_Q, "budget": "64",
                                       "ranker": "bm25", "max_words": "32"}).text
    assert html.count('sandbox=""') == 2 and 'id="block-tree"' in html and '<tr class="kept' in html
    assert 'data-stage="pruned"' in html
    key = html.split("/view/prune/")[1].split("/")[0]
    cleaned = client.get(f"/view/prune/{key}/cleaned").text
    pruned = client.get(f"/view/prune/{key}/pruned").text
    assert 'data-hr="kept"' in cleaned and "Margaret Ellis" in pruned
    assert client.get("/view/prune/unknown/cleaned").status_code == 400
    up = client.post("/prune", files={"file": ("t.html.gz", __import__("gzip").compress(b"<html><body><p>zeta eta</p></body></html>"),
                                               "application/gzip")}, data={"question": "zeta", "budget": "32"})
    assert up.status_code == 200 and "zeta eta" in up.text


def test_results_list_runs_with_fidelity_and_artefacts(client: TestClient) -> None:
    (exp,) = client.get("/api/results").json()
    assert exp["name"] == "demo" and len(exp["runs"]) == 2
    runs = {r["run_id"]: r for r in exp["runs"]}
    a, b = runs["aaaaaaaaaaa1"], runs["bbbbbbbbbbb2"]
    assert a["fidelity"] == "paper, except cleaner.keep_hidden=false" and b["fidelity"] == "unrecorded"
    assert a["overrides"] == ["experiment=demo", "pruner.budget=128"]
    assert a["metrics"]["bm25"]["ref_em"] == pytest.approx(2 / 3) and a["date"]
    assert {f["name"] for f in exp["artefacts"]} == {"figure5.png"}
    page = client.get("/results").text
    assert "figure5.png" in page and "paper, except cleaner.keep_hidden=false" in page and "unrecorded" in page


def test_run_detail_tables_and_questions(client: TestClient) -> None:
    d = client.get("/api/results/runs/demo/aaaaaaaaaaa1").json()
    names = {t["name"]: t for t in d["tables"]}
    assert names["results.csv"]["rows"][0] == ["system", "metric", "value"] and names["provenance.csv"]["provenance"]
    assert d["env"]["git_commit"].startswith("0123")
    qs = client.get("/api/results/runs/demo/aaaaaaaaaaa1/questions?limit=2").json()
    assert qs["total"] == 3 and [q["id"] for q in qs["items"]] == ["q1", "q2"]
    q = client.get("/api/results/runs/demo/aaaaaaaaaaa1/questions/q2").json()
    assert list(q["systems"]) == ["bm25", "minilm"]  # the run's system order
    assert q["answers"] == ["164"] and q["systems"]["bm25"]["context"] == "<p>bm25 context for q2 at 128</p>"
    page = client.get("/results/run/demo/aaaaaaaaaaa1/q/q2").text
    assert "&lt;p&gt;bm25 context for q2 at 128&lt;/p&gt;" in page  # shown as source, escaped
    nosave = client.get("/results/run/demo/bbbbbbbbbbb2/q/q2").text
    assert "context not saved" in nosave
    assert client.get("/api/results/runs/demo/aaaaaaaaaaa1/questions/zz").status_code == 400
    assert "provenance" in client.get("/results/run/demo/aaaaaaaaaaa1").text


def test_run_page_shows_the_frontier_waterfall_and_pareto_plots(client: TestClient) -> None:
    d = client.get("/api/results/runs/demo/aaaaaaaaaaa1").json()
    assert [p["name"] for p in d["plots"]] == ["frontier_ref_em.png", "waterfall.png", "pareto.png"]
    page = client.get("/results/run/demo/aaaaaaaaaaa1").text
    section = page.split('id="plots"', 1)[1].split("</section>", 1)[0]
    srcs = [x.split('"', 1)[0] for x in section.split('<img src="')[1:]]
    assert srcs == [f"/results/files/demo/aaaaaaaaaaa1/plots/{n}" for n in
                    ("frontier_ref_em.png", "waterfall.png", "pareto.png")]
    assert "Budget frontier (ref_em)" in section and "Stage-loss waterfall" in section and "Quality vs cost" in section
    assert client.get(srcs[0]).headers["content-type"] == "image/png"
    assert 'id="plots"' not in client.get("/results/run/demo/bbbbbbbbbbb2").text  # a run without plots


def test_diff_finds_the_flipped_questions(client: TestClient) -> None:
    d = client.get("/api/results/diff", params={"a": "demo/aaaaaaaaaaa1", "b": "demo/bbbbbbbbbbb2"}).json()
    assert d["metric"] == "ref_em" and d["shared"] == 3
    flips = {f["id"]: f["changed"] for f in d["flips"]}
    assert flips == {"q2": {"bm25": {"a": 1.0, "b": 0.0}}, "q3": {"minilm": {"a": 0.0, "b": 1.0}}}
    assert d["counts"]["bm25"] == {"gained": 0, "lost": 1, "same": 2, "missing": 0}
    same = client.get("/api/results/diff", params={"a": "demo/aaaaaaaaaaa1", "b": "demo/aaaaaaaaaaa1"}).json()
    assert same["flips"] == []
    page = client.get("/results/diff", params={"a": "demo/aaaaaaaaaaa1", "b": "demo/bbbbbbbbbbb2", "q": "q2"}).text
    assert "Flipped questions (2)" in page and 'id="pair"' in page
    # scores printed as the tables print them (x100), the full value on hover
    assert 'bm25 <span class="num" title="1.0">100.00</span> → <span class="num" title="0.0">0.00</span>' in page
    assert "bm25 context for q2 at 128" in page and "context not saved" in page
    assert client.get("/api/results/diff", params={"a": "demo/aaaaaaaaaaa1", "b": "demo/bbbbbbbbbbb2",
                                                   "metric": "bleu"}).status_code == 400
    pair = client.get("/api/results/diff/question", params={"a": "demo/aaaaaaaaaaa1", "b": "demo/bbbbbbbbbbb2",
                                                            "id": "q2", "metric": "ref_em"}).json()
    assert [(r["system"], r["changed"]) for r in pair["systems"]] == [("bm25", True), ("minilm", False)]
    assert pair["systems"][0]["a"]["context"] == "<p>bm25 context for q2 at 128</p>" and pair["systems"][0]["b"]["context"] is None


def test_results_browser_never_writes(client: TestClient, app_dir) -> None:
    pred = app_dir / "results" / "demo" / "aaaaaaaaaaa1" / "predictions.jsonl"
    torn = pred.read_bytes() + b'{"id": "q4", "torn'
    pred.write_bytes(torn)
    try:
        assert client.get("/api/results/runs/demo/aaaaaaaaaaa1/questions").json()["total"] == 3
        assert pred.read_bytes() == torn  # no repair from a reader
    finally:
        pred.write_bytes(torn[: -len(b'{"id": "q4", "torn')])
