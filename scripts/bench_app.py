"""Benchmark: how long ``htmlrag serve`` takes to answer, from a cold start and per question after that.

What is measured (wall-clock seconds on this machine, client side, over HTTP on a free localhost port):

* **listening**: from starting ``python -m htmlrag serve --db DB`` to the first ``GET /api/status`` answered;
* **first answer**: from starting the server to the first ``POST /api/ask`` answered (the client asks as soon as
  the server listens, so model loading, opening the corpus and indexes, and the question itself are all in it);
* **per question**: each later ``POST /api/ask`` (one at a time), as median, p90 and max; the app's own
  ``seconds.retrieve`` of each answer is printed too.

The app keeps every text it embeds in ``DB/embeddings.sqlite``: a question asked before is answered from that
cache. Use ``--skip`` to ask questions the corpus has not seen (the log says which were asked). On the first
start over a corpus built by ``htmlrag graph build`` the app also embeds every table and figure once, in the
background (corpora built in the app do this when they are built); the log of such a run says so.

Not measured: building the corpus. The filings are built into ``DB`` first (``htmlrag graph build``) when it
holds no corpus yet; a built ``DB`` is reused. The reader is ``none`` (retrieval, section paths and evidence
regions only: no language model is reachable offline), retriever ``full`` unless ``--retriever`` says otherwise.

Printed: the figures, the goal of issue 38 (first answer <= 15 s, then <= 2 s per question) and the ratio
ours/goal, and the server's peak memory (VmHWM). ``--log`` also writes them to a file (relative paths only).

Usage::

    python scripts/bench_app.py --db bench-app-db -n 20
    python scripts/bench_app.py --db bench-app-db --retriever hybrid --log results/benchmarks/app_hybrid.log
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "pdf" / "sec-10-q"
GOAL_FIRST, GOAL_NEXT = 15.0, 2.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def questions(csv_path: Path, n: int, skip: int = 0) -> list[str]:
    with csv_path.open(encoding="utf-8-sig", newline="") as f:
        rows = [row["Question"].strip() for row in csv.DictReader(f) if row.get("Question", "").strip()]
    return rows[skip : skip + n]


def shown(path: Path) -> str:
    """A path as the log shows it: relative to the repository root (never an absolute machine path)."""
    try:
        return os.path.relpath(path.resolve(), ROOT)
    except ValueError:
        return path.name


def build(db: Path, pdfs: list[Path], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "htmlrag", "graph", "build", *map(str, pdfs), "--db", str(db)],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def request(url: str, body: dict | None = None, timeout: float = 600) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET",
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run(args: argparse.Namespace) -> list[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    db = Path(args.db)
    pdfs = sorted(Path(args.pdfs).glob("*.pdf"))
    lines = [f"htmlrag serve latency, {time.strftime('%Y-%m-%d %H:%M')}, commit {commit()}, "
             f"{os.cpu_count()} CPUs" + (f"; {args.note}" if args.note else ""),
             f"corpus: {len(pdfs)} PDFs from {shown(Path(args.pdfs))} in {shown(db)}; retriever {args.retriever}, "
             f"k {args.k}, reader none; questions {args.skip + 1}-{args.skip + args.n} of {shown(Path(args.questions))}",
             f"load average before the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}"]
    if not (db / "manifest.json").is_file():
        lines.append(f"built the corpus first (not measured below): {build(db, pdfs, env):.1f} s")
    qs = questions(Path(args.questions), args.n, args.skip)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    t0 = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "htmlrag", "serve", "--db", str(db), "--port", str(port),
                               "--results", str(db / "results")], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE if args.quiet else None)
    try:
        listening = wait_listening(base, server, t0)
        times, retrieve = [], []
        for i, q in enumerate(qs):
            t = time.perf_counter()
            status, res = request(f"{base}/api/ask", {"question": q, "retriever": args.retriever, "k": args.k})
            if status != 200:
                raise SystemExit(f"question {i + 1}: HTTP {status}: {res}")
            times.append(time.perf_counter() - (t0 if i == 0 else t))
            retrieve.append(res["seconds"]["retrieve"])
        peak = peak_rss_mb(server.pid)
    finally:
        server.terminate()
        server.wait(30)
    return lines + report(listening, times, retrieve, peak)


def wait_listening(base: str, server: subprocess.Popen, t0: float) -> float:
    while True:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with status {server.returncode}")
        try:
            if request(f"{base}/api/status", timeout=5)[0] == 200:
                return time.perf_counter() - t0
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.05)


def report(listening: float, times: list[float], retrieve: list[float], peak: float | None) -> list[str]:
    later = times[1:]
    q = statistics.quantiles(later, n=10, method="inclusive") if len(later) >= 2 else [later[0]] * 9 if later else [float("nan")] * 9
    med = statistics.median(later) if later else float("nan")
    out = [f"server listening after        {listening:7.2f} s",
           f"first answer after start      {times[0]:7.2f} s   goal {GOAL_FIRST:5.1f} s   ours/goal {times[0] / GOAL_FIRST:5.2f}",
           f"later questions (n={len(later):>3})  median {med:7.2f} s   goal {GOAL_NEXT:5.1f} s   ours/goal {med / GOAL_NEXT:5.2f}",
           f"                              p90    {q[8]:7.2f} s   max {max(later, default=float('nan')):.2f} s",
           f"app's own retrieve seconds    first {retrieve[0]:.2f}, median of later {statistics.median(retrieve[1:] or [float('nan')]):.2f}",
           f"server peak memory (VmHWM)    {peak:.0f} MB" if peak is not None else "server peak memory: n/a",
           "per question (s): " + " ".join(f"{t:.2f}" for t in times)]
    return out


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", default="bench-app-db", help="corpus folder (built from --pdfs when it holds none)")
    ap.add_argument("--pdfs", default=str(SHARED / "docs"), help="folder of the PDFs to build")
    ap.add_argument("--questions", default=str(SHARED / "qna_data.csv"), help="CSV with a Question column")
    ap.add_argument("-n", type=int, default=20, help="questions to ask (default 20)")
    ap.add_argument("--skip", type=int, default=0, help="start after this many questions (questions asked "
                    "before have their embeddings cached in the corpus folder: ask new ones)")
    ap.add_argument("-k", type=int, default=5, help="evidence per question (default 5, the Ask page's default)")
    ap.add_argument("--retriever", default="full", help="PDF retriever (default full, the Ask page's default)")
    ap.add_argument("--log", help="also write the report to this file")
    ap.add_argument("--note", help="a note for the log's first line (e.g. which code the server ran)")
    ap.add_argument("--quiet", action="store_true", help="hide the server's log")
    args = ap.parse_args()
    if not Path(args.pdfs).is_dir():
        raise SystemExit(f"no PDFs at {args.pdfs} (the 10-Q filings live in ../shared/data/pdf/sec-10-q)")
    lines = run(args)
    print("\n".join(lines))
    if args.log:
        Path(args.log).parent.mkdir(parents=True, exist_ok=True)
        Path(args.log).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
