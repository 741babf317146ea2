"""``htmlrag-data``: downloads against a local HTTP stub serving small fixtures (never the network):
resume after a cut transfer, restart when ranges are ignored, pinned and hub checksums, atomic installs, the
WikiTableQuestions build, the offline messages, ``list``/``verify``, and the harness's missing-download error."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from htmlrag.data import download as dl
from htmlrag.data.download import ChecksumError, DownloadError, build_wtq_html, fetch
from htmlrag_bench.eval.data_cli import main as data_main
from tests.helpers.http_stub import Stub, StubFile


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HF_ENDPOINT", "HTMLRAG_DATA_MIRROR", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(var, raising=False)


# ---------------------------------------------------------------- fetch
def test_cut_transfer_resumes_from_the_bytes_received(tmp_path: Path) -> None:
    body = os.urandom(300_000)
    with Stub({"/f.bin": StubFile(body, cut_once=120_000)}) as s:
        dest = tmp_path / "f.bin"
        with pytest.raises(DownloadError, match="run the same command again to resume"):
            fetch(s.url("/f.bin"), dest, sha256=_sha(body))
        part = tmp_path / "f.bin.part"
        assert not dest.exists() and 0 < part.stat().st_size <= 120_000
        kept = part.stat().st_size
        digest, size = fetch(s.url("/f.bin"), dest, sha256=_sha(body))
    assert dest.read_bytes() == body and digest == _sha(body) and size == len(body)
    assert s.requests[-1] == ("/f.bin", f"bytes={kept}-")  # asked only for the rest
    assert not part.exists()


def test_server_ignoring_ranges_restarts_cleanly(tmp_path: Path) -> None:
    body = b"0123456789" * 5000
    (tmp_path / "f.bin.part").write_bytes(b"stale bytes from another file")
    with Stub({"/f.bin": StubFile(body, ranges=False)}) as s:
        fetch(s.url("/f.bin"), tmp_path / "f.bin", sha256=_sha(body))
    assert (tmp_path / "f.bin").read_bytes() == body


def test_checksum_mismatch_deletes_the_download(tmp_path: Path) -> None:
    with Stub({"/f.bin": StubFile(b"not what was pinned")}) as s, pytest.raises(ChecksumError, match="deleted"):
        fetch(s.url("/f.bin"), tmp_path / "f.bin", sha256="0" * 64)
    assert not list(tmp_path.iterdir())


def test_a_complete_file_put_by_hand_is_checked_not_fetched(tmp_path: Path) -> None:
    (tmp_path / "f.bin").write_bytes(b"abc")
    assert fetch("http://127.0.0.1:9/never", tmp_path / "f.bin", sha256=_sha(b"abc"))[0] == _sha(b"abc")
    with pytest.raises(ChecksumError, match="wrong or damaged"):
        fetch("http://127.0.0.1:9/never", tmp_path / "f.bin", sha256="1" * 64)


# ---------------------------------------------------------------- hub files (HtmlRAG test sets)
def _htmlrag_rows() -> bytes:
    rows = [{"id": f"q{i}", "question": f"who built tower {i}?", "answers": [f"Builder {i}"],
             "bing_results": [{"html": f"<html><body><p>Tower {i} was built by Builder {i}.</p></body></html>"}]}
            for i in range(3)]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _hub_path(ds: str = "asqa") -> str:
    repo, rev = dl._HTMLRAG_TEST
    return f"/datasets/{repo}/resolve/{rev}/binghtml-slimplmqr-{ds}-test.jsonl"


def test_hub_dataset_downloads_verified_by_the_hubs_sha256(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from htmlrag.data import load_htmlrag_test

    body = _htmlrag_rows()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with Stub({_hub_path(): StubFile(body, headers={"X-Linked-Etag": f'"{_sha(body)}"'})}) as s:
        monkeypatch.setenv("HF_ENDPOINT", s.base)
        assert data_main(["--data-dir", str(tmp_path), "download", "asqa"]) == 0
    folder = tmp_path / "htmlrag-test" / "asqa"
    manifest = json.loads((folder / dl.MANIFEST).read_text())
    assert manifest["files"]["binghtml-slimplmqr-asqa-test.jsonl"]["sha256"] == _sha(body)
    examples = load_htmlrag_test("asqa", tmp_path / "htmlrag-test", sample_size=None)
    assert [e.answers for e in examples] == [["Builder 0"], ["Builder 1"], ["Builder 2"]] and examples[0].pages
    assert not (tmp_path / ".downloads" / "asqa").exists()  # fetched files moved into place


def test_hub_sha256_mismatch_fails_and_installs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with Stub({_hub_path("nq"): StubFile(_htmlrag_rows(), headers={"X-Linked-Etag": '"' + "a" * 64 + '"'})}) as s:
        monkeypatch.setenv("HF_ENDPOINT", s.base)
        assert data_main(["--data-dir", str(tmp_path), "download", "nq"]) == 1
    assert "SHA-256" in capsys.readouterr().err
    assert not (tmp_path / "htmlrag-test" / "nq").exists()


def test_offline_hub_message_names_source_and_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert data_main(["--data-dir", str(tmp_path), "download", "hotpot_qa"]) == 2
    err = capsys.readouterr().err
    assert "huggingface.co/datasets/zstanjj/HtmlRAG-test" in err
    assert str(tmp_path / ".downloads" / "hotpot_qa") in err and "htmlrag-data download hotpot_qa" in err
    assert "binghtml-slimplmqr-hotpot-qa-test.jsonl" in err and "Traceback" not in err


def test_unreachable_source_message_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("HTMLRAG_DATA_MIRROR", "http://127.0.0.1:9")  # nothing listens there
    assert data_main(["--data-dir", str(tmp_path), "download", "sec10q"]) == 2
    err = capsys.readouterr().err
    assert "github.com/docugami/KG-RAG-datasets" in err and str(tmp_path / ".downloads" / "sec10q") in err
    assert str(tmp_path / "pdf" / "sec-10-q") in err and "Traceback" not in err


def test_pinned_checksums_guard_the_real_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sec10q's files are pinned: a mirror serving other bytes is refused, nothing is installed."""
    first = dl.DATASETS["sec10q"].files[0]
    path = "/" + first.url.split("://", 1)[1].replace("%20", " ")
    with Stub({path: StubFile(b"a,b\n1,2\n")}) as s:
        monkeypatch.setenv("HTMLRAG_DATA_MIRROR", s.base)
        with pytest.raises(ChecksumError):
            dl.download("sec10q", tmp_path)
    assert not (tmp_path / "pdf" / "sec-10-q").exists()


