"""Download the datasets the configs name into one data folder (``paths.data``): checksummed, resumable,
atomic, and with a clear message when the source cannot be reached.

Every dataset has an entry in :data:`DATASETS` (named as its ``conf/dataset/`` option): where it comes from,
its licence, its size, the experiments that need it, and the folder under the data folder it lands in
(the layout its loader reads). :func:`download`:

1. fetches each file into ``<data>/.downloads/<name>/`` as ``<file>.part``; an interrupted transfer resumes
   from the bytes already there (HTTP ``Range``), or restarts cleanly when the server ignores ranges;
2. checks every file's SHA-256 against the pinned value (:class:`Remote`), or against the hub's own
   (``X-Linked-Etag``: the SHA-256 of a large hub file), and otherwise records it; a mismatch deletes the
   file and fails;
3. builds the dataset folder in a temporary folder beside its target (WikiTableQuestions: questions and
   Wikipedia pages in the ``wtq-html-qa`` layout; FinanceBench: its 10-K/10-Q questions in the sec-10-q layout) with a manifest ``.htmlrag-data.json`` (the SHA-256 of
   every file), then renames it into place: a dataset folder is complete or absent. The build links or
   copies the fetched files; ``.downloads/<name>/`` is deleted only after the rename, so a failed or killed
   build keeps them and the rerun fetches nothing again.
4. holds ``<data>/.downloads/<name>.lock`` throughout: a second download of the same dataset into the same
   data folder (jobs of a cluster array) waits, then finds it installed.

Sources are fetched with ``httpx``. Hub files use the hub's ``resolve`` URL (``HF_ENDPOINT``, token from
``HF_TOKEN``); ``HF_HUB_OFFLINE=1`` stops before any request. ``HTMLRAG_DATA_MIRROR=<base URL>`` fetches every
other source from ``<base>/<host>/<path>`` (an institutional mirror; the tests' local server). A file put by
hand in the downloads folder is used as if downloaded (and checked); a dataset folder put in place by hand is
used as is, and ``download`` only records its checksums.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as _dt
import gzip
import hashlib
import io
import json
import logging
import os
import random
import re
import shutil
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import lxml.html

from htmlrag.core.errors import HtmlRagError
from htmlrag.core.io import atomic_write, place_file, sha256_file
from htmlrag.data.financebench import DOCUMENTS as FB_DOCUMENTS
from htmlrag.data.financebench import FB_COMMIT, FB_RAW, FB_REPO, build_financebench, financebench_pdfs
from htmlrag.data.financebench import FORMS as FB_FORMS
from htmlrag.data.financebench import PINNED as FB_PINNED
from htmlrag.data.financebench import QUESTIONS as FB_QUESTIONS

log = logging.getLogger(__name__)

MANIFEST = ".htmlrag-data.json"
HUB = "https://huggingface.co"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class DownloadError(HtmlRagError):
    """A download failed; the message says what to do next."""


class SourceUnreachable(DownloadError):
    """The source cannot be reached (offline, DNS, refused); the message names the URL and the folder to put
    the files in by hand."""


class ChecksumError(DownloadError):
    """A file's SHA-256 differs from the expected one (the file was deleted)."""


@dataclass(frozen=True)
class Remote:
    """One file of a dataset.

    Attributes:
        url: ``https://...``, or ``hub:<repo>@<revision>:<path>`` for a hub dataset file.
        path: where it lands, relative to the dataset folder (and to its downloads folder).
        sha256: the pinned SHA-256 (verified); ``None``: the hub's, or recorded on first download.
        size: bytes, when known (shown by ``list``).
    """

    url: str
    path: str
    sha256: str | None = None
    size: int | None = None


