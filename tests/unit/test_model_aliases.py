"""Model aliases (htmlrag.core.models.aliases) with a fake GGUF package: resolved wherever a model name is accepted,
assembled and converted once, cached with a lock and an atomic move, clear errors when the package is missing."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from htmlrag.core.errors import HtmlRagError
from htmlrag.core.models import aliases as ma

FAKE = ma.GgufModel(alias="fake-tiny", module="fake_gguf_pkg", package="fake-gguf-pkg", extra="gemma",
                    upstream="nobody/fake", base=True, licence="test only")


def _write_package(root: Path, version: str) -> None:
    pkg = root / "fake_gguf_pkg"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(
        "from pathlib import Path\n"
        "CALLS = []\n"
        "def assemble(output_path=None, overwrite=False):\n"
        "    p = Path(output_path)\n"
        "    p.write_bytes(b'GGUF fake payload')\n"
        "    CALLS.append(str(p))\n"
        "    return p\n")
    for old in root.glob("fake_gguf_pkg-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    info = root / f"fake_gguf_pkg-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fake-gguf-pkg\nVersion: {version}\n")


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The fake alias registered, its package importable, a converter that saves a tiny model and counts calls."""
    from tests.helpers.tiny import save_tiny

    site = tmp_path / "site"
    _write_package(site, "1.0")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "fake_gguf_pkg", raising=False)
    monkeypatch.setitem(ma.ALIASES, FAKE.alias, FAKE)
    monkeypatch.setenv("HTMLRAG_MODEL_CACHE", str(tmp_path / "cache"))
    calls: list[bytes] = []

    def convert(gguf_file: Path, out_dir: Path) -> None:
        calls.append(gguf_file.read_bytes())  # the converter reads what assemble() wrote
        time.sleep(0.3)  # long enough for a concurrent caller to arrive
        tiny = save_tiny(out_dir.parent / "src", "llama", max_position_embeddings=1024)
        tiny.rename(out_dir)

    monkeypatch.setattr(ma, "convert_gguf", convert)
    return tmp_path, site, calls


def test_alias_converts_once_and_is_cached(fake) -> None:
    tmp_path, _, calls = fake
    folder = Path(ma.resolve_model("fake-tiny"))
    assert folder == tmp_path / "cache" / "fake-tiny"
    assert calls == [b"GGUF fake payload"]
    marker = json.loads((folder / ma.MARKER).read_text())
    assert marker["version"] == "1.0" and marker["package"] == "fake-gguf-pkg"
    assert (folder / "config.json").is_file() and (folder / "tokenizer.json").is_file()
    assert Path(ma.resolve_model("fake-tiny")) == folder and len(calls) == 1  # cached: no second conversion
    leftovers = [p.name for p in (tmp_path / "cache").iterdir() if p.name not in ("fake-tiny", "fake-tiny.lock")]
    assert leftovers == []  # no temporary folder, no .gguf left behind
    assert ma.resolve_model("some/hub-model") == "some/hub-model"  # other names pass through


def test_concurrent_first_uses_convert_once(fake) -> None:
    _, _, calls = fake
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(ma.resolve_model("fake-tiny"))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(set(results)) == 1 and len(results) == 3


def test_new_package_version_reconverts(fake) -> None:
    _, site, calls = fake
    ma.resolve_model("fake-tiny")
    _write_package(site, "2.0")
    import importlib

    importlib.invalidate_caches()
    folder = Path(ma.resolve_model("fake-tiny"))
    assert len(calls) == 2 and json.loads((folder / ma.MARKER).read_text())["version"] == "2.0"


def test_failed_conversion_leaves_nothing(fake, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_path, _, _ = fake

    def broken(gguf_file: Path, out_dir: Path) -> None:
        out_dir.mkdir(parents=True)
        (out_dir / "config.json").write_text("{}")
        raise RuntimeError("disk full")

    monkeypatch.setattr(ma, "convert_gguf", broken)
    with pytest.raises(HtmlRagError, match=r"fake-tiny.*disk full"):
        ma.resolve_model("fake-tiny")
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["fake-tiny.lock"]


def test_missing_package_names_the_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gone = ma.GgufModel(alias="gone", module="no_such_gguf_pkg_xyz", package="no-such-gguf-pkg", extra="gemma",
                        upstream="x/y", base=True, licence="Some Terms")
    monkeypatch.setitem(ma.ALIASES, "gone", gone)
    monkeypatch.setenv("HTMLRAG_MODEL_CACHE", str(tmp_path))
    with pytest.raises(HtmlRagError, match=r"no-such-gguf-pkg.*Some Terms.*htmlrag-bench\[gemma\]"):
        ma.resolve_model("gone")
    assert not ma.is_installed("gone")


def test_alias_accepted_by_reader_ranker_and_token_counter(fake) -> None:
    """Every place that takes a model name loads the alias's converted folder."""
    from htmlrag.html.blocktree import build_block_tree
    from htmlrag.pruning.tokens import load_tokenizer
    from htmlrag.rankers.generative import GenerativeRanker
    from htmlrag.readers import GenerationConfig, ReadRequest
    from htmlrag.readers.hf import HFReader

    _, _, calls = fake
    reader = HFReader("fake-tiny", window=None, generation=GenerationConfig(max_new_tokens=3))
    assert reader.window == 1024 and reader.prompt_style == "completion"  # a base-model alias: few-shot prompt
    assert isinstance(reader.read([ReadRequest("Who?", "<p>Ada built it.</p>")])[0].text, str)
    ranker = GenerativeRanker("fake-tiny")
    trees = [build_block_tree("<html><body><p>one two</p><div>three four</div></body></html>", max_words=2)]
    (scores,) = ranker.score("which?", trees)
    assert scores.shape == (len(trees[0].blocks),)
    load_tokenizer.cache_clear()
    assert load_tokenizer("fake-tiny").count("hello world") > 0
    load_tokenizer.cache_clear()
    assert len(calls) == 1