# ---------------------------------------------------------------- WikiTableQuestions -> wtq-html-qa
def _wtq_zip(rows: int = 8) -> bytes:
    buf = io.BytesIO()
    lines = ["id\tutterance\tcontext\ttargetValue"]
    with zipfile.ZipFile(buf, "w") as z:
        for i in range(rows):
            answer = f"Answer{i}|Alt{i}" if i != 2 else "Nowhere"  # question 2's answer is not on its page
            lines.append(f"nt-{i}\twhat is row {i}?\tcsv/204-csv/{i}.csv\t{answer}")
            if i != 5:  # question 5's page is missing from the zip
                z.writestr(f"WikiTableQuestions/page/204-page/{i}.html",
                           f"<html><body><table><tr><td>Row {i}</td><td>Answer{i}</td></tr></table></body></html>")
        z.writestr("WikiTableQuestions/data/training.tsv", "\n".join(lines) + "\n")
        z.writestr("WikiTableQuestions/LICENSE", "CC BY-SA 4.0\n")
    return buf.getvalue()


def test_wtq_build_keeps_answerable_questions_with_distractors(tmp_path: Path) -> None:
    from htmlrag.data import load_wtq_html

    (tmp_path / "wtq.zip").write_bytes(_wtq_zip())
    assert build_wtq_html(tmp_path / "wtq.zip", tmp_path / "out", n=5, distractors=4) == 5
    rows = [json.loads(x) for x in (tmp_path / "out" / "questions.jsonl").read_text().splitlines()]
    assert {r["id"] for r in rows}.isdisjoint({"nt-2", "nt-5"})  # unanswerable / page missing: left out
    for r in rows:
        assert len(r["distractors"]) == 4 and r["page"] not in r["distractors"]
        assert r["answers"][0].startswith("Answer") and r["answers"][1].startswith("Alt")
    page = tmp_path / "out" / (rows[0]["page"] + ".gz")
    assert b"Answer" in gzip.decompress(page.read_bytes())
    examples = load_wtq_html(tmp_path / "out")
    assert len(examples) == 5 and all(len(e.pages) == 5 for e in examples)
    with pytest.raises(DownloadError, match="only 6 usable questions"):
        build_wtq_html(tmp_path / "wtq.zip", tmp_path / "out2", n=7)
    with pytest.raises(ChecksumError, match=r"training\.tsv"):
        build_wtq_html(tmp_path / "wtq.zip", tmp_path / "out3", n=5, training_sha256="0" * 64)