@dataclass(frozen=True)
class Dataset:
    """A downloadable dataset (see the module docstring).

    Attributes:
        name: the ``conf/dataset/`` option it serves.
        title: what it is.
        source: the page a person would download it from.
        license: its licence.
        size: download size, in words.
        needed_by: experiments (``experiment=...``) that read it.
        folder: where it lands under the data folder (the loader's layout).
        files: files to fetch (more may follow from :attr:`more_files`).
        method: ``http`` (fetch ``files``), ``gdown`` (a Google Drive folder).
        build: ``copy`` (files as they are), ``wtq`` (:func:`build_wtq_html` from the release zip) or
            ``financebench`` (:func:`htmlrag.data.financebench.build_financebench`: the sec-10-q layout).
        options: settings of the build (``wtq``: questions, seed, the pinned SHA-256 of ``training.tsv``).
        by_hand: what to put where when nothing can be fetched (after "put ...").
        more_files: files that depend on a fetched one (SPIQA: one arXiv PDF per paper of the split).
    """

    name: str
    title: str
    source: str
    license: str
    size: str
    needed_by: tuple[str, ...]
    folder: str
    files: tuple[Remote, ...] = ()
    method: str = "http"
    build: str = "copy"
    options: dict[str, Any] = field(default_factory=dict)
    by_hand: str = ""
    more_files: Callable[[Path], list[Remote]] | None = None


# ---------------------------------------------------------------- the registry
_HTMLRAG_TEST = ("zstanjj/HtmlRAG-test", "4a98d91366b3fbddf62a33f9fb5cdb7f7bd18741")
_HTMLRAG_SIZES = {"asqa": "2.9 GB", "hotpot-qa": "3.0 GB", "nq": "2.8 GB", "trivia-qa": "2.1 GB",
                  "musique": "3.1 GB", "eli5": "3.6 GB"}
_PAPER_TABLES = ("paper/table1_main", "paper/table2_long_context", "paper/table3_ablation", "paper/table4_cost",
                 "paper/table5_info_loss", "paper/table6_long_context_8b", "paper/table7_pruner_size",
                 "formats_4k")


def _htmlrag_test(dataset: str) -> Dataset:
    repo, rev = _HTMLRAG_TEST
    file = f"binghtml-slimplmqr-{dataset}-test.jsonl"
    extra = ("paper/figure5_granularity",) if dataset != "musique" and dataset != "eli5" else ()
    return Dataset(
        name=dataset.replace("-", "_"),
        title=f"HtmlRAG test set {dataset}: 400 questions with the Bing-retrieved HTML pages (the authors')",
        source=f"{HUB}/datasets/{repo}", license="MIT", size=_HTMLRAG_SIZES[dataset],
        needed_by=(*_PAPER_TABLES, *extra, "paper_4k" if dataset == "nq" else ""),
        folder=f"htmlrag-test/{dataset}", files=(Remote(f"hub:{repo}@{rev}:{file}", file),),
        by_hand=f"{file} (from {HUB}/datasets/{repo}/tree/{rev})")


