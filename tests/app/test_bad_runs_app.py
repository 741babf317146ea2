"""Bad run folders in the results browser (issue 38, class 5): a run whose ``metrics.json`` or ``config.yaml``
cannot be read, or has the wrong shape, is listed and flagged while the other runs show; a malformed row gives
the run, question and diff pages a 400 naming the file, the line and the field -- never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from htmlrag.app.server import create_app
from tests.app.conftest import settings_for
from tests.helpers.app_data import RUN_IDS, make_results


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[TestClient, Path, dict[str, str]]]:
    ids = make_results(tmp_path / "results")
    with TestClient(create_app(settings_for(tmp_path)), raise_server_exceptions=False) as c:
        yield c, tmp_path / "results" / ids["A"], ids


def _metrics(d: Path, text: str | None = None, **change: object) -> None:
    if text is not None:
        (d / "metrics.json").write_text(text)
        return
    m = json.loads((d / "metrics.json").read_text())
    m.update(change)
    (d / "metrics.json").write_text(json.dumps(m))


BAD_FILES = {
    "metrics.json garbage": lambda d: _metrics(d, "{not json"),
    "metrics.json binary": lambda d: (d / "metrics.json").write_bytes(b"\xff\xfe\x00\x01"),
    "metrics.json a list": lambda d: _metrics(d, "[1, 2]"),
    "systems a list": lambda d: _metrics(d, systems=[1]),
    "a system a string": lambda d: _metrics(d, systems={"bm25": "x", "minilm": {}}),
    "a metric a string": lambda d: _metrics(d, systems={"bm25": {"metrics": {"ref_em": "high"}}}),
    "metric_names a string": lambda d: _metrics(d, metric_names="ref_em"),
    "config.yaml garbage": lambda d: (d / "config.yaml").write_text("a: [\n"),
    "config.yaml a list": lambda d: (d / "config.yaml").write_text("- a\n"),
    # nested aliases ("billion laughs"): loads at once, but every walk of it (a diff flattens configs) is
    # exponential; the harness never writes aliases
    "config.yaml aliases": lambda d: (d / "config.yaml").write_text(
        "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n"
                                                    for p, c in zip("abcdefgh", "bcdefghi", strict=True))),
    "overrides.yaml aliases": lambda d: (d / "overrides.yaml").write_text("- &a x\n- *a\n"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_run_is_listed_flagged_and_hides_no_other(app: tuple, case: str) -> None:
    client, run_a, ids = app
    BAD_FILES[case](run_a)
    listing = client.get("/api/results")
    assert listing.status_code == 200
    runs = {r["run_id"]: r for e in listing.json() for r in e["runs"]}
    assert set(runs) == set(RUN_IDS.values())
    assert runs[RUN_IDS["A"]]["problems"] and not runs[RUN_IDS["B"]]["problems"]
    page = client.get("/results")
    assert page.status_code == 200 and "unreadable:" in page.text and RUN_IDS["B"] in page.text
    detail = client.get(f"/results/run/{ids['A']}")
    assert detail.status_code == 200 and "unreadable:" in detail.text
    assert client.get(f"/api/results/runs/{ids['A']}").status_code == 200
    assert client.get(f"/results/diff?a={ids['A']}&b={ids['B']}").status_code in (200, 400)


ROWS = {
    "not an object": ([1, 2], "a row must be a JSON object"),
    "a score a string": ({"id": "q2", "index": 1, "systems": {"bm25": {"scores": {"ref_em": "1.0"}}}},
                         "systems.bm25.scores.ref_em"),
    "systems a list": ({"id": "q2", "index": 1, "systems": [1]}, "systems: must be dict"),
    "a system a string": ({"id": "q2", "index": 1, "systems": {"bm25": "x"}}, "systems.bm25"),
    "tokens a string": ({"id": "q2", "index": 1, "systems": {"bm25": {"tokens": "9"}}}, "systems.bm25.tokens"),
    "id an object": ({"id": {"a": 1}}, "'id'"),
}


@pytest.mark.parametrize("case", list(ROWS))
def test_a_bad_row_gives_a_400_naming_file_line_and_field(app: tuple, case: str) -> None:
    client, run_a, ids = app
    row, field = ROWS[case]
    lines = (run_a / "predictions.jsonl").read_text().splitlines()
    lines[1] = json.dumps(row)
    (run_a / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    routes = [f"/api/results/runs/{ids['A']}/questions", f"/api/results/runs/{ids['A']}/questions/q1",
              f"/results/run/{ids['A']}/q/q1", f"/results/diff?a={ids['A']}&b={ids['B']}",
              f"/api/results/diff?a={ids['A']}&b={ids['B']}",
              f"/api/results/diff/question?a={ids['A']}&b={ids['B']}&id=q1&metric=ref_em"]
    for route in routes:
        r = client.get(route)
        assert r.status_code == 400, (route, r.status_code, r.text[:300])
        assert "predictions.jsonl:2" in r.text and field.replace("'", "&#39;") in r.text.replace("'", "&#39;"), \
            (route, r.text[:500])
    assert client.get("/api/results").status_code == 200          # the list still shows every run


FILE_FAULTS = {  # a file the app reads that is not a readable file: a folder in its place, or gone
    "predictions.jsonl a folder": lambda d: ((d / "predictions.jsonl").unlink(), (d / "predictions.jsonl").mkdir()),
    "config.yaml a folder": lambda d: ((d / "config.yaml").unlink(), (d / "config.yaml").mkdir()),
    "tables/results.csv a folder": lambda d: ((d / "tables" / "results.csv").unlink(),
                                              (d / "tables" / "results.csv").mkdir()),
}


@pytest.mark.parametrize("case", list(FILE_FAULTS))
def test_a_run_file_that_is_a_folder_gives_a_400_naming_it(app: tuple, case: str) -> None:
    client, run_a, ids = app
    FILE_FAULTS[case](run_a)
    routes = [f"/api/results/runs/{ids['A']}", f"/results/run/{ids['A']}", f"/api/results/runs/{ids['A']}/questions",
              f"/api/results/runs/{ids['A']}/questions/q1", f"/results/run/{ids['A']}/q/q1",
              f"/results/diff?a={ids['A']}&b={ids['B']}", f"/api/results/diff?a={ids['A']}&b={ids['B']}"]
    for route in routes:
        r = client.get(route)
        assert r.status_code in (200, 400), (route, r.status_code, r.text[:300])
        if r.status_code == 400:
            assert "internal error" not in r.text and case.split()[0].split("/")[-1] in r.text, (route, r.text[:300])
            if r.headers["content-type"].startswith("application/json"):  # (pages show the served folder)
                assert str(run_a.parent.parent) not in r.json()["detail"]  # the folder on this machine is not shown
    assert client.get("/api/results").status_code == 200


@pytest.mark.parametrize("value", ["NaN", "1e400", "Infinity", "-Infinity"])
@pytest.mark.parametrize(("route", "body"), [("/api/ask", '{"question": "x", "k": %s}'),
                                             ("/api/ask", '{"question": "x", "budget": %s}'),
                                             ("/api/prune", '{"sample": "lighthouse.html", "question": "x", "budget": %s}')])
def test_a_number_json_cannot_hold_gives_a_422_not_a_500(app: tuple, route: str, body: str, value: str) -> None:
    client, _, _ = app
    r = client.post(route, content=body % value, headers={"Content-Type": "application/json"})
    assert r.status_code in (400, 422), (route, r.status_code, r.text[:300])
    assert r.json()["detail"]  # valid JSON, naming the field


@pytest.mark.parametrize("name", ["predictions.jsonl", "config.yaml", "tables/results.csv"])
def test_a_fifo_in_a_run_is_refused_at_once_never_waited_on(app: tuple, name: str) -> None:
    """Opening a FIFO waits for a writer: a request reading one held its thread for good. The run is refused
    naming the file; verify and the harness's row reader refuse it too."""
    import os

    from htmlrag.evaluation.store import RunStore
    from htmlrag.evaluation.verify import verify_run

    client, run_a, ids = app
    (run_a / name).unlink()
    os.mkfifo(run_a / name)
    for route in (f"/api/results/runs/{ids['A']}", f"/results/run/{ids['A']}",
                  f"/api/results/runs/{ids['A']}/questions", f"/api/results/diff?a={ids['A']}&b={ids['B']}"):
        r = client.get(route)
        assert r.status_code == 400 and "not a regular file" in r.text, (route, r.status_code, r.text[:200])
    assert client.get("/api/results").status_code == 200
    report = verify_run(run_a)
    assert not report.ok and any(f.where == name for f in report.findings)
    if name == "predictions.jsonl":
        with pytest.raises(Exception, match="not a regular file"):
            RunStore.read_rows(run_a / name)


@pytest.mark.parametrize(("route", "body"), [
    ("/api/ask", '{"question": "\\ud800"}'), ("/api/ask", '{"question": "x", "cypher": "RETURN \'\\ud800\' AS x"}'),
    ("/api/ask", '{"question": "x", "docs": ["a\\udfff"]}'),
    ("/api/prune", '{"html": "<p>\\ud800</p>", "question": "x"}'),
    ("/api/prune", '{"sample": "lighthouse.html", "question": "\\udc00"}'),
])
def test_a_lone_surrogate_in_a_json_string_is_a_422_naming_the_field(app: tuple, route: str, body: str) -> None:
    client, _, _ = app
    r = client.post(route, content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and "surrogate" in r.text, (r.status_code, r.text[:300])
