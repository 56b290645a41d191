"""Which embedder turns text into vectors for semantic recall, and the one lantern ships.

Semantic recall is an optional extra (``pip install 'lantern-git[semantic]'``): without it
lantern searches by keyword only and never imports numpy. This module imports neither numpy nor
wordllama at module level; only :func:`load_embedder` does, when a semantic path runs.

An embedder is anything with the :class:`Embedder` shape. It is chosen by ``LANTERN_EMBEDDER``,
else by ``embedder:`` in ``lantern.yaml``, else wordllama when it is installed:

- ``wordllama``: :class:`WordLlamaEmbedder` (the default with the extra);
- ``none``: keyword search only, even with the extra installed;
- a name registered in the ``lantern_git.embedders`` entry-point group (by an installed package);
- ``module:attribute``, an import path, from ``LANTERN_EMBEDDER`` only: ``lantern.yaml`` travels
  with git sync, and a file that arrives by sync must not choose code for this host to import.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .errors import InvalidInput, SemanticUnavailable

if TYPE_CHECKING:
    import numpy as np

INSTALL = "pip install 'lantern-git[semantic]'"
ENTRY_POINTS = "lantern_git.embedders"
DEFAULT = "wordllama"
NONE = "none"
# An entry point's name, as lantern.yaml may give it: no ':' (an import path), no spaces.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_IMPORT_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


@runtime_checkable
class Embedder(Protocol):
    """What lantern needs of an embedder.

    ``name`` identifies the model (its fingerprint with ``dim``): vectors made by another name
    or dim are never mixed with this one's; a changed name re-embeds every text. ``embed`` turns
    texts into an ``(len(texts), dim)`` float32 array of unit vectors (lantern normalises again
    anyway, so cosine is a dot product). It must be deterministic and must not touch the network.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class WordLlamaEmbedder:
    """WordLlama (l2_supercat, 256 dims): a token-embedding table pooled per text; 16 MB of
    weights shipped inside the wheel, no torch, ~0.15 s to load and ~30k texts/s on one core
    (docs/semantic.md). Loaded from the installed package's own folder only, with
    downloads disabled: wordllama 0.4.0's default looks for ``tokenizer/`` where the wheel
    ships ``tokenizers/``, then downloads; here a missing file is an error instead."""

    CONFIG = "l2_supercat"
    DIM = 256

    def __init__(self) -> None:
        try:
            import numpy  # noqa: F401
            import wordllama
        except ImportError as err:
            raise SemanticUnavailable(
                f"semantic recall needs the optional extra ({err.name or 'wordllama'} is not "
                f"installed): {INSTALL}"
            ) from None
        folder = os.path.dirname(wordllama.__file__)
        weights = os.path.join(folder, "weights", f"{self.CONFIG}_{self.DIM}.safetensors")
        tokenizer = os.path.join(folder, "tokenizers", f"{self.CONFIG}_tokenizer_config.json")
        for needed in (weights, tokenizer):
            # Checked first: WordLlama.load would otherwise try a download for a missing file.
            if not os.path.isfile(needed):
                raise SemanticUnavailable(
                    f"wordllama's model file {needed} is missing (lantern never downloads "
                    f"models); reinstall the extra: {INSTALL}"
                )
        try:
            self._model = wordllama.WordLlama.load(
                config=self.CONFIG, cache_dir=folder, dim=self.DIM, disable_download=True
            )
        except FileNotFoundError as err:
            raise SemanticUnavailable(f"wordllama cannot load its model: {err}") from None
        version = getattr(wordllama, "__version__", "?")
        self.dim = self.DIM
        self.name = f"wordllama-{version}/{self.CONFIG}/{os.path.getsize(weights)}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._model.embed(list(texts), norm=True), dtype=np.float32)


def extra_installed() -> bool:
    """Whether numpy and wordllama can be imported, found without importing them."""
    from importlib.util import find_spec

    try:
        return find_spec("numpy") is not None and find_spec("wordllama") is not None
    except (ImportError, ValueError):
        return False