_SEC = "https://raw.githubusercontent.com/docugami/KG-RAG-datasets/547f132d3c2bcc2b9976ca1d8413b99d8ba45aa1"
#: sec-10-q v1 at that commit: SHA-256 and size of every file (computed from the repository's objects).
_SEC_FILES = {
    "qna_data.csv": ("123e548078da98d845da4807c621efc7a36ecc7ece55c43953b70464f6d5ca64", 232793),
    "docs/2022 Q3 AAPL.pdf": ("a7a0d8261a0923404fc45446afd71b9965bd2b4064772df0287e761bb68ba9f2", 266240),
    "docs/2022 Q3 AMZN.pdf": ("ad3c4a5006bbb5419556d9166995cc470a8960a154e64db3b403125d3ac2735d", 501892),
    "docs/2022 Q3 INTC.pdf": ("8cf709656d668bed67f0a4f6f2d64b690a86d6706a16bc5d20cf99ac1c6e9624", 3829387),
    "docs/2022 Q3 MSFT.pdf": ("8ae253ddee9624102ce5544c0be9d4283f872694f46132ae1f5609e6ba3538c0", 1861635),
    "docs/2022 Q3 NVDA.pdf": ("2c8c5b0c40750bccfa07bd478b077528f488a5e5fa4c1ce7c0cd366a20046080", 425419),
    "docs/2023 Q1 AAPL.pdf": ("1e0c49e6661d6344e1b380d723b177ac8c542d21fd41d83fc69ef0990914f091", 377754),
    "docs/2023 Q1 AMZN.pdf": ("99dea36a2e898f4627da3edec76702113ce60a0eb5a8350a1956a7ed5279b472", 487820),
    "docs/2023 Q1 INTC.pdf": ("1d784bd3773635e48ae6b63d0fc9fab64b7f73dca7d402443b72e21eec5d166f", 476090),
    "docs/2023 Q1 MSFT.pdf": ("6c1341c55d2f9d0ea6ce9b7eba96f7a021a9349d0286b70b6a1cc45c3d0c00cc", 2223272),
    "docs/2023 Q1 NVDA.pdf": ("ca78ca0c284002c6c3a6d4c8faf9effc423badaa39ceb39e2c7c5831e4197068", 414180),
    "docs/2023 Q2 AAPL.pdf": ("785c1732ff8b7798e052bbc72ebdac52677b9589c3906d7b7a480dd5eccb34c0", 263607),
    "docs/2023 Q2 AMZN.pdf": ("2899304ff903c767b01706b841a498752cbbbfb60aab16099c2afd9e8c42bd9d", 501518),
    "docs/2023 Q2 INTC.pdf": ("a128fa6598af3ce0cde0b55db2966b0354925290ce86beb811344924a345d379", 3598962),
    "docs/2023 Q2 MSFT.pdf": ("4279115b03c25dd1eeb7bc5a662a306534307fe7458299d46dca1c3da02c6d52", 2141685),
    "docs/2023 Q2 NVDA.pdf": ("893dfb1d2d280ac5587585f9360e68054c8a84854a270dbcf859905174a47823", 458891),
    "docs/2023 Q3 AAPL.pdf": ("7b9b54830f070aab56cd842b391dd81d21613aacda2cb92234f43b997930b0ea", 268231),
    "docs/2023 Q3 AMZN.pdf": ("07a751b31d42d87650797b51d2d664d74b0b6252945827e5dd7d1053dda92f3a", 508272),
    "docs/2023 Q3 INTC.pdf": ("9caae5762168bd2afe493c9f7d6f4f44a0c2ec5be5f3858734757bcea8cfe2aa", 3657048),
    "docs/2023 Q3 MSFT.pdf": ("f8e91642e77bd7fe276aa67b769c3131165394d7a43ec3810d79c0b4797e023f", 1598357),
    "docs/2023 Q3 NVDA.pdf": ("62026f716f636cac404bcf297c19adf545be4c22e8540f689f90a6eebba6e62a", 473863),
}
_SEC_LICENSE = ("865c0af9d41257b1e35eaf84688320ae25aff5d3b014a4577b4de6e2e66142db", 1065)

_WTQ_ZIP = "https://github.com/ppasupat/WikiTableQuestions/releases/download/v1.0.2/WikiTableQuestions-1.0.2.zip"
#: ``data/training.tsv`` of WikiTableQuestions v1.0.2 (the repository's tag v1.0.2).
WTQ_TRAINING_SHA256 = "38ed908ab897d1df37852d2c96a2c6c9e0a0c4fa9306cbef912965ef7670b9d0"

_SPIQA = ("google/spiqa", "main")
_SPIQA_JSON = "test-A/SPIQA_testA.json"


def _spiqa_pdfs(downloads: Path) -> list[Remote]:
    """One arXiv PDF per paper of the fetched test-A JSON."""
    data = json.loads((downloads / _SPIQA_JSON).read_text(encoding="utf-8"))
    return [Remote(f"https://arxiv.org/pdf/{pid}", f"test-A/pdfs/{pid}.pdf") for pid in data]


def _financebench_pdfs(downloads: Path) -> list[Remote]:
    """The filings FinanceBench's kept questions name (from the fetched question files)."""
    return [Remote(url, path) for url, path in financebench_pdfs(downloads)]


