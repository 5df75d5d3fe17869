"""An offline semantic embedder for the local engine (the ``[semantic]`` extra).

``pip install 'cortex-memory[semantic]'`` adds NumPy and the ``wordllama``
package, whose wheel ships a static word-embedding model: a 32 000-token
vocabulary of 256-dimension vectors distilled from a large language model's
token embeddings (``l2_supercat``), with its tokenizer. A text's vector is the
mean of its tokens' vectors. That knows that ``car`` and ``automobile``, or
``doctor`` and ``physician``, are related, which the built-in character
n-gram embedder cannot; it is small and fast (no neural network runs), and
far weaker than a transformer encoder on subtle paraphrases.

Two choices make the pooled vectors work for retrieval (measured on the B8
benchmark's ``dev`` half, checked on its ``test`` half): only a text's
content words are pooled (lowercased, stop words left out unless nothing
else is left), and the matrix is centred (its mean row taken away), so the
direction every token shares does not make every two texts look alike.

Nothing is downloaded, ever: :func:`static_embedder` reads the two files the
wheel installed (``wordllama/weights/l2_supercat_256.safetensors`` and
``wordllama/tokenizers/l2_supercat_tokenizer_config.json``) directly, without
importing ``wordllama``'s own code (which would configure the host's root
logger and may reach for the Hugging Face hub). The tokenizer runs with the
``tokenizers`` package that ``wordllama`` depends on.
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import threading
from typing import Any, List, Optional, Sequence, Tuple

from cortex_memory.errors import ConfigError
from cortex_memory.local.text import content_words, words_of

__all__ = ["MODEL_ID", "StaticEmbedder", "static_embedder"]

#: ``model_id`` of the bundled model, with how texts are pooled.
MODEL_ID = "wordllama-l2-supercat-256-centered-content"

_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
_TENSOR = "embedding.weight"
_DTYPES = {"F16": "<f2", "F32": "<f4"}
#: Tokens of a text that are pooled, at most (its beginning).
MAX_TOKENS = 2048

_INSTALL_HINT = "install the extra: pip install 'cortex-memory[semantic]'"


def _package_folder() -> str:
    # find_spec locates the installed package without running its __init__.
    try:
        spec = importlib.util.find_spec("wordllama")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"the semantic embedder needs the `wordllama` package: {_INSTALL_HINT}")
    return str(next(iter(spec.submodule_search_locations)))


def _read_matrix(path: str) -> Any:
    """The embedding matrix of a ``.safetensors`` file, as float32 (NumPy)."""
    import numpy as np

    with open(path, "rb") as handle:
        (header_size,) = struct.unpack("<Q", handle.read(8))
        if not 0 < header_size <= 1 << 20:
            raise ConfigError("the semantic model's weights file is damaged (bad header)")
        header = json.loads(handle.read(header_size))
        entry = header.get(_TENSOR) if isinstance(header, dict) else None
        if not isinstance(entry, dict) or entry.get("dtype") not in _DTYPES:
            raise ConfigError("the semantic model's weights file holds no usable embedding")
        rows, dims = entry["shape"]
        start, end = entry["data_offsets"]
        handle.seek(8 + header_size + start)
        raw = handle.read(end - start)
    values = np.frombuffer(raw, dtype=_DTYPES[entry["dtype"]])
    if values.size != rows * dims:
        raise ConfigError("the semantic model's weights file is truncated")
    return values.reshape(rows, dims).astype(np.float32)


class StaticEmbedder:
    """Mean-pooled static token embeddings: ``model_id``, ``dimension`` and ``embed``.

    Build it with :func:`static_embedder`. Thread-safe: the matrix is read
    only, and the tokenizer is used under a lock.
    """

    #: Cosine a vector hit needs with this model: on B8, nine in ten unrelated
    #: (turn, question) pairs sit below it, and three in four gold ones above.
    min_similarity = 0.2

    def __init__(self, matrix: Any, tokenizer: Any, model_id: str = MODEL_ID) -> None:
        self._matrix = matrix
        self._tokenizer = tokenizer
        self._model_id = model_id
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """``wordllama-l2-supercat-256``."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """256."""
        return int(self._matrix.shape[1])

    def _ids(self, texts: Sequence[str]) -> List[List[int]]:
        pooled = [" ".join(content_words(words_of(text))) for text in texts]
        with self._lock:
            # One text at a time: encode_batch starts a thread pool, which
            # then warns (and turns itself off) after a fork.
            return [
                self._tokenizer.encode(text, add_special_tokens=False).ids[:MAX_TOKENS]
                for text in pooled
            ]

    def embed(self, texts: Sequence[str]) -> List[List[float]]:
        """The mean of the vectors of each text's content-word tokens (zeros when none)."""
        import numpy as np

        out: List[List[float]] = []
        vocab = self._matrix.shape[0]
        for ids in self._ids(texts):
            if not ids:
                out.append([0.0] * self.dimension)
                continue
            index = np.clip(np.asarray(ids, dtype=np.int64), 0, vocab - 1)
            out.append(self._matrix[index].mean(axis=0).tolist())
        return out

    def __repr__(self) -> str:
        return f"StaticEmbedder({self._model_id!r})"


_CACHED: Optional[Tuple[str, StaticEmbedder]] = None
_CACHE_LOCK = threading.Lock()


def static_embedder() -> StaticEmbedder:
    """The bundled ``l2_supercat`` 256-dimension model, loaded once per process.

    Raises ``ConfigError`` (saying how to install the extra) when NumPy,
    ``tokenizers`` or the model files are missing.
    """
    global _CACHED
    folder = _package_folder()
    with _CACHE_LOCK:
        if _CACHED is not None and _CACHED[0] == folder:
            return _CACHED[1]
        try:
            import numpy  # noqa: F401
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigError(
                f"the semantic embedder needs NumPy and `tokenizers`: {_INSTALL_HINT}"
            ) from exc
        weights = os.path.join(folder, *_WEIGHTS)
        tokenizer_file = os.path.join(folder, *_TOKENIZER)
        for needed in (weights, tokenizer_file):
            if not os.path.isfile(needed):
                raise ConfigError(
                    "the installed `wordllama` package does not carry its bundled model "
                    f"({os.path.basename(needed)}); reinstall it: {_INSTALL_HINT}"
                )
        try:
            tokenizer = Tokenizer.from_file(tokenizer_file)
        except Exception as exc:  # the tokenizers library raises its own types
            raise ConfigError("the semantic model's tokenizer file cannot be read") from exc
        try:
            matrix = _read_matrix(weights)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError("the semantic model's weights file cannot be read") from exc
        embedder = StaticEmbedder(matrix - matrix.mean(axis=0), tokenizer)
        _CACHED = (folder, embedder)
        return embedder