def _wtq_spec(monkeypatch: pytest.MonkeyPatch, zip_bytes: bytes, questions: int = 5) -> str:
    spec = dl.DATASETS["wtq_html_qa"]
    tsv = zipfile.ZipFile(io.BytesIO(zip_bytes)).read("WikiTableQuestions/data/training.tsv")
    opts = {**spec.options, "questions": questions, "training_sha256": _sha(tsv)}
    monkeypatch.setitem(dl.DATASETS, "wtq_html_qa", dataclasses.replace(spec, options=opts))
    return "/" + spec.files[0].url.split("://", 1)[1]


def test_wtq_download_builds_installs_and_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture) -> None:
    z = _wtq_zip()
    path = _wtq_spec(monkeypatch, z)
    with Stub({path: StubFile(z, cut_once=len(z) // 2)}) as s:  # the first try is cut: resumed on the second
        monkeypatch.setenv("HTMLRAG_DATA_MIRROR", s.base)
        assert data_main(["--data-dir", str(tmp_path), "download", "wtq_html_qa"]) == 1
        assert "resume" in capsys.readouterr().err
        assert dl.state(dl.DATASETS["wtq_html_qa"], tmp_path) == "partial"
        assert data_main(["--data-dir", str(tmp_path), "download", "wtq_html_qa"]) == 0
        n = len(s.requests)
        assert data_main(["--data-dir", str(tmp_path), "download", "wtq_html_qa"]) == 0  # installed: no request
        assert len(s.requests) == n and s.requests[1][1] is not None  # the second GET was a range request
    root = tmp_path / "wtq-html-qa"
    assert (root / "questions.jsonl").is_file() and (root / "LICENSE").read_text() == "CC BY-SA 4.0\n"
    assert not list(tmp_path.glob(".tmp-*")) and not (tmp_path / ".downloads" / "wtq_html_qa").exists()
    assert data_main(["--data-dir", str(tmp_path), "verify", "wtq_html_qa"]) == 0
    page = next(root.glob("page/*/*.html.gz"))
    page.write_bytes(gzip.compress(b"<p>changed</p>"))
    assert data_main(["--data-dir", str(tmp_path), "verify", "wtq_html_qa"]) == 1
    assert "SHA-256 differs" in capsys.readouterr().err


def test_a_failed_build_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    z = _wtq_zip()
    path = _wtq_spec(monkeypatch, z, questions=50)  # more than the fixture holds
    with Stub({path: StubFile(z)}) as s:
        monkeypatch.setenv("HTMLRAG_DATA_MIRROR", s.base)
        with pytest.raises(DownloadError, match="usable questions"):
            dl.download("wtq_html_qa", tmp_path)
    assert not (tmp_path / "wtq-html-qa").exists() and not list(tmp_path.glob(".tmp-*"))


def test_files_put_by_hand_work_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The offline message's advice works: the zip in .downloads/<name>/ is checked and built; a ready
    folder put in place is recorded. Nothing is fetched (the mirror is a closed port)."""
    z = _wtq_zip()
    _wtq_spec(monkeypatch, z)
    monkeypatch.setenv("HTMLRAG_DATA_MIRROR", "http://127.0.0.1:9")
    hand = tmp_path / ".downloads" / "wtq_html_qa" / "WikiTableQuestions-1.0.2.zip"
    hand.parent.mkdir(parents=True)
    hand.write_bytes(z)
    dl.download("wtq_html_qa", tmp_path)
    assert dl.state(dl.DATASETS["wtq_html_qa"], tmp_path) == "verified"
    ready = tmp_path / "docbench" / "0"
    ready.mkdir(parents=True)
    (ready / "0_qa.jsonl").write_text('{"question": "q", "answer": "a"}\n')
    assert dl.state(dl.DATASETS["docbench"], tmp_path) == "present"
    dl.download("docbench", tmp_path)
    assert dl.verify(dl.DATASETS["docbench"], tmp_path) == []


class _FakeGdown:
    """``gdown.download_folder`` writing DOCBENCH-like files, with gdown 6's arguments (``resume``) or gdown 5's
    (``remaining_ok`` too, and its stop at 50 files without it); ``cut_after`` files, then a dropped
    connection, once."""

    def __init__(self, version: int, files: dict[str, bytes], cut_after: int | None = None) -> None:
        self.version, self.files, self.cut_after, self.calls, self.written = version, files, cut_after, [], []
        import inspect

        def v5(url, output, quiet=False, remaining_ok=False, resume=False):
            return self._run(url, output, resume=resume, remaining_ok=remaining_ok)

        def v6(url, output, quiet=False, resume=False, retries=0):
            return self._run(url, output, resume=resume, remaining_ok=True)

        self.download_folder = v5 if version == 5 else v6
        assert "remaining_ok" in inspect.signature(v5).parameters

    def _run(self, url: str, output: str, *, resume: bool, remaining_ok: bool) -> list[str]:
        self.calls.append(url)
        if len(self.files) > 50 and not remaining_ok:
            raise RuntimeError("The gdrive folder has more than 50 files")
        out = []
        for rel, body in self.files.items():
            dest = Path(output) / rel
            if resume and dest.is_file():
                continue
            if self.cut_after is not None and len(self.written) == self.cut_after:
                self.cut_after = None
                raise ConnectionError("connection dropped")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(body)
            self.written.append(rel)
            out.append(str(dest))
        return out


@pytest.mark.parametrize("version", [5, 6])
def test_google_drive_folder_resumes_and_passes_only_arguments_gdown_has(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    """DOCBENCH comes through gdown: 60 files (over gdown 5's 50-file stop); the transfer drops after 25; the
    error names the source and nothing is installed; the rerun fetches only the 35 missing, then installs all 60
    and verifies. gdown 6 has no ``remaining_ok``: passing it raised TypeError, reported as 'unreachable'."""
    import sys

    files = {f"{i}/{i}_qa.jsonl": json.dumps({"question": f"q{i}", "answer": "a"}).encode() + b"\n" for i in range(60)}
    fake = _FakeGdown(version, files, cut_after=25)
    monkeypatch.setitem(sys.modules, "gdown", fake)
    with pytest.raises(dl.SourceUnreachable, match=r"drive\.google\.com"):
        dl.download("docbench", tmp_path)
    assert not (tmp_path / "docbench").exists() and len(fake.written) == 25
    root = dl.download("docbench", tmp_path)
    assert len(fake.written) == 60 and len(set(fake.written)) == 60  # nothing fetched twice
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*_qa.jsonl")) == sorted(files)
    assert dl.verify(dl.DATASETS["docbench"], tmp_path) == []
    assert not (tmp_path / ".downloads" / "docbench").exists()
    from htmlrag.data.docbench import download_docbench

    again = _FakeGdown(version, files)
    monkeypatch.setitem(sys.modules, "gdown", again)
    download_docbench(tmp_path / "by-function")
    assert len(again.written) == 60


# ---------------------------------------------------------------- list, configs, the harness
def test_list_names_every_dataset_its_source_and_the_experiments(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert data_main(["--data-dir", str(tmp_path), "list"]) == 0
    out = capsys.readouterr().out
    for ds in dl.DATASETS.values():
        assert f"| {ds.name} | missing |" in out and ds.source in out
    assert "paper/table5_wtq_offline" in out and "superrag_settings" in out and str(tmp_path) in out


def test_every_dataset_config_is_a_download_or_a_project_sample() -> None:
    from hydra import compose, initialize_config_dir

    from htmlrag_bench.eval.schemas import CONF_DIR, register_configs

    register_configs()
    for yaml in sorted((CONF_DIR / "dataset").glob("*.yaml")):
        if yaml.stem.endswith("_schema"):
            continue
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=[f"dataset={yaml.stem}", "paths.data=/D", "paths.samples=/S"])
        where = Path(cfg.dataset.loader.get("root") or cfg.dataset.loader.get("path"))
        if yaml.stem.startswith("sample_"):
            assert where.is_relative_to("/S"), yaml.stem
            continue
        spec = dl.get(yaml.stem)  # raises for a dataset config without a download
        assert (Path("/D") / spec.folder).is_relative_to(where) or where.is_relative_to(Path("/D") / spec.folder), \
            (yaml.stem, where, spec.folder)


def test_bench_names_the_download_a_missing_dataset_needs(tmp_path: Path) -> None:
    from hydra import compose, initialize_config_dir

    from htmlrag.core.errors import HtmlRagError
    from htmlrag_bench.eval.app import run
    from htmlrag_bench.eval.schemas import CONF_DIR, register_configs

    register_configs()
    for experiment in ("wtq_html_qa", "paper/table5_wtq_offline", "superrag_settings"):
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=[f"experiment={experiment}", f"paths.data={tmp_path}",
                                               f"paths.results={tmp_path}/r", f"paths.cache={tmp_path}/c"])
        with pytest.raises(HtmlRagError, match=r"htmlrag-data download (wtq_html_qa|sec10q)"):
            run(cfg)