def _registry() -> dict[str, Dataset]:
    sets = [_htmlrag_test(d) for d in ("asqa", "hotpot-qa", "nq", "trivia-qa", "musique", "eli5")]
    sets += [
        Dataset(
            name="wtq_html_qa",
            title="WikiTableQuestions questions over their real Wikipedia pages (+4 distractor pages each), "
                  "built from the WikiTableQuestions v1.0.2 release, which ships the pages' HTML",
            source="https://github.com/ppasupat/WikiTableQuestions/releases/tag/v1.0.2", license="CC BY-SA 4.0",
            size="release zip (~220 MB of pages inside); 300 questions kept, 5 MB",
            needed_by=("wtq_html_qa", "fidelity_wtq", "frontier_wtq", "real_small_wtq", "paper/table5_wtq_offline",
                       "paper/figure5_offline"),
            folder="wtq-html-qa", files=(Remote(_WTQ_ZIP, "WikiTableQuestions-1.0.2.zip"),), build="wtq",
            options={"questions": 300, "seed": 0, "distractors": 4, "training_sha256": WTQ_TRAINING_SHA256},
            by_hand="WikiTableQuestions-1.0.2.zip (the release asset)"),
        Dataset(
            name="sec10q",
            title="SEC 10-Q filings of AAPL, AMZN, INTC, MSFT, NVDA (2022 Q3-2023 Q3) with 195 questions (docugami "
                  "KG-RAG-datasets v1)",
            source="https://github.com/docugami/KG-RAG-datasets/tree/main/sec-10-q", license="MIT",
            size="25 MB (20 PDFs, pinned)", needed_by=("superrag_settings", "superrag_settings_more"),
            folder="pdf/sec-10-q",
            files=(*(Remote(f"{_SEC}/sec-10-q/data/v1/{quote(p)}", p, h, n) for p, (h, n) in _SEC_FILES.items()),
                   Remote(f"{_SEC}/LICENSE", "LICENSE", *_SEC_LICENSE)),
            by_hand="qna_data.csv, LICENSE and docs/*.pdf (the folder sec-10-q/data/v1 of the repository)"),
        Dataset(
            name="financebench",
            title="FinanceBench open-source sample: 150 questions on filings of some 40 companies with their evidence "
                  "pages; the 10-K and 10-Q questions, in the sec-10-q layout (htmlrag.data.financebench)",
            source=f"https://github.com/{FB_REPO}", license="no licence file (research sample of arXiv 2311.11944); "
            "PDFs: public SEC filings",
            size="2 JSONL (1 MB, pinned) + the PDFs the kept questions name (72 filings, about 150 MB)",
            needed_by=(), folder="pdf/financebench",
            files=tuple(Remote(f"{FB_RAW}/{p}", p, *FB_PINNED[p]) for p in (FB_QUESTIONS, FB_DOCUMENTS)),
            build="financebench", options={"forms": FB_FORMS}, more_files=_financebench_pdfs,
            by_hand=f"{FB_QUESTIONS}, {FB_DOCUMENTS} and pdfs/<doc_name>.pdf (the repository at {FB_COMMIT})"),
        Dataset(
            name="docbench",
            title="DOCBENCH: 229 PDFs, 1,102 questions in five domains",
            source="https://drive.google.com/drive/folders/1yxhF1lFF2gKeTNc8Wh0EyBdMT3M4pDYr", license="see source",
            size="229 PDFs (Google Drive folder; size not stated there)", needed_by=("superrag_docbench",), folder="docbench",
            method="gdown",
            by_hand="the numbered folders of the Drive folder (each: the PDF and <n>_qa.jsonl)"),
        Dataset(
            name="spiqa",
            title="SPIQA test-A: questions on figures and tables of papers, with the papers' PDFs (arXiv)",
            source=f"{HUB}/datasets/{_SPIQA[0]}", license="CC BY 4.0 (questions); arXiv licences (PDFs)",
            size="one JSON + one arXiv PDF per paper", needed_by=("superrag_spiqa",), folder="spiqa",
            files=(Remote(f"hub:{_SPIQA[0]}@{_SPIQA[1]}:{_SPIQA_JSON}", _SPIQA_JSON),), more_files=_spiqa_pdfs,
            by_hand=f"{_SPIQA_JSON} and test-A/pdfs/<paper id>.pdf"),
        Dataset(
            name="crag",
            title="CRAG (Meta) task 1&2 dev set: questions with 5 retrieved web pages each",
            source="https://github.com/facebookresearch/CRAG/tree/main/data", license="CC BY-NC 4.0",
            size="one .jsonl.bz2 (Git LFS)", needed_by=(), folder="crag",
            files=(Remote("https://github.com/facebookresearch/CRAG/raw/main/data/crag_task_1_and_2_dev_v4.jsonl.bz2",
                          "crag_task_1_and_2_dev_v4.jsonl.bz2"),),
            by_hand="crag_task_1_and_2_dev_v4.jsonl.bz2"),
    ]
    return {d.name: d for d in sets}


#: Every downloadable dataset, by its ``conf/dataset/`` option name.
DATASETS: dict[str, Dataset] = _registry()


