"""A reader stores answers in the response cache as it produces them (``store_every``), so a run killed in the
middle of a chunk of slow generations keeps what it already answered and resumes without asking again."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag.readers import ReadRequest, ResponseCache
from htmlrag.readers.base import FakeReader


def _requests(n: int, fail_at: int | None = None) -> list[ReadRequest]:
    return [ReadRequest(f"Which marker {'BOOM' if i == fail_at else ''} number {i}?",
                        f"<p>The marker number {i} is Stone{i}.</p>", "html", False) for i in range(n)]


@pytest.mark.parametrize(("store_every", "kept"), [(2, 4), (1, 5), (None, 0)])
def test_a_failure_mid_call_keeps_the_answers_already_generated(tmp_path: Path, store_every: int | None,
                                                               kept: int) -> None:
    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    reqs = _requests(8, fail_at=5)
    with pytest.raises(RuntimeError, match="fails on purpose"):
        FakeReader(cache=cache, fail_on="BOOM", store_every=store_every).read(reqs)
    again = FakeReader(cache=cache, store_every=store_every)
    outs = again.read(reqs[:5])
    assert [o.cached for o in outs] == [True] * kept + [False] * (5 - kept)
    assert again.calls == 5 - kept
    assert [o.text for o in outs] == [o.text for o in FakeReader().read(reqs[:5])]


def test_store_every_keeps_order_and_count(tmp_path: Path) -> None:
    reqs = _requests(7)
    a = FakeReader(cache=ResponseCache(str(tmp_path / "a.sqlite")), store_every=3).read(reqs)
    b = FakeReader().read(reqs)
    assert [o.text for o in a] == [o.text for o in b] and len(a) == 7
    assert all(f"Stone{i}" in o.text for i, o in enumerate(a))
