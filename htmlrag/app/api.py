"""The JSON API: one endpoint behind every page (listed in ``docs/app.md``; OpenAPI at ``/docs``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Query, Request, UploadFile
from fastapi.responses import Response
from pydantic import BaseModel, Field, model_validator

from htmlrag.app.ask import AskRequest
from htmlrag.app.pdfcheck import check_pdf
from htmlrag.app.pdfview import render_page_png
from htmlrag.app.playground import prune_page, sample_bytes, samples
from htmlrag.app.state import AppState
from htmlrag.app.uploads import Upload, UploadError, check_upload
from htmlrag.core.errors import InputError

router = APIRouter(prefix="/api", tags=["api"])


def state_of(request: Request) -> AppState:
    return request.app.state.app


def _no_lone_surrogates(value: Any, where: str = "body") -> None:
    """JSON's \\ud800 escapes make strings no encoding can write (to the database, a page, the response):
    refused here, naming the field (a 422), instead of failing later as a 500."""
    if isinstance(value, str):
        if any("\ud800" <= c <= "\udfff" for c in value):
            raise ValueError(f"{where}: holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not text")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _no_lone_surrogates(v, f"{where}[{i}]")


class _Body(BaseModel):
    """A JSON request body whose strings are all text."""

    @model_validator(mode="after")
    def _text(self) -> _Body:
        for name in type(self).model_fields:
            _no_lone_surrogates(getattr(self, name), name)
        return self


class AskBody(_Body):
    """A question (see :class:`htmlrag.app.ask.AskRequest`)."""

    question: str = Field(..., description="the question (at most 2000 characters)")
    retriever: str = Field("full", description="full | hybrid | toc | tables | reflect | cypher (PDFs)")
    reader: str = Field("none", description="none | openai | hf")
    k: int = Field(5, description="evidence items per source kind (1-50)")
    docs: list[str] = Field(default_factory=list, description="document ids to search (empty: all)")
    cypher: str = Field("", description="Cypher for the cypher retriever (checked read-only; empty: a model writes it)")
    budget: int = Field(2048, description="reader context budget in tokens")
    html_ranker: str = Field("bm25", description="bm25 | embed (HTML pages)")


class PruneBody(_Body):
    """One playground run: a sample by name or pasted HTML."""

    sample: str | None = Field(None, description="a sample page name (GET /api/samples)")
    html: str | None = Field(None, description="the page's HTML (instead of a sample)")
    question: str = ""
    budget: int = Field(256, description="token budget (16-32768)")
    ranker: str = Field("bm25", description="bm25 | embed | none")
    max_words: int = Field(64, description="block size in words (8-1024)")


async def read_uploads(files: list[UploadFile], st: AppState) -> list[Upload]:
    """Read and check every uploaded file (each within its limits, PDFs by :func:`~htmlrag.app.pdfcheck.check_pdf`;
    nothing stored when one is refused)."""
    s = st.settings
    if not files:
        raise UploadError("no file uploaded", 400)
    if len(files) > s.max_files:
        raise UploadError(f"{len(files)} files in one upload; at most {s.max_files} (upload them in parts)", 413)
    out = []
    limit = max(s.max_pdf_bytes, s.max_html_bytes)
    for f in files:
        data = await f.read(limit + 1)
        if len(data) > limit:
            raise UploadError(f"{f.filename}: over the {limit / 1e6:.1f} MB upload limit", 413)
        up = check_upload(f.filename or "upload", data, max_pdf_bytes=s.max_pdf_bytes, max_html_bytes=s.max_html_bytes)
        if up.kind == "pdf":
            check_pdf(up.name, up.data, max_pages=s.max_pdf_pages, max_stream_bytes=int(s.max_pdf_stream_mb * 1e6),
                      max_total_bytes=int(s.max_pdf_expanded_mb * 1e6),
                      max_image_pixels=int(s.max_image_megapixels * 1e6),
                      max_page_content_bytes=int(s.max_pdf_page_content_mb * 1e6),
                      max_content_bytes=int(s.max_pdf_content_mb * 1e6))
        out.append(up)
    return out


@router.get("/status", summary="Server status: documents, running job, readers")
def status(request: Request) -> dict[str, Any]:
    return state_of(request).status()


@router.get("/documents", summary="Documents: PDFs (pages, sections, tables, figures) and HTML pages")
def documents(request: Request) -> dict[str, Any]:
    st = state_of(request)
    return {"documents": st.library.documents(), "building": st.library.building}


@router.post("/documents", status_code=202, summary="Upload PDFs and HTML pages; starts a build job")
async def upload(request: Request, files: Annotated[list[UploadFile], File()]) -> dict[str, Any]:
    st = state_of(request)
    ups = await read_uploads(files, st)
    job = st.builds.start(ups)
    return {"job": job.to_dict(), "accepted": [{"name": u.name, "kind": u.kind, "bytes": len(u.data)} for u in ups]}


@router.delete("/documents/{doc_id}", summary="Remove a document: its graph nodes, index entries and files")
def remove(request: Request, doc_id: str) -> dict[str, Any]:
    return state_of(request).builds.remove(doc_id)


@router.get("/jobs/{job_id}", summary="A build job's progress")
def job(request: Request, job_id: str) -> dict[str, Any]:
    j = state_of(request).jobs.get(job_id)
    if j is None:
        raise InputError(f"no job {job_id!r} (jobs are kept in memory while the server runs)")
    return j.to_dict()


@router.get("/documents/{doc_id}/pages/{page}.png", summary="A PDF page rendered as PNG",
            response_class=Response, responses={200: {"content": {"image/png": {}}}})
def page_png(request: Request, doc_id: str, page: int, zoom: Annotated[float, Query(ge=0.5, le=3.0)] = 1.5) -> Response:
    st = state_of(request)
    png = render_page_png(st.library.pdf_path(doc_id), page, zoom=zoom,
                          max_pixels=int(st.settings.max_render_megapixels * 1e6), slots=st.settings.max_renders)
    return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})


@router.get("/readers", summary="Readers and whether each is configured (never their keys)")
def readers(request: Request) -> list[dict[str, Any]]:
    return state_of(request).readers.options()


@router.post("/ask", summary="Ask: evidence (node type, section path, page, score, regions) and answer")
def ask(request: Request, body: AskBody) -> dict[str, Any]:
    return state_of(request).asker.ask(AskRequest(**body.model_dump()))


@router.get("/samples", summary="Sample pages for the playground")
def sample_list(request: Request) -> list[str]:
    return samples(state_of(request).settings.samples)


@router.post("/prune", summary="Playground: clean, split, rank and prune one page")
def prune(request: Request, body: PruneBody) -> dict[str, Any]:
    st = state_of(request)
    raw, name = playground_input(st, body.sample, body.html.encode("utf-8") if body.html else None, None)
    res = prune_page(raw, body.question, budget=body.budget, ranker=body.ranker, max_words=body.max_words,
                     rankers=st.rankers, tokenizer=st.settings.tokenizer, name=name)
    res["source"] = name
    return res


def playground_input(st: AppState, sample: str | None, html: bytes | None, upload: Upload | None) -> tuple[bytes, str]:
    """The page to prune: an uploaded file, pasted HTML, or a sample (first given wins, in that order)."""
    s = st.settings
    if upload is not None:
        if upload.kind != "html":
            raise UploadError(f"{upload.name}: the playground prunes HTML pages, not PDFs")
        return upload.data, upload.name
    if html and html.strip():
        return check_upload("pasted.html", html, max_pdf_bytes=0, max_html_bytes=s.max_html_bytes).data, "pasted HTML"
    if sample:
        return sample_bytes(s.samples, sample), sample
    raise InputError("choose a sample, paste HTML or upload a page")


@router.get("/results", summary="Experiments under results/, their runs and artefacts")
def results(request: Request) -> list[dict[str, Any]]:
    return state_of(request).results.experiments()


@router.get("/results/runs/{experiment}/{run_id}", summary="One run: config, overrides, env, metrics, tables")
def run(request: Request, experiment: str, run_id: str) -> dict[str, Any]:
    return state_of(request).results.detail(f"{experiment}/{run_id}")


@router.get("/results/runs/{experiment}/{run_id}/questions", summary="A page of a run's questions and scores")
def run_questions(request: Request, experiment: str, run_id: str, offset: Annotated[int, Query(ge=0)] = 0,
                  limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
    return state_of(request).results.questions(f"{experiment}/{run_id}", offset, limit)


@router.get("/results/runs/{experiment}/{run_id}/questions/{qid:path}",
            summary="One question: gold answers; each system's context, answer, scores")
def run_question(request: Request, experiment: str, run_id: str, qid: str) -> dict[str, Any]:
    return state_of(request).results.question(f"{experiment}/{run_id}", qid)


@router.get("/results/diff", summary="Diff two runs question by question (flipped questions)")
def diff(request: Request, a: str, b: str, metric: str | None = None) -> dict[str, Any]:
    return state_of(request).results.diff(a, b, metric)


@router.get("/results/diff/question", summary="One question in two runs, side by side")
def diff_question(request: Request, a: str, b: str, id: str, metric: str | None = None) -> dict[str, Any]:
    return state_of(request).results.diff_question(a, b, id, metric)
