"""Server-rendered pages (Jinja2). Each calls the same services as its JSON twin in :mod:`htmlrag.app.api`;
a refused input is shown on the page it came from, with the status code the API would give."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from htmlrag.app.api import playground_input as _input
from htmlrag.app.api import read_uploads, state_of
from htmlrag.app.ask import HTML_RANKERS, PDF_RETRIEVERS, AskRequest
from htmlrag.app.files import servable_file
from htmlrag.app.pages import SANDBOX_CSP, mark_blocks
from htmlrag.app.playground import RANKERS, prune_page, samples
from htmlrag.app.responses import html_response, message_of, status_of, swagger_dir
from htmlrag.app.uploads import UploadError, check_upload
from htmlrag.core.errors import HtmlRagError, InputError

router = APIRouter(include_in_schema=False)
_FAILURES = (HtmlRagError, PermissionError)


def _failed(request: Request, exc: Exception) -> tuple[int, str]:
    return status_of(exc), message_of(exc, state_of(request).settings)


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse("/ask", status_code=303)


@router.get("/docs")
def api_docs(request: Request) -> HTMLResponse:
    """The JSON API: Swagger UI over ``/openapi.json`` (served locally) above a plain list of the endpoints."""
    schema = request.app.openapi()
    endpoints = [{"method": m.upper(), "path": path, "summary": op.get("summary", "")}
                 for path, ops in schema["paths"].items() for m, op in ops.items()]
    return html_response(request, "api.html", {"endpoints": endpoints, "swagger": swagger_dir() is not None})


@router.get("/docs/openapi-viewer.json")
def openapi_for_viewer(request: Request) -> dict[str, Any]:
    """``/openapi.json`` (OpenAPI 3.1) labelled 3.0.3 for the bundled Swagger UI 4, which reads only 3.0
    documents; clients should use ``/openapi.json``."""
    return {**request.app.openapi(), "openapi": "3.0.3"}


# ------------------------------------------------------------------------------------------------ documents
def _documents_page(request: Request, status: int = 200, **extra: Any) -> HTMLResponse:
    st = state_of(request)
    job_id = request.query_params.get("job")
    job = st.jobs.get(job_id) if job_id else None
    ctx = {"docs": st.library.documents(), "job": job.to_dict() if job else None, "building": st.library.building,
           "limits": {"pdf": st.settings.max_pdf_mb, "html": st.settings.max_html_mb}, **extra}
    return html_response(request, "documents.html", ctx, status)


@router.get("/documents")
def documents(request: Request) -> HTMLResponse:
    return _documents_page(request)


@router.post("/documents")
async def upload(request: Request, files: Annotated[list[UploadFile], File()]) -> Response:
    st = state_of(request)
    try:
        ups = await read_uploads([f for f in files if f.filename], st)
        job = st.builds.start(ups)
    except (UploadError, InputError) as exc:
        code, msg = _failed(request, exc)
        return _documents_page(request, code, error=msg)
    return RedirectResponse(f"/documents?job={job.id}", status_code=303)


@router.post("/documents/{doc_id}/delete")
def remove(request: Request, doc_id: str) -> Response:
    """Remove a document (the Library table's button); the page says what was removed, or why not."""
    try:
        gone = state_of(request).builds.remove(doc_id)
    except _FAILURES as exc:
        code, msg = _failed(request, exc)
        return _documents_page(request, code, error=msg)
    return _documents_page(request, removed=gone["name"])


@router.get("/view/pages/{page_id}")
def view_page(request: Request, page_id: str, block: Annotated[int | None, Query(ge=0)] = None) -> HTMLResponse:
    """An uploaded HTML page, cleaned, with one block marked as evidence; sandboxed (no script, no fetch)."""
    st = state_of(request)
    path = st.library.page_path(page_id)
    tree = st.asker.trees.get(path.read_bytes(), st.library.pages_manifest()[page_id]["name"])  # as asked
    if block is not None and block >= len(tree):
        raise InputError(f"page {page_id}: no block {block}")
    marks = {tree.blocks[block]: "evidence"} if block is not None else {}
    return HTMLResponse(mark_blocks(tree, marks), headers={"Content-Security-Policy": SANDBOX_CSP})


# ------------------------------------------------------------------------------------------------ ask
def _ask_page(request: Request, form: dict[str, Any], result: dict[str, Any] | None = None, status: int = 200,
              error: str = "") -> HTMLResponse:
    st = state_of(request)
    ctx = {"form": form, "result": result, "error": error, "docs": st.library.documents(),
           "retrievers": PDF_RETRIEVERS, "html_rankers": HTML_RANKERS, "readers": st.readers.options(),
           "building": st.library.building}
    return html_response(request, "ask.html", ctx, status)


@router.get("/ask")
def ask_form(request: Request) -> HTMLResponse:
    return _ask_page(request, {"question": "", "retriever": "full", "reader": "none", "k": 5, "docs": [],
                               "cypher": "", "budget": 2048, "html_ranker": "bm25"})


@router.post("/ask")
def ask(request: Request, question: Annotated[str, Form()] = "", retriever: Annotated[str, Form()] = "full",
        reader: Annotated[str, Form()] = "none", k: Annotated[int, Form()] = 5,
        docs: Annotated[list[str] | None, Form()] = None, cypher: Annotated[str, Form()] = "",
        budget: Annotated[int, Form()] = 2048, html_ranker: Annotated[str, Form()] = "bm25") -> HTMLResponse:
    form = {"question": question, "retriever": retriever, "reader": reader, "k": k, "docs": docs or [], "cypher": cypher,
            "budget": budget, "html_ranker": html_ranker}
    try:
        result = state_of(request).asker.ask(AskRequest(**form))
    except _FAILURES as exc:
        code, msg = _failed(request, exc)
        return _ask_page(request, form, None, code, msg)
    return _ask_page(request, form, result)


# ------------------------------------------------------------------------------------------------ playground
def _prune_page(request: Request, form: dict[str, Any], result: dict[str, Any] | None = None, status: int = 200,
                error: str = "") -> HTMLResponse:
    st = state_of(request)
    ctx = {"form": form, "result": result, "error": error, "samples": samples(st.settings.samples), "rankers": RANKERS}
    return html_response(request, "prune.html", ctx, status)


@router.get("/prune")
def prune_form(request: Request) -> HTMLResponse:
    names = samples(state_of(request).settings.samples)
    return _prune_page(request, {"sample": names[0] if names else "", "html": "", "question": "", "budget": 256,
                                 "ranker": "bm25", "max_words": 64})


@router.post("/prune")
async def prune(request: Request, sample: Annotated[str, Form()] = "", html: Annotated[str, Form()] = "",
                question: Annotated[str, Form()] = "", budget: Annotated[int, Form()] = 256,
                ranker: Annotated[str, Form()] = "bm25", max_words: Annotated[int, Form()] = 64,
                file: Annotated[UploadFile | None, File()] = None) -> HTMLResponse:
    st = state_of(request)
    form = {"sample": sample, "html": html, "question": question, "budget": budget, "ranker": ranker,
            "max_words": max_words}
    try:
        up = None
        if file is not None and file.filename:
            data = await file.read(st.settings.max_html_bytes + 1)
            up = check_upload(file.filename, data, max_pdf_bytes=0, max_html_bytes=st.settings.max_html_bytes,
                              no_pdf="the playground prunes HTML pages, not PDFs")
        raw, name = _input(st, sample, html.encode("utf-8") if html else None, up)
        if up is not None or html.strip():
            form["sample"] = ""  # the page shown is the uploaded or pasted one
        result = prune_page(raw, question, budget=budget, ranker=ranker, max_words=max_words, rankers=st.rankers,
                            tokenizer=st.settings.tokenizer, name=name)
    except _FAILURES as exc:
        code, msg = _failed(request, exc)
        return _prune_page(request, form, None, code, msg)
    result["source"] = name
    result["key"] = st.outputs.put({"cleaned": result["cleaned_marked"], "pruned": result["pruned_page"]})
    return _prune_page(request, form, result)


@router.get("/view/prune/{key}/{part}")
def view_prune(request: Request, key: str, part: str) -> HTMLResponse:
    """A playground output (``cleaned`` with kept blocks marked, or ``pruned``), sandboxed."""
    html = state_of(request).outputs.get(key, part)
    return HTMLResponse(html, headers={"Content-Security-Policy": SANDBOX_CSP})


# ------------------------------------------------------------------------------------------------ results
@router.get("/results")
def results(request: Request) -> HTMLResponse:
    exps = state_of(request).results.experiments()
    runs = [r for e in exps for r in e["runs"]]
    return html_response(request, "results.html", {"experiments": exps, "runs": runs})


@router.get("/results/run/{experiment}/{run_id}")
def run(request: Request, experiment: str, run_id: str, offset: Annotated[int, Query(ge=0)] = 0) -> HTMLResponse:
    res = state_of(request).results
    rel = f"{experiment}/{run_id}"
    return html_response(request, "run.html", {"run": res.page(rel), "questions": res.questions(rel, offset, 100)})


@router.get("/results/run/{experiment}/{run_id}/q/{qid:path}")
def question(request: Request, experiment: str, run_id: str, qid: str) -> HTMLResponse:
    """One question of a run; its id is the rest of the path, ``/`` included (links quote it whole:
    :func:`htmlrag.app.runs.question_url`)."""
    q = state_of(request).results.question(f"{experiment}/{run_id}", qid)
    return html_response(request, "question.html", {"q": q})


@router.get("/results/run/{experiment}/{run_id}/q")
def question_by_query(request: Request, experiment: str, run_id: str, id: str) -> HTMLResponse:
    """One question of a run, its id in the query (``?id=``): for ids a path cannot carry (``.``, ``..``)."""
    return question(request, experiment, run_id, id)


@router.get("/results/diff")
def diff(request: Request, a: str = "", b: str = "", metric: str | None = None, q: str | None = None) -> HTMLResponse:
    res = state_of(request).results
    runs = [r for e in res.experiments() for r in e["runs"]]
    ctx: dict[str, Any] = {"runs": runs, "a": a, "b": b, "diff": None, "pair": None, "error": ""}
    status = 200
    if a and b:
        try:
            ctx["diff"] = res.diff(a, b, metric or None)
            if q:
                ctx["pair"] = res.diff_question(a, b, q, ctx["diff"]["metric"])
        except _FAILURES as exc:
            status, ctx["error"] = _failed(request, exc)
    return html_response(request, "diff.html", ctx, status)


@router.get("/results/files/{path:path}")
def result_file(request: Request, path: str) -> FileResponse:
    """A file under the results folder (see :func:`htmlrag.app.files.servable_file`)."""
    real, media = servable_file(state_of(request).settings.results, path)
    return FileResponse(real, media_type=media, headers={"Content-Security-Policy": SANDBOX_CSP})
