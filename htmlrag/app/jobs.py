"""Background jobs with progress (building uploaded documents), run one at a time on a worker thread."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class Job:
    """A job's state as the progress bar shows it.

    Attributes:
        id: random id.
        kind: what it does (``build``).
        status: ``queued``, ``running``, ``done`` (every item built), ``failed`` (some item or the job failed).
        done, total: steps finished and planned (two per PDF: parse, then graph and indexes; one per page).
        message: the step running now (``2023 Q3 AAPL.pdf: parsing``).
        items: one record per file (name, kind, ok, error, counts).
        error: what stopped the whole job, if anything.
        started, finished: UNIX times.
    """

    id: str
    kind: str
    status: str = "queued"
    done: int = 0
    total: int = 0
    message: str = ""
    items: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    started: float = 0.0
    finished: float = 0.0

    @property
    def progress(self) -> float:
        return 1.0 if self.status in ("done", "failed") else (self.done / self.total if self.total else 0.0)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["progress"] = round(self.progress, 4)
        d["seconds"] = round((self.finished or time.time()) - self.started, 2) if self.started else 0.0
        return d


class JobRunner:
    """Runs jobs in submission order on one thread; keeps the last ``keep`` jobs for polling."""

    def __init__(self, keep: int = 50) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="htmlrag-job")
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self.keep = keep

    def submit(self, kind: str, total: int, work: Callable[[Job], None]) -> Job:
        """Queue ``work(job)``; it updates ``job.done``/``message``/``items``. An exception fails the job."""
        job = Job(id=uuid.uuid4().hex[:12], kind=kind, total=total)
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > self.keep:
                self._jobs.pop(next(iter(self._jobs)))

        def run() -> None:
            job.status, job.started = "running", time.time()
            try:
                work(job)
                job.status = "failed" if any(not i.get("ok") for i in job.items) else "done"
            except Exception as exc:  # reported to the page, not raised into the pool
                log.exception("job %s failed", job.id)
                job.status, job.error = "failed", f"{type(exc).__name__}: {exc}"
            job.finished = time.time()
            job.message = "finished"

        self._pool.submit(run)
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def running(self) -> Job | None:
        """The job in progress or queued, if any."""
        with self._lock:
            return next((j for j in self._jobs.values() if j.status in ("queued", "running")), None)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
