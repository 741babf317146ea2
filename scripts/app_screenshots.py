"""Screenshots of every page of ``htmlrag serve`` (docs/img/app-*.png), taken in headless chromium driving the real
app, with the page load and answer times measured on the way.

    python scripts/app_screenshots.py                      # generated PDF + the sample lighthouse page
    python scripts/app_screenshots.py --pdf "../shared/data/pdf/sec-10-q/docs/2023 Q3 AAPL.pdf" \\
        --question "For the latest quarter, what was the total revenue generated from Apple's iPhone sales?" \\
        --page ../shared/data/wtq-html-qa/page/204-page/956.html.gz \\
        --page-question "what is the next county listed after grant county?" --results results

It starts ``python -m htmlrag serve`` on 127.0.0.1 (a fresh corpus folder unless ``--db``), uploads the PDF and the
page through the Documents page, asks, runs the playground, browses ``--results`` (and diffs its two newest runs of
one experiment), opens the API page, and prints one JSON object of timings (seconds). Needs the [app] and [dev]
extras and Debian's chromium (``apt-get install -y chromium``).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
LOAD_MS = ("() => { const n = performance.getEntriesByType('navigation')[0]; "
           "return n ? n.loadEventEnd - n.startTime : null; }")


def demo_pdf(path: Path) -> Path:
    """A two-page report with a heading, text and a revenue table (when no PDF is given)."""
    import pymupdf

    doc = pymupdf.open()
    for i, title in enumerate(("1 Results of operations", "2 Net sales by region")):
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 80), title, fontsize=16, fontname="hebo")
        page.insert_textbox(pymupdf.Rect(72, 100, 523, 220), "Total net sales grew in every region during the "
                            "quarter, driven by higher demand for widgets and services. " * 3, fontsize=10)
        if i == 1:
            for r, row in enumerate([["Region", "Net sales", "Change"], ["Americas", "35,383", "(2)%"],
                                     ["Europe", "20,205", "3 %"], ["Total net sales", "81,797", "(1)%"]]):
                for c, cell in enumerate(row):
                    rect = pymupdf.Rect(72 + 150 * c, 240 + 20 * r, 222 + 150 * c, 260 + 20 * r)
                    page.draw_rect(rect, color=(0, 0, 0), width=0.6)
                    page.insert_text((rect.x0 + 4, rect.y1 - 6), cell, fontsize=9)
    doc.save(path)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args: argparse.Namespace, db: Path, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "htmlrag", "serve", "--port", str(port), "--db", str(db), "--results", args.results]
    if args.embedding_model:
        cmd += ["--embedding-model", args.embedding_model]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2).read()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"htmlrag serve exited with {proc.returncode}") from None
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("htmlrag serve did not start")


def shrink(path: Path) -> None:
    """Requantize a screenshot to a 128-colour palette (a third of the bytes; the text stays crisp)."""
    try:
        from PIL import Image
    except ImportError:  # keep the full-colour file
        return
    with Image.open(path) as im:
        q = im.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    q.save(path, optimize=True)


def shot(page: Any, out: Path, name: str, full: bool = False) -> None:
    path = out / f"app-{name}.png"
    page.screenshot(path=str(path), full_page=full)
    shrink(path)
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}", file=sys.stderr)


def goto(page: Any, url: str, times: dict[str, Any], name: str) -> None:
    page.goto(url)
    page.wait_for_load_state("load")
    times.setdefault("page_load_s", {})[name] = round(page.evaluate(LOAD_MS) / 1000, 3)


def documents(page: Any, base: str, files: list[Path], out: Path, times: dict[str, Any]) -> None:
    goto(page, base + "/documents", times, "documents")
    page.set_input_files("#files", [str(f) for f in files])
    t0 = time.perf_counter()
    page.click("text=Upload and build")
    page.wait_for_selector("#job")
    try:  # a moment when some steps are done and others are not
        page.wait_for_function("() => { const b = document.getElementById('job-bar'); return b.value > 0 && b.value < 1; }",
                               timeout=120_000)
        shot(page, out, "documents-building")
    except Exception:  # the build finished (or is slow): no in-progress picture
        pass
    page.wait_for_selector("#job[data-status=done], #job[data-status=failed]", timeout=1_800_000)
    page.wait_for_selector("#doc-table")
    times["build_s"] = round(time.perf_counter() - t0, 1)
    shot(page, out, "documents")


def ask(page: Any, base: str, question: str, out: Path, times: dict[str, Any], retriever: str) -> None:
    goto(page, base + "/ask", times, "ask")
    page.fill("#question", question)
    page.select_option("#retriever", retriever)
    t0 = time.perf_counter()
    page.click("#ask-button")
    page.wait_for_selector("#evidence li.ev", timeout=900_000)
    page.wait_for_function("() => [...document.querySelectorAll('.view:not([hidden]) .page-img img')]"
                           ".every(i => i.complete && i.naturalWidth > 0)", timeout=120_000)
    times["answer_s"] = round(time.perf_counter() - t0, 2)
    times["answer_server"] = " ".join(page.locator("#timing").inner_text().split())
    page.evaluate("() => document.getElementById('answer').scrollIntoView()")
    time.sleep(0.5)
    shot(page, out, "ask")
    table = page.locator("li.ev:not(.selected):has(.badge:text-matches('^Table'))").first
    if table.count():
        table.click()
        page.wait_for_function("() => [...document.querySelectorAll('.view:not([hidden]) .page-img img')]"
                               ".every(i => i.complete && i.naturalWidth > 0)", timeout=120_000)
        time.sleep(0.5)
        shot(page, out, "ask-table")
    warm = ("async ([q, r]) => { const out = []; for (let i = 0; i < 3; i++) { const t = performance.now(); "
            "const res = await fetch('/api/ask', {method: 'POST', headers: {'Content-Type': 'application/json'}, "
            "body: JSON.stringify({question: q, retriever: r})}); await res.json(); "
            "out.push((performance.now() - t) / 1000); } return out; }")
    times["answer_warm_s"] = [round(x, 2) for x in page.evaluate(warm, [question, retriever])]


def playground(page: Any, base: str, html_page: Path, question: str, out: Path, times: dict[str, Any]) -> None:
    goto(page, base + "/prune", times, "prune")
    page.set_input_files("#page-file", str(html_page))
    page.fill("#pq", question)
    page.locator("#budget").evaluate("(el) => { el.value = 512; el.dispatchEvent(new Event('input')); }")
    page.fill("#max_words", "64")
    page.check("input[name=ranker][value=bm25]")
    t0 = time.perf_counter()
    page.click("#prune-button")
    page.wait_for_selector("#prune-result", timeout=300_000)
    times["prune_s"] = round(time.perf_counter() - t0, 2)
    page.locator("#cleaned-frame").element_handle().content_frame().wait_for_selector("body")
    shot(page, out, "prune")
    page.locator("#block-tree").scroll_into_view_if_needed()
    page.check("#kept-only")
    shot(page, out, "prune-blocks")


def results(page: Any, base: str, out: Path, times: dict[str, Any]) -> None:
    goto(page, base + "/results", times, "results")
    shot(page, out, "results", full=True)
    exps = json.loads(page.evaluate("async () => JSON.stringify(await (await fetch('/api/results')).json())"))
    done = [[r for r in e["runs"] if r["complete"]] for e in exps]
    runs = next((rs for rs in done if len(rs) >= 2), None) or next((rs for rs in done if rs), None)
    if not runs:
        return
    goto(page, f"{base}/results/run/{runs[0]['id']}", times, "run")
    shot(page, out, "run")
    q = page.locator("#questions tbody a").first
    if q.count():
        q.click()
        page.wait_for_load_state("load")
        shot(page, out, "question")
    if len(runs) >= 2:
        goto(page, f"{base}/results/diff?a={runs[1]['id']}&b={runs[0]['id']}", times, "diff")
        link = page.locator("#flips a:has-text('side by side')").first
        if link.count():
            link.click()
            page.wait_for_selector("#pair")
        shot(page, out, "diff", full=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pdf", action="append", help="PDF(s) to upload (default: a generated two-page report)")
    ap.add_argument("--question", default="What were total net sales?", help="question for the Ask page")
    ap.add_argument("--retriever", default="full", help="retriever for the Ask page (default full)")
    ap.add_argument("--page", default=str(ROOT / "data/pages/lighthouse.html"), help="HTML page for the playground")
    ap.add_argument("--page-question", default="Who designed Harrow Point Lighthouse?")
    ap.add_argument("--results", default="results", help="results folder to browse")
    ap.add_argument("--db", help="corpus folder (default: a fresh temporary one)")
    ap.add_argument("--embedding-model", help="embedder of the new corpus (default: bundled MiniLM)")
    ap.add_argument("--out", default=str(ROOT / "docs/img"), help="where the PNGs go")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--steps", default="documents,ask,prune,results,api",
                    help="which pages to take (ask without documents needs --db with a built corpus)")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="htmlrag-shots-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # the demo PDF and its graph go with the process
    pdfs = [Path(p) for p in args.pdf] if args.pdf else [demo_pdf(tmp / "quarterly-report.pdf")]
    db = Path(args.db) if args.db else tmp / "db"
    port = free_port()
    times: dict[str, Any] = {}
    proc = start_server(args, db, port)
    base = f"http://127.0.0.1:{port}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.set_default_timeout(120_000)
            steps = args.steps.split(",")
            if "documents" in steps:
                documents(page, base, [*pdfs, Path(args.page)], out, times)
            if "ask" in steps:
                ask(page, base, args.question, out, times, args.retriever)
            if "prune" in steps:
                playground(page, base, Path(args.page), args.page_question, out, times)
            if "results" in steps:
                results(page, base, out, times)
            if "api" in steps:
                goto(page, base + "/docs", times, "docs")
                page.wait_for_selector("#swagger-ui .opblock")
                shot(page, out, "api")
            browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=180)  # the app waits for a running build or warm-up before it exits
        except subprocess.TimeoutExpired:
            proc.kill()
    print(json.dumps(times, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