def get(name: str) -> Dataset:
    """The registry entry of ``name`` (``hotpot-qa`` and ``hotpot_qa`` both work).

    Raises:
        DownloadError: unknown name (the message lists the known ones).
    """
    key = name.replace("-", "_")
    if key not in DATASETS:
        raise DownloadError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
    return DATASETS[key]


# ---------------------------------------------------------------- files and checksums
def resolve_url(url: str) -> str:
    """The URL to fetch: hub files through ``HF_ENDPOINT``; others through ``HTMLRAG_DATA_MIRROR`` if set."""
    if url.startswith("hub:"):
        repo_rev, path = url[4:].split(":", 1)
        repo, rev = repo_rev.split("@", 1)
        endpoint = os.environ.get("HF_ENDPOINT", HUB).rstrip("/")
        return f"{endpoint}/datasets/{repo}/resolve/{rev}/{quote(path)}"
    mirror = os.environ.get("HTMLRAG_DATA_MIRROR", "").rstrip("/")
    if mirror:
        parts = urlsplit(url)
        return f"{mirror}/{parts.netloc}{parts.path}"
    return url


def _headers(url: str) -> dict[str, str]:
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token and url.startswith("hub:") else {}


def _hub_sha256(response: Any) -> str | None:
    """The SHA-256 the hub states for a large file (``X-Linked-Etag`` on the resolve reply or its redirect)."""
    for r in [*getattr(response, "history", []), response]:
        tag = (r.headers.get("x-linked-etag") or "").strip('"').lower()
        if _HEX64.match(tag):
            return tag
    return None


def _unreachable(ds: Dataset, url: str, exc: BaseException | str, downloads: Path, target: Path) -> SourceUnreachable:
    what = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    return SourceUnreachable(
        f"cannot download {ds.name}: {url} cannot be reached ({what}).\n"
        f"  Source: {ds.source}\n"
        f"  By hand: put {ds.by_hand} in {downloads}/, then run `htmlrag-data download {ds.name}` again (it "
        f"checks the files and builds {target}); or put a ready dataset folder at {target}.")


def fetch(url: str, dest: Path, *, sha256: str | None = None, client: Any = None,
          headers: dict[str, str] | None = None) -> tuple[str, int]:
    """Download ``url`` to ``dest`` through ``dest.part``: resumed if a part is there, verified, then moved
    into place. A complete ``dest`` (put by hand, or an earlier run) is only verified.

    Returns:
        ``(sha256, bytes)`` of ``dest``.

    Raises:
        ChecksumError: the content's SHA-256 differs from ``sha256`` or from the hub's (the part is deleted).
        DownloadError: an HTTP error, or the transfer stopped early (the part stays: run again to resume).
        httpx.TransportError: the source cannot be reached (the caller words it).
    """
    import httpx

    if dest.exists():
        digest = sha256_file(dest)
        if sha256 and digest != sha256:
            raise ChecksumError(f"{dest}: SHA-256 {digest} but {sha256} expected (a wrong or damaged file; "
                                "delete it and download again)")
        return digest, dest.stat().st_size
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    start = part.stat().st_size if part.exists() else 0
    req = dict(headers or {})
    if start:
        req["Range"] = f"bytes={start}-"
    own = client is None
    client = client or httpx.Client(timeout=httpx.Timeout(60.0, connect=15.0), follow_redirects=True)
    try:
        with client.stream("GET", url, headers=req) as r:
            stated = _hub_sha256(r)
            if r.status_code == 416 and start:  # the part already holds everything
                total = start
            elif r.status_code in (200, 206):
                mode = "ab" if r.status_code == 206 and start else "wb"  # 200 to a range request: start over
                length = r.headers.get("content-length")
                total = (start if mode == "ab" else 0) + int(length) if length and length.isdigit() else None
                with part.open(mode) as fh:
                    for piece in r.iter_bytes():  # as they arrive: a cut transfer keeps every byte received
                        fh.write(piece)
            else:
                raise DownloadError(f"{url}: HTTP {r.status_code} {r.reason_phrase}")
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.ReadTimeout) as exc:
        got = part.stat().st_size if part.exists() else 0
        raise DownloadError(f"{url}: transfer stopped after {got} bytes ({type(exc).__name__}); run the same "
                            "command again to resume") from exc
    finally:
        if own:
            client.close()
    got = part.stat().st_size
    if total is not None and got < total:
        raise DownloadError(f"{url}: {got} of {total} bytes arrived; run the same command again to resume")
    digest = sha256_file(part)
    want = sha256 or stated
    if want and digest != want:
        part.unlink()
        raise ChecksumError(f"{url}: SHA-256 {digest} but {want} expected; the download was deleted (a changed "
                            "or damaged source)")
    os.replace(part, dest)
    return digest, got