def chosen_name(configured: object, marker: str = "lantern.yaml") -> str:
    """The embedder asked for: ``LANTERN_EMBEDDER``, else ``embedder:`` in the store's
    ``lantern.yaml`` (``configured``), else the default. The file's value is checked even when
    the variable overrides it: a bad file is reported, not hidden."""
    if configured is not None and (
        not isinstance(configured, str) or not _NAME.fullmatch(configured.strip())
    ):
        hint = (
            " (an import path is taken only from the LANTERN_EMBEDDER environment variable: "
            "lantern.yaml travels with git sync, and a synced file must not choose code to "
            "import)"
            if isinstance(configured, str) and ":" in configured
            else ""
        )
        raise InvalidInput(
            f"{marker}: 'embedder' must be wordllama, none or the name of an entry point in the "
            f"{ENTRY_POINTS} group, got {configured!r}{hint}",
            code="invalid_embedder",
        )
    env = os.environ.get("LANTERN_EMBEDDER", "").strip()
    if env:
        if env != NONE and not (_NAME.fullmatch(env) or _IMPORT_PATH.fullmatch(env)):
            raise InvalidInput(
                f"LANTERN_EMBEDDER: {env!r} is not wordllama, none, an entry-point name or a "
                "module:attribute import path",
                code="invalid_embedder",
            )
        return env
    return DEFAULT if configured is None else configured.strip()


def available(name: str) -> bool:
    """Whether a semantic path could run with embedder ``name``, without loading it: decides
    the default search mode (hybrid when available, keyword when not)."""
    if name == NONE:
        return False
    if name == DEFAULT:
        return extra_installed()
    from importlib.util import find_spec

    try:
        return find_spec("numpy") is not None
    except (ImportError, ValueError):
        return False


_LOADED: dict[str, Embedder] = {}


def load_embedder(name: str) -> Embedder:
    """The embedder ``name`` (see the module's docstring), loaded once per process. Raises
    :class:`SemanticUnavailable` for ``none`` or when it cannot be loaded."""
    if name == NONE:
        raise SemanticUnavailable(
            "semantic recall is off (embedder: none); use --mode keyword, or choose an "
            f"embedder (LANTERN_EMBEDDER=wordllama, with the extra installed: {INSTALL})"
        )
    if name in _LOADED:
        return _LOADED[name]
    if not available(name):
        raise SemanticUnavailable(
            f"semantic recall needs the optional extra (numpy and wordllama): {INSTALL}"
        )
    if name == DEFAULT:
        embedder: Any = WordLlamaEmbedder()
    elif ":" in name:
        embedder = _construct(_import_path(name), name)
    else:
        embedder = _construct(_entry_point(name), name)
    _check(embedder, name)
    _LOADED[name] = embedder
    return embedder


def _import_path(path: str) -> Any:
    import importlib

    module_name, _, attribute = path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as err:
        raise SemanticUnavailable(f"LANTERN_EMBEDDER: cannot import {path}: {err}") from None
    return target


def _entry_point(name: str) -> Any:
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINTS):
        if point.name == name:
            try:
                return point.load()
            except Exception as err:
                raise SemanticUnavailable(
                    f"embedder {name!r} ({point.value}) cannot be loaded: {err}"
                ) from None
    raise SemanticUnavailable(
        f"no embedder named {name!r}: it is not wordllama or none, and no installed package "
        f"registers it in the {ENTRY_POINTS} entry-point group"
    )


def _construct(target: Any, name: str) -> Any:
    """A class or a factory is called with no arguments; an object with ``embed`` is used."""
    if isinstance(target, type) or not hasattr(target, "embed"):
        try:
            return target()
        except SemanticUnavailable:
            raise
        except Exception as err:
            raise SemanticUnavailable(f"embedder {name!r} failed to start: {err}") from None
    return target


def _check(embedder: Any, name: str) -> None:
    ok = (
        isinstance(getattr(embedder, "name", None), str)
        and isinstance(getattr(embedder, "dim", None), int)
        and embedder.dim > 0
        and callable(getattr(embedder, "embed", None))
    )
    if not ok:
        raise SemanticUnavailable(
            f"embedder {name!r} is not an embedder: it needs a str name, an int dim > 0 and "
            "an embed(texts) method (see lantern_git.embedders.Embedder)"
        )
