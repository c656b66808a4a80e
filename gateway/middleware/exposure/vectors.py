"""The numeric half of the semantic ranker: token vectors to sentence vectors, and the catalog's as one matrix.

Kept apart from `semantic.py` so numpy (0.1 to 0.3 s to import) is loaded with the model, at the first
`find_tools`, not by every gateway process at start-up.
"""

from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")

Vectors = npt.NDArray[np.float32]


class Embedder:
    """Sentences to unit vectors (rows), by mean-pooled static token embeddings."""

    def __init__(self, table: npt.NDArray[np.float16], tokenizer: Any) -> None:
        self._table = table
        """float16 as shipped (16 MB): only the rows a text uses are widened, so RSS grows by the file's size."""
        self._tokenizer = tokenizer

    def embed(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self._table.shape[1]), dtype=np.float32)
        for row, encoding in enumerate(self._tokenizer.encode_batch(texts, add_special_tokens=False)):
            ids = [i for i in encoding.ids if 0 <= i < self._table.shape[0]]
            if ids:
                vector = self._table[ids].astype(np.float32).mean(axis=0)
                norm = float(np.linalg.norm(vector))
                if norm > 0:
                    out[row] = vector / norm
        return out

    def index(self) -> "SemanticIndex":
        """An empty catalog index embedding with this model."""
        return SemanticIndex(self)


def load() -> Embedder:
    """The model from the installed package's own files (never a download).

    Raises:
        ModuleNotFoundError: wordllama is not installed; OSError or ValueError: its files are missing or broken.
    """
    spec = find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the wordllama package is not installed; reinstall the gateway")
    from safetensors import safe_open
    from tokenizers import Tokenizer

    root = Path(next(iter(spec.submodule_search_locations)))
    with safe_open(str(root.joinpath(*_WEIGHTS)), framework="np") as weights:
        table = np.ascontiguousarray(weights.get_tensor("embedding.weight"))
    tokenizer = Tokenizer.from_file(str(root.joinpath(*_TOKENIZER)))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return Embedder(table, tokenizer)


MIN_SIMILARITY = 0.15
"""Cosine below which a tool is no semantic candidate: nonsense ("zyzzyvas", "quokka") peaks near 0.13 on
the example catalogs, so a query no tool is about still finds nothing (measured: bench/find_quality.py)."""
CANDIDATES = 50
"""The semantic ranker's list is cut here: past it, its ranks add noise to the fusion, not recall."""


EXPANSION_WEIGHT = 0.7
"""An expansion's cosine counts this much against the tool's own document's: a short request is closer to a short
query than a description is, so at 1 a tool with expansions outranks one without on any common word. 0.7: the best
recall@10 of 0.7-1.0 on the tune halves."""


BLOCK = 1_024
"""Rows per matrix-vector product. Above some 3,000 rows OpenBLAS splits one product over threads, which on a busy
machine wait for cores: 16 ms instead of 0.04 ms at 4,000 rows (measured on the 2-core bench host); blocks of this
size stay on the calling thread."""


class SemanticIndex:
    """The catalog's tool documents and their expansions as unit vectors: first one document per tool, in the
    lexical index's row order, then the expansions, grouped by tool."""

    def __init__(self, model: Embedder) -> None:
        self._model = model
        self._vectors: Vectors = np.zeros((0, 0), dtype=np.float32)
        self._tools = 0
        self._expanded: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)
        """The rows (tools) with expansions, in order."""
        self._starts: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)
        """Where each expanded row's vectors start, counted from the first expansion's."""
        self._known: dict[str, Vectors] = {}
        """Text -> its vector, for the current catalog: a rebuild (one server's list changed, a request learned)
        embeds only the texts it has not seen (250 ms for 1,000 new tools, on the event loop)."""

    def build(self, documents: list[str], expansions: list[list[str]] | None = None) -> None:
        """Embed the catalog's documents and each tool's expansions, once per text."""
        more = expansions or [[] for _ in documents]
        texts = [*documents, *(t for extra in more for t in extra)]
        fresh = [t for t in dict.fromkeys(texts) if t not in self._known]
        known = {t: self._known[t] for t in texts if t in self._known}
        known.update(zip(fresh, self._model.embed(fresh), strict=True))
        self._known, self._tools = known, len(documents)
        self._expanded = np.array([row for row, extra in enumerate(more) if extra], dtype=np.intp)
        self._starts = np.cumsum([0, *(len(extra) for extra in more if extra)])[:-1].astype(np.intp)
        self._vectors = np.stack([known[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)

    def ranked(self, query: str) -> list[tuple[int, float]]:
        """(row, cosine) of the tools closest to `query`, best first, at most CANDIDATES, none below MIN_SIMILARITY."""
        if not len(self._vectors):
            return []
        query_vector = self._model.embed([query])[0]
        every = np.concatenate(
            [self._vectors[i : i + BLOCK] @ query_vector for i in range(0, len(self._vectors), BLOCK)]
        )
        scores = every[: self._tools].copy()
        if len(self._expanded):  # an expanded tool is as close as the closest of its document and expansions
            best = np.maximum.reduceat(every[self._tools :], self._starts) * EXPANSION_WEIGHT
            scores[self._expanded] = np.maximum(scores[self._expanded], best)
        top = np.argsort(-scores)[:CANDIDATES]
        return [(int(row), float(scores[row])) for row in top if scores[row] >= MIN_SIMILARITY]