def _tree_digests(root: Path) -> dict[str, dict[str, Any]]:
    return {p.relative_to(root).as_posix(): {"sha256": sha256_file(p), "bytes": p.stat().st_size}
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != MANIFEST}


def _write_manifest(folder: Path, ds: Dataset, files: dict[str, dict[str, Any]], sources: dict[str, Any]) -> None:
    record = {"name": ds.name, "source": ds.source, "license": ds.license,
              "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "sources": sources, "files": files}
    atomic_write(folder / MANIFEST, json.dumps(record, indent=1, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def _staging(target: Path) -> Iterator[Path]:
    """A temporary folder beside ``target``, renamed to ``target`` when the block ends without error (called
    with the dataset's lock held: any other staging folder of ``target`` is a killed run's, and is removed)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f".tmp-{target.name}-*"):  # left by a killed run (the lock is ours now)
        if stale.name[len(f".tmp-{target.name}-"):].isdigit():  # not .tmp-sec-10-q-more-<pid> for sec-10-q
            shutil.rmtree(stale, ignore_errors=True)
    tmp = target.parent / f".tmp-{target.name}-{os.getpid()}"
    tmp.mkdir()
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- state
def state(ds: Dataset, data_dir: Path) -> str:
    """``verified`` (downloaded here, manifest present), ``present`` (a folder put in place without a record),
    ``partial`` (downloads started, nothing installed) or ``missing``."""
    target = data_dir / ds.folder
    if (target / MANIFEST).is_file():
        return "verified"
    if target.is_dir() and any(p.name != MANIFEST for p in target.iterdir()):
        return "present"
    downloads = data_dir / ".downloads" / ds.name
    return "partial" if downloads.is_dir() and any(downloads.rglob("*")) else "missing"


def verify(ds: Dataset, data_dir: Path) -> list[str]:
    """Files of an installed dataset whose SHA-256 or presence differs from its manifest (empty: all good).

    Raises:
        DownloadError: the dataset has no manifest (not downloaded with this command).
    """
    target = data_dir / ds.folder
    man = target / MANIFEST
    if not man.is_file():
        raise DownloadError(f"{target}: no {MANIFEST} (run `htmlrag-data download {ds.name}` to record it)")
    files = json.loads(man.read_text(encoding="utf-8"))["files"]
    bad = []
    for rel, rec in files.items():
        p = target / rel
        if not p.is_file():
            bad.append(f"{rel}: missing")
        elif sha256_file(p) != rec["sha256"]:
            bad.append(f"{rel}: SHA-256 differs from the record")
    return bad


# ---------------------------------------------------------------- download
def download(name: str, data_dir: str | Path, *, force: bool = False, client: Any = None,
             keep_downloads: bool = False) -> Path:
    """Download dataset ``name`` into ``data_dir`` (see the module docstring).

    Args:
        name: a :data:`DATASETS` name.
        data_dir: the data folder (``paths.data``).
        force: fetch and build again even when the dataset is installed.
        client: an ``httpx.Client`` (tests); one is made otherwise.
        keep_downloads: keep the fetched files in ``.downloads/`` after the build.

    Returns:
        The dataset's folder.

    Raises:
        SourceUnreachable: offline or the source refused (the message says where to put files by hand).
        ChecksumError / DownloadError: see :func:`fetch`.
    """
    from filelock import FileLock, Timeout

    ds = get(name)
    data_dir = Path(data_dir).expanduser().resolve()
    # One download of a dataset at a time per data folder (jobs of a cluster array sharing one): a second
    # waits, then finds the dataset installed. Without it both appended to the same .part files and the
    # second rename of the staged folder failed.
    lock = data_dir / ".downloads" / f"{ds.name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    held = FileLock(str(lock))
    try:
        held.acquire(timeout=0)
    except Timeout:
        log.info("%s: another download of it holds %s; waiting for it to end", ds.name, lock)
        held.acquire()
    try:
        return _download_held(ds, data_dir, force=force, client=client, keep_downloads=keep_downloads)
    finally:
        held.release()


def _download_held(ds: Dataset, data_dir: Path, *, force: bool, client: Any, keep_downloads: bool) -> Path:
    """:func:`download`'s work, with the dataset's lock held."""
    target = data_dir / ds.folder
    downloads = data_dir / ".downloads" / ds.name
    st = state(ds, data_dir)
    if st == "verified" and not force:
        log.info("%s: already in %s (checksums recorded)", ds.name, target)
        return target
    if st == "present" and not force:  # put in place by hand: record what is there
        _write_manifest(target, ds, _tree_digests(target), {"by_hand": True})
        log.info("%s: found in %s (put there by hand); checksums recorded", ds.name, target)
        return target
    if force and target.exists():
        shutil.rmtree(target)
    if ds.method == "gdown":
        return _download_gdown(ds, downloads, target)
    sources = _fetch_all(ds, downloads, target, client)
    with _staging(target) as tmp:
        if ds.build == "wtq":
            opts = dict(ds.options)
            build_wtq_html(downloads / ds.files[0].path, tmp, n=opts["questions"], seed=opts["seed"],
                           distractors=opts["distractors"], training_sha256=opts.get("training_sha256"))
        elif ds.build == "financebench":
            build_financebench(downloads, tmp, forms=tuple(ds.options["forms"]), link=not keep_downloads)
        else:
            for rel in sources:
                # linked or copied, never moved: a failed or killed build keeps every fetched file
                place_file(downloads / rel, tmp / rel, link=not keep_downloads)
        _write_manifest(tmp, ds, _tree_digests(tmp), sources)
    if not keep_downloads:
        shutil.rmtree(downloads, ignore_errors=True)
    log.info("%s: installed in %s", ds.name, target)
    return target


def _fetch_all(ds: Dataset, downloads: Path, target: Path, client: Any) -> dict[str, Any]:
    """Fetch every file of ``ds`` into ``downloads``; ``{relative path: {url, sha256, bytes, pinned}}``."""
    import httpx

    todo = list(ds.files)
    done: dict[str, Any] = {}
    while todo:
        rem = todo.pop(0)
        url = resolve_url(rem.url)
        if rem.url.startswith("hub:") and os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
            raise _unreachable(ds, url, "HF_HUB_OFFLINE is set", downloads, target)
        try:
            digest, size = fetch(url, downloads / rem.path, sha256=rem.sha256, client=client,
                                 headers=_headers(rem.url))
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol) as exc:
            raise _unreachable(ds, url, exc, downloads, target) from exc
        except httpx.TransportError as exc:
            raise _unreachable(ds, url, exc, downloads, target) from exc
        done[rem.path] = {"url": rem.url, "sha256": digest, "bytes": size, "pinned": rem.sha256 is not None}
        if not todo and ds.more_files is not None and not any(k.endswith(".pdf") for k in done):
            todo = [r for r in ds.more_files(downloads) if r.path not in done]
    return done


def _download_gdown(ds: Dataset, downloads: Path, target: Path) -> Path:
    """A Google Drive folder through ``gdown`` (``pip install gdown``) into ``downloads`` (resumed: files
    already there are not fetched again), then staged and renamed into place like the others."""
    try:
        import gdown
    except ImportError as exc:
        raise DownloadError(f"{ds.name} comes from Google Drive and needs gdown (pip install gdown); or put "
                            f"{ds.by_hand} in {target} by hand ({ds.source})") from exc
    from htmlrag.data.docbench import gdown_folder

    downloads.mkdir(parents=True, exist_ok=True)
    try:
        gdown_folder(gdown, ds.source, downloads)
    except Exception as exc:  # gdown raises many types (offline, quota, layout changes)
        raise _unreachable(ds, ds.source, exc, downloads, target) from exc
    with _staging(target) as tmp:
        for src in sorted(downloads.rglob("*")):
            if src.is_file() and not src.name.endswith(".part"):
                place_file(src, tmp / src.relative_to(downloads), link=True)
        _write_manifest(tmp, ds, _tree_digests(tmp), {"gdown": ds.source})
    shutil.rmtree(downloads, ignore_errors=True)
    return target


# ---------------------------------------------------------------- WikiTableQuestions -> wtq-html-qa
def _wtq_unescape(value: str) -> list[str]:
    r"""A WTQ ``targetValue``: ``|``-separated answers with ``\n``, ``\p`` (pipe) and ``\\`` escapes."""
    out = []
    for part in value.split("|"):
        out.append(re.sub(r"\\(.)", lambda m: {"n": "\n", "p": "|", "\\": "\\"}.get(m.group(1), m.group(1)), part))
    return [a.strip() for a in out if a.strip()]


def _page_text(html: bytes) -> str:
    try:
        return " ".join(lxml.html.fromstring(html).text_content().split()).lower()
    except Exception:  # an unparsable page never holds an answer
        return ""


def build_wtq_html(zip_path: Path, out: Path, *, n: int = 300, seed: int = 0, distractors: int = 4,
                   training_sha256: str | None = None) -> int:
    """Build the ``wtq-html-qa`` layout from the WikiTableQuestions release zip.

    Questions of ``data/training.tsv`` whose table's page is in the zip (``csv/204-csv/590.csv`` ->
    ``page/204-page/590.html``) and whose page text contains a gold answer, one question per page, ordered by
    ``sha256(seed:id)``; the first ``n`` are kept. Each gets ``distractors`` other kept pages (drawn with its
    id). Writes ``questions.jsonl`` (``{id, question, answers[], page, distractors[]}``), every used page
    as ``page/<dir>/<n>.html.gz`` and the release's licence.

    Returns:
        The number of questions written.

    Raises:
        ChecksumError: ``training.tsv`` differs from ``training_sha256``.
        DownloadError: the zip lacks ``data/training.tsv`` or holds fewer usable questions than ``n``.
    """
    with zipfile.ZipFile(zip_path) as zf:
        names = zf.namelist()
        tsv = next((x for x in names if x.endswith("data/training.tsv")), None)
        if tsv is None:
            raise DownloadError(f"{zip_path}: no data/training.tsv (not the WikiTableQuestions release zip?)")
        prefix = tsv[: -len("data/training.tsv")]
        raw = zf.read(tsv)
        digest = hashlib.sha256(raw).hexdigest()
        if training_sha256 and digest != training_sha256:
            raise ChecksumError(f"{zip_path}: data/training.tsv has SHA-256 {digest}, {training_sha256} expected")
        rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8")), delimiter="\t", quoting=csv.QUOTE_NONE))
        have = set(names)
        key = lambda r: hashlib.sha256(f"{seed}:{r['id']}".encode()).hexdigest()  # noqa: E731
        kept: list[dict[str, Any]] = []
        used: set[str] = set()
        for r in sorted(rows, key=key):
            page = re.sub(r"^csv/(\d+)-csv/(\d+)\.csv$", r"page/\1-page/\2.html", r.get("context") or "")
            answers = _wtq_unescape(r.get("targetValue") or "")
            if page in used or prefix + page not in have or not answers:
                continue
            text = _page_text(zf.read(prefix + page))
            if not any(a.lower() in text for a in answers):
                continue
            used.add(page)
            kept.append({"id": r["id"], "question": r["utterance"], "answers": answers, "page": page})
            if len(kept) == n:
                break
        if len(kept) < n:
            raise DownloadError(f"{zip_path}: only {len(kept)} usable questions, {n} asked")
        pool = [k["page"] for k in kept]
        for k in kept:
            rng = random.Random(int(hashlib.sha256(k["id"].encode()).hexdigest()[:8], 16))
            k["distractors"] = rng.sample([p for p in pool if p != k["page"]], min(distractors, len(pool) - 1))
        for page in sorted({p for k in kept for p in (k["page"], *k["distractors"])}):
            dest = out / f"{page}.gz"
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(gzip.compress(zf.read(prefix + page), mtime=0))
        lic = next((x for x in names if x == prefix + "LICENSE"), None)
        if lic:
            (out / "LICENSE").write_bytes(zf.read(lic))
        else:
            (out / "LICENSE").write_text("WikiTableQuestions (Pasupat & Liang 2015), CC BY-SA 4.0; the pages are "
                                         "Wikipedia articles (CC BY-SA).\n", encoding="utf-8")
    with (out / "questions.jsonl").open("w", encoding="utf-8") as fh:
        for k in kept:
            fh.write(json.dumps({"id": k["id"], "question": k["question"], "answers": k["answers"],
                                 "page": k["page"], "distractors": k["distractors"]}, ensure_ascii=False) + "\n")
    return len(kept)
