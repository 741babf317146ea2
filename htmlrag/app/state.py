"""Everything one app process holds: settings, documents, jobs, readers, rankers, results, playground outputs."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from htmlrag.app.ask import Asker
from htmlrag.app.builds import Builds
from htmlrag.app.jobs import JobRunner
from htmlrag.app.library import Library
from htmlrag.app.playground import Rankers
from htmlrag.app.readers import Readers
from htmlrag.app.runs import Results
from htmlrag.app.settings import AppSettings
from htmlrag.core.errors import InputError


@dataclass
class Outputs:
    """The last few playground outputs, kept in memory so that sandboxed frames can load them by id."""

    keep: int = 32
    _items: OrderedDict[str, dict[str, str]] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def put(self, docs: dict[str, str]) -> str:
        key = uuid.uuid4().hex
        with self._lock:
            self._items[key] = docs
            while len(self._items) > self.keep:
                self._items.popitem(last=False)
        return key

    def get(self, key: str, part: str) -> str:
        with self._lock:
            docs = self._items.get(key)
        if docs is None or part not in docs:
            raise InputError("this playground output has expired; run the playground again")
        return docs[part]


class AppState:
    """The app's services, built from :class:`AppSettings` (nothing is loaded until first used)."""

    def __init__(self, settings: AppSettings) -> None:
        self.settings = settings
        self.jobs = JobRunner()
        self.library = Library(settings, self.jobs)
        self.builds = Builds(self.library)
        self.readers = Readers(settings)
        self.rankers = Rankers(settings.rank_model)
        self.results = Results(settings.results)
        self.asker = Asker(self.library, self.readers, self.rankers)
        self.outputs = Outputs()

    def status(self) -> dict[str, Any]:
        job = self.jobs.running()
        return {"host": self.settings.host, "db": str(self.settings.db), "results": str(self.settings.results),
                "documents": len(self.library.manifest().get("documents", {})),
                "pages": len(self.library.pages_manifest()), "building": self.library.building,
                "job": job.to_dict() if job else None, "readers": self.readers.options()}

    def close(self) -> None:
        self.jobs.shutdown()
        self.library.shutdown()
