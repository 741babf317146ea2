"""The results browser holds up against whatever a run folder holds (docs/app.md, docs/security.md section 8):
every value read from a run folder may have any JSON/YAML shape or encoding, and folders may have any name.
One bad run never hides the others: the list is a 200 listing every other run unflagged; the bad run's pages are
a 200 (the field not shown, or the run flagged "unreadable") or a 4xx naming the file -- never a 500.

A fuzz over the fields of ``metrics.json``, ``config.yaml``, ``env.json``, ``timings.json``, ``cost.json``,
``overrides.yaml`` (every field the app or the tables read, each given many wrong shapes), broken encodings, odd
folder names, deep folders and CSV files the CSV reader refuses."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from htmlrag.app.runs import fidelity_of
from htmlrag.app.server import create_app
from htmlrag.core.errors import InputError
from htmlrag.evaluation.runs import Run, special_files
from tests.app.conftest import settings_for
from tests.helpers.app_data import RUN_IDS, make_results

#: Wrong shapes every field is given in turn (JSON values; YAML files get them through ``yaml.safe_dump``).
SHAPES: dict[str, Any] = {
    "null": None, "int": 5, "big int": 123456789012345, "float": -1.5, "true": True, "string": "abc",
    "empty list": [], "list of ints": [1, 2], "nested object": {"a": {"b": [1]}},
}
METRICS_FIELDS = ["dataset", "experiment", "run_id", "ours", "n_examples", "n_failed_examples", "metric_names",
                  "system_order", "systems", "fidelity", "fidelity.name", "fidelity.deviations", "tests", "reader",
                  "intervals", "systems.bm25", "systems.bm25.metrics", "systems.bm25.metrics.ref_em",
                  "systems.bm25.intervals", "systems.bm25.intervals.ref_em", "systems.bm25.n",
                  "systems.bm25.n_errors", "systems.bm25.stage_tokens", "systems.bm25.reader_tokens", "config",
                  "frontier"]
CONFIG_FIELDS = ["dataset", "dataset.name", "fidelity", "fidelity.name", "pruner", "pruner.budget", "reader",
                 "reader.model", "name", "run", "paths"]
ENV_FIELDS = ["git_commit", "git_dirty", "fidelity"]


def _set(doc: Any, dotted: str, value: Any) -> Any:
    node = doc
    *path, last = dotted.split(".")
    for k in path:
        if not isinstance(node.get(k), dict):
            node[k] = {}
        node = node[k]
    node[last] = value
    return doc


def _json_field(name: str, dotted: str, value: Any) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        f = d / name
        doc = json.loads(f.read_text()) if f.is_file() else {}
        f.write_text(json.dumps(_set(doc, dotted, value)))
    return apply


def _yaml_field(name: str, dotted: str, value: Any) -> Callable[[Path], None]:
    import yaml

    def apply(d: Path) -> None:
        f = d / name
        doc = yaml.safe_load(f.read_text()) if f.is_file() else {}
        f.write_text(yaml.safe_dump(_set(doc if isinstance(doc, dict) else {}, dotted, value)))
    return apply


def _drop(path: Path, key: str) -> None:
    doc = json.loads(path.read_text())
    doc.pop(key, None)
    path.write_text(json.dumps(doc))


def _whole(name: str, text: str | bytes) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    return apply


def _append(name: str, data: bytes) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        with open(d / name, "ab") as f:
            f.write(data)
    return apply


def _deep(d: Path, levels: int = 1100) -> None:
    p = d / "plots"
    p.mkdir(parents=True, exist_ok=True)
    for _ in range(levels):
        p = p / "d"
        p.mkdir()


CASES: dict[str, Callable[[Path], None]] = {}
for _field in METRICS_FIELDS:
    for _shape, _value in SHAPES.items():
        CASES[f"metrics.json {_field} = {_shape}"] = _json_field("metrics.json", _field, _value)
for _field in CONFIG_FIELDS:
    for _shape, _value in SHAPES.items():
        CASES[f"config.yaml {_field} = {_shape}"] = _yaml_field("config.yaml", _field, _value)
for _shape, _value in SHAPES.items():  # the config is where the dataset is read from when metrics.json has none
    CASES[f"config.yaml dataset = {_shape}, no dataset in metrics.json"] = lambda d, v=_value: (
        _yaml_field("config.yaml", "dataset", v)(d), _drop(d / "metrics.json", "dataset"))
for _field in ENV_FIELDS:
    for _shape, _value in SHAPES.items():
        CASES[f"env.json {_field} = {_shape}"] = _json_field("env.json", _field, _value)
for _name in ("metrics.json", "env.json", "timings.json", "cost.json"):
    for _shape, _value in SHAPES.items():
        CASES[f"{_name} is {_shape}"] = _whole(_name, json.dumps(_value))
    CASES[f"{_name} not JSON"] = _whole(_name, "{not json")
    CASES[f"{_name} NaN"] = _whole(_name, '{"x": NaN, "systems": {"bm25": {"metrics": {"ref_em": NaN}}}}')
for _name in ("config.yaml", "overrides.yaml"):
    import yaml as _yaml

    for _shape, _value in SHAPES.items():
        CASES[f"{_name} is {_shape}"] = _whole(_name, _yaml.safe_dump(_value))
for _name in ("metrics.json", "config.yaml", "overrides.yaml", "env.json", "timings.json", "tables/notes.md",
              "tables/results.csv"):
    CASES[f"{_name} not UTF-8"] = _append(_name, b"\xff\xfe") if _name != "tables/notes.md" else _whole(
        _name, b"| a |\n|---|\n| \xff\xfe |\n")
    CASES[f"{_name} empty"] = _whole(_name, b"")
CASES.update({
    "tables/big.csv a field over the CSV limit": _whole("tables/big.csv", "a,b\n1," + "x" * 140_000 + "\n"),
    "tables/quote.csv a broken quote then a huge field": _whole("tables/quote.csv", 'a\n"' + "y" * 200_000),
    "tables/nul.csv NUL bytes": _whole("tables/nul.csv", b"a,b\n\x00,1\n"),
    "1,100 nested folders": _deep,
    "60 nested folders": lambda d: _deep(d, 60),
    "predictions row scores null": _whole("predictions.jsonl", json.dumps(
        {"id": "q1", "index": 0, "question": "q", "answers": ["a"], "systems": {"bm25": {"scores": None}}}) + "\n"),
})


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp = tmp_path_factory.mktemp("robust")
    (tmp / "results").mkdir()
    with TestClient(create_app(settings_for(tmp)), raise_server_exceptions=False) as c:
        c.results = tmp / "results"  # type: ignore[attr-defined]
        yield c


def _rm(path: Path) -> None:
    """Remove a folder however deep (``shutil.rmtree``, pytest's clean-up too, recurses: 1,100 levels left in
    the temporary folder would fail every later pytest's clean-up)."""
    subprocess.run(["rm", "-rf", str(path)], check=True)


@pytest.fixture
def results(client: TestClient) -> Iterator[dict[str, str]]:
    root: Path = client.results  # type: ignore[attr-defined]
    _rm(root)
    root.mkdir()
    ids = make_results(root)
    for rel in ids.values():  # the table a run writes, whose cells get hover titles from metrics.json
        (root / rel / "tables" / "results.md").write_text(
            "| system | ref_em |\n|---|---:|\n| bm25 | **66.67** |\n| minilm | <u>66.67</u> |\n", encoding="utf-8")
    yield ids
    _rm(root)


def _url(rel: str) -> str:
    """``rel`` as a path for the TestClient, which decodes a path twice (httpx once, then ``unquote`` again;
    a server decodes once): each part is quoted twice."""
    return "/".join(urllib.parse.quote(urllib.parse.quote(p, safe=""), safe="") for p in rel.split("/"))


def _check_list(client: TestClient, bad: str | None, others: list[str]) -> dict[str, dict]:
    listing = client.get("/api/results")
    assert listing.status_code == 200, listing.text[:500]
    runs = {r["id"]: r for e in listing.json() for r in e["runs"]}
    for rel in others:
        assert rel in runs and not runs[rel]["problems"], (rel, runs.get(rel))
    if bad is not None:
        assert bad in runs
    page = client.get("/results")
    assert page.status_code == 200, page.text[:500]
    for rel in others:
        assert rel.split("/")[1] in page.text
    return runs


def _check_run(client: TestClient, rel: str, other: str, file: str | None = None) -> None:
    routes = [f"/api/results/runs/{_url(rel)}", f"/results/run/{_url(rel)}",
              f"/api/results/runs/{_url(rel)}/questions", f"/api/results/runs/{_url(rel)}/questions/q1",
              f"/results/run/{_url(rel)}/q/q1",
              f"/results/diff?a={urllib.parse.quote(rel)}&b={urllib.parse.quote(other)}",
              f"/api/results/diff?a={urllib.parse.quote(rel)}&b={urllib.parse.quote(other)}"]
    for route in routes:
        r = client.get(route)
        assert r.status_code in (200, 400, 404), (route, r.status_code, r.text[:500])
        assert "internal error" not in r.text, (route, r.text[:500])
        if r.status_code != 200 and file is not None and "/q" not in route and "diff" not in route:
            assert file in r.text, (route, r.text[:500])


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_run_file_never_fails_the_list_nor_its_pages(client: TestClient, results: dict[str, str],
                                                           case: str) -> None:
    run_a = client.results / results["A"]  # type: ignore[attr-defined]
    CASES[case](run_a)
    _check_list(client, results["A"], [results["B"]])
    _check_run(client, results["A"], results["B"])


ODD_NAMES = ["~tmp", "a%41b", "x\\y", "p%25q", "a b", "q?x=1", "h#1", "é", "%", "%2e%2e", "~"]


@pytest.mark.parametrize("where", ["experiment", "run"])
@pytest.mark.parametrize("name", ODD_NAMES)
def test_a_run_under_an_odd_folder_name_is_listed_and_opens(client: TestClient, results: dict[str, str],
                                                            name: str, where: str) -> None:
    root: Path = client.results  # type: ignore[attr-defined]
    src = root / results["A"]
    rel = f"{name}/{RUN_IDS['A']}" if where == "experiment" else f"demo/{name}"
    shutil.copytree(src, root / rel)
    if where == "experiment":
        (root / name / "figure5.png").write_bytes((root / "demo" / "figure5.png").read_bytes())
    runs = _check_list(client, rel, [results["A"], results["B"]])
    assert not runs[rel]["problems"], runs[rel]
    for route in (f"/api/results/runs/{_url(rel)}", f"/results/run/{_url(rel)}", f"/results/run/{_url(rel)}/q/q1"):
        r = client.get(route)
        assert r.status_code == 200, (route, r.status_code, r.text[:300])
    assert client.get(f"/api/results/diff?a={urllib.parse.quote(rel)}&b={urllib.parse.quote(results['B'])}") \
        .status_code == 200
    page = client.get("/results").text  # the link the list gives opens the run
    assert f'href="/results/run/{urllib.parse.quote(rel)}"' in page  # each part quoted once, as a server reads it


def test_hidden_and_escaping_names_are_still_refused(client: TestClient, results: dict[str, str]) -> None:
    root: Path = client.results  # type: ignore[attr-defined]
    outside = root.parent / "outside_run"
    shutil.copytree(root / results["A"], outside)
    (root / "demo" / "link").symlink_to(outside, target_is_directory=True)
    shutil.copytree(root / results["A"], root / "demo" / ".hidden")
    for rel in ("demo/link", "demo/.hidden", "demo/..", "../results/demo", "demo/%2e%2e"):
        r = client.get(f"/api/results/runs/{_url(rel)}")
        assert r.status_code in (400, 404), (rel, r.status_code)
    runs = _check_list(client, None, [results["A"], results["B"]])
    assert "demo/.hidden" not in runs


def test_deep_folders_are_walked_without_recursion(tmp_path: Path) -> None:
    from htmlrag.evaluation.runs import walk

    try:
        _deep(tmp_path / "deep", 1100)
        with pytest.raises(InputError, match="nested deeper"):
            special_files(tmp_path / "deep")
    finally:
        _rm(tmp_path / "deep")
    shallow = tmp_path / "s"
    shallow.mkdir()
    _deep(shallow, 10)
    assert len(walk(shallow)) == 11 and special_files(shallow) == []


@pytest.mark.parametrize(("metrics", "config", "shown"), [
    ({"fidelity": {"name": "paper", "deviations": 5}}, None, "paper, except 5"),
    ({"fidelity": {"name": "paper", "deviations": "abc"}}, None, "paper, except abc"),
    ({"fidelity": {"name": "paper", "deviations": ["a", "b"]}}, None, "paper, except a; b"),
    ({"fidelity": {"name": ["x"]}}, {"fidelity": {"name": "ours"}}, "ours"),
    ({"fidelity": 5}, None, "5"),
    (None, {"fidelity": ["x"]}, "unrecorded"),
    (None, {"fidelity": {"name": {"a": 1}}}, "unrecorded"),
    (None, {"fidelity": "paper"}, "paper"),
])
def test_fidelity_of_any_shape(metrics: Any, config: Any, shown: str) -> None:
    assert fidelity_of(metrics, config) == shown


@pytest.mark.parametrize(("summary", "config", "dataset"), [
    ({}, {"dataset": "wtq"}, "wtq"), ({}, {"dataset": {"name": "asqa"}}, "asqa"), ({}, {"dataset": ["x"]}, ""),
    ({}, {"dataset": 5}, "5"), ({"dataset": "nq"}, {"dataset": "wtq"}, "nq"), ({}, {"dataset": {"name": {}}}, ""),
])
def test_run_dataset_of_any_config_shape(summary: dict, config: dict, dataset: str) -> None:
    run = Run(Path("r"), summary, config, 0.0)
    assert run.dataset == dataset
    assert run.settings()["dataset.name"]


# ------------------------------------------------------------------------------------------------ uploads, builds
def _job(c: TestClient, files: list[tuple[str, bytes]]) -> dict:
    from tests.app.conftest import wait_job

    r = c.post("/api/documents", files=[("files", (n, d, "application/octet-stream")) for n, d in files])
    assert r.status_code == 202, r.text
    return wait_job(c, r.json()["job"]["id"])


def _stored(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []


@pytest.mark.parametrize("where", ["opening the corpus", "adding the document"])
def test_a_build_that_fails_leaves_no_upload_and_names_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   where: str) -> None:
    """A build stopped by an error outside the parse (the corpus cannot be opened writable, the graph write
    fails) deletes the upload and its parse-cache entry at once, and its error shows no folder of this machine."""
    from htmlrag.superrag.build.corpus import WritableCorpus
    from htmlrag.superrag.system import CorpusHandle
    from htmlrag.testing import pdfs as mk

    (tmp_path / "results").mkdir()
    db = tmp_path / "db"

    def broken(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError(f"IO exception: cannot open {db.resolve()}/graph.kuzu for writing")

    if where == "opening the corpus":
        monkeypatch.setattr(CorpusHandle, "corpus", property(broken))
    else:
        monkeypatch.setattr(WritableCorpus, "add_document", broken)
    pdf = mk.report_pdf(tmp_path / "report.pdf")
    with TestClient(create_app(settings_for(tmp_path)), raise_server_exceptions=False) as c:
        job = _job(c, [("report.pdf", pdf.read_bytes())])
        assert job["status"] == "failed", job
        text = json.dumps(job)
        assert str(tmp_path) not in text and str(tmp_path.resolve()) not in text, text
        assert "graph.kuzu" in text  # the reason is still given
        assert _stored(db / "uploads") == [] and _stored(db / "parse-cache") == []


def test_a_gzipped_page_keeps_its_name_and_a_pdf_in_the_playground_is_a_415(tmp_path: Path) -> None:
    import gzip

    from htmlrag.app.uploads import check_upload
    from htmlrag.testing import pdfs as mk
    from tests.conftest import SAMPLE_PAGES

    page = (SAMPLE_PAGES / "lighthouse.html").read_bytes()
    for name, want in (("gz_named.html", "gz_named.html"), ("gz_named.htm", "gz_named.htm"),
                       ("p.html.gz", "p.html"), ("p.HTM.GZ", "p.HTM")):
        up = check_upload(name, gzip.compress(page), max_pdf_bytes=0, max_html_bytes=10**7)
        assert (up.name, up.data) == (want, page)
    (tmp_path / "results").mkdir()
    pdf = mk.report_pdf(tmp_path / "report.pdf").read_bytes()
    with TestClient(create_app(settings_for(tmp_path)), raise_server_exceptions=False) as c:
        job = _job(c, [("gz_named.html", gzip.compress(page))])
        assert job["status"] == "done" and job["items"][0]["name"] == "gz_named.html", job
        assert [d["name"] for d in c.get("/api/documents").json()["documents"]] == ["gz_named.html"]
        r = c.post("/prune", data={"question": "who", "budget": "256", "ranker": "bm25", "max_words": "64"},
                   files={"file": ("gz_named.html", gzip.compress(page), "text/html")})
        assert r.status_code == 200 and "gz_named.html" in r.text and "gz_named.h<" not in r.text
        for name in ("report.pdf", "REPORT.PDF"):
            r = c.post("/prune", data={"question": "who", "budget": "256", "ranker": "bm25", "max_words": "64"},
                       files={"file": (name, pdf, "application/pdf")})
            assert r.status_code == 415, (r.status_code, r.text[:300])
            assert "the playground prunes HTML pages, not PDFs" in r.text and "0.0 MB" not in r.text
