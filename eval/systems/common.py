"""Config helpers shared by the run builders (:mod:`htmlrag_bench.eval.systems.build`, :mod:`htmlrag_bench.eval.systems.docqa`): a DictConfig as plain
Python, the dataset, the reader. Kept apart so that neither builder imports the other's callers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from htmlrag.core.errors import HtmlRagError
from htmlrag.data import Example, require_pages
from htmlrag.data.download import DATASETS
from htmlrag.factory import make_reader
from htmlrag.readers import ResponseCache


def plain(node: Any) -> Any:
    """A DictConfig/ListConfig as plain Python (resolved, enums as strings)."""
    if isinstance(node, (DictConfig,)) or OmegaConf.is_config(node):
        return OmegaConf.to_container(node, resolve=True, enum_to_str=True)
    return node

def require_download(cfg: DictConfig) -> None:
    """Fail before loading when the dataset is a download (:mod:`htmlrag.data.download`) that is not there,
    naming the command that gets it (and where it would go)."""
    spec = DATASETS.get(str(cfg.dataset.name))
    loader = cfg.dataset.loader
    where = loader.get("root") or loader.get("path")
    if spec is None or not where:
        return
    data = Path(cfg.paths.data)
    inside = Path(where).resolve().is_relative_to(data.resolve())
    need = data / spec.folder if inside else Path(where)
    if not need.exists():
        key = "root" if loader.get("root") else "path"
        raise HtmlRagError(
            f"dataset {spec.name} is not here ({need}): download it with `htmlrag-data download {spec.name}` "
            f"({spec.size}, from {spec.source}) into paths.data={data}, or point dataset.loader.{key} at a copy")


def load_examples(cfg: DictConfig) -> list[Example]:
    """Load the dataset (after :func:`require_download`), apply ``limit``, and enforce ``require_pages``."""
    require_download(cfg)
    examples = instantiate(cfg.dataset.loader, _convert_="all")
    if cfg.dataset.limit is not None:
        examples = examples[: cfg.dataset.limit]
    if cfg.dataset.require_pages:
        require_pages(examples, f"dataset {cfg.dataset.name}")
    return examples

def build_reader(cfg: DictConfig, cache_dir: Path | None) -> Any:
    """Instantiate the reader; its response cache lives in ``cache_dir/responses.sqlite``."""
    cache = ResponseCache(str(cache_dir / "responses.sqlite")) if cache_dir is not None and cfg.reader.cache else None
    if cache is not None and not cfg.reader._target_.endswith("NoneReader"):
        cache.open()  # a cache that cannot work fails now (CacheError naming the file), not after the first chunk

    spec = plain(cfg.reader)
    spec["cache"] = cache
    return make_reader(spec)
