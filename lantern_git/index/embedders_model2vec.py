"""A model2vec model from a folder on this host, for semantic recall: ``embedder: model2vec``.

model2vec (MinishLab, MIT) distils a sentence transformer into a static table of token
vectors, as wordllama is, and its ``potion`` models are trained for retrieval. No package on
PyPI ships one of their models, and lantern never downloads at run time, so this embedder
loads a model the user fetched once into a folder (docs/embedders.md says how), named by
``LANTERN_MODEL2VEC_PATH``: the variable only, not ``lantern.yaml``, since a path belongs to
a host and the file travels with git sync. The folder must hold model2vec's three files
(``config.json``, ``model.safetensors``, ``tokenizer.json``); a missing file is an error,
never a download (``pip install 'lantern-git[model2vec]'``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import SemanticUnavailable

if TYPE_CHECKING:
    import numpy as np

INSTALL_MODEL2VEC = "pip install 'lantern-git[model2vec]'"
PATH_VARIABLE = "LANTERN_MODEL2VEC_PATH"
FILES = ("config.json", "model.safetensors", "tokenizer.json")


class Model2VecEmbedder:
    """The model2vec model in the folder ``LANTERN_MODEL2VEC_PATH`` names. Its ``name`` is
    the folder's name with a hash of its files' sizes and config: another model (or another
    version of it) is another name, so its vectors are never mixed with these."""

    def __init__(self) -> None:
        folder = os.path.expanduser(os.environ.get(PATH_VARIABLE, "").strip())
        if not folder:
            raise SemanticUnavailable(
                f"the model2vec embedder loads a model from a folder: set {PATH_VARIABLE} to "
                "it (docs/embedders.md; lantern never downloads models)"
            )
        missing = [name for name in FILES if not os.path.isfile(os.path.join(folder, name))]
        if missing:
            raise SemanticUnavailable(
                f"{PATH_VARIABLE}: {folder} is not a model2vec model folder (missing "
                f"{', '.join(missing)}; lantern never downloads models)"
            )
        try:
            import numpy  # noqa: F401 - embed's; missing, the extra is not installed
            from model2vec import StaticModel
        except ImportError as err:
            raise SemanticUnavailable(
                f"the model2vec embedder needs its extra ({err.name or 'model2vec'} is not "
                f"installed): {INSTALL_MODEL2VEC}"
            ) from None
        try:
            # A folder that exists is read, never looked up on a hub (model2vec checks first).
            self._model: Any = StaticModel.from_pretrained(folder, normalize=True)
        except Exception as err:  # a malformed file: safetensors', tokenizers' or json's error
            raise SemanticUnavailable(f"{PATH_VARIABLE}: cannot load {folder}: {err}") from None
        self.dim = int(self._model.dim)
        self.name = f"model2vec/{os.path.basename(os.path.normpath(folder))}/{_digest(folder)}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np  # found in __init__: a dictionary look-up from here on

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # One process: model2vec would otherwise start worker processes past 10,000 texts.
        vectors = self._model.encode(list(texts), use_multiprocessing=False)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)


def _digest(folder: str) -> str:
    """A short hash of the model files' sizes and the config's bytes."""
    digest = hashlib.sha1()
    for name in FILES:
        path = os.path.join(folder, name)
        digest.update(f"{name}:{os.path.getsize(path)};".encode())
    with open(os.path.join(folder, "config.json"), "rb") as handle:
        digest.update(handle.read())
    return digest.hexdigest()[:12]
