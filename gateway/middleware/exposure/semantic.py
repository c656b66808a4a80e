"""The semantic half of `gateway.find_tools`: static word embeddings that ship inside a PyPI wheel.

Why this model: `wordllama` (MIT) carries its 256-dimension token embeddings (16 MB, safetensors) and its
tokenizer inside the wheel, needs numpy and `tokenizers` but no torch, and embeds a sentence by averaging
token vectors: no network, no GPU, about 40 µs a query. It bridges words BM25 cannot ("get rid of" →
delete, "connect two nodes" → create relations). Alternatives measured in bench/find_quality.py; a
sentence-transformers wheel (all-MiniLM-L6-v2) would pull torch (~700 MB) in.

The files are loaded from the package folder directly: `WordLlama.load()` looks for the tokenizer in a
folder the wheel does not have and then downloads it, which must never happen here. The model is loaded
once per process (lazily, at the first search or status) and shared; a missing or broken install leaves the
lexical ranker alone and says why (`problem`). The numeric work (numpy) is `vectors.py`'s, imported with the model.
"""

import logging
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.middleware.exposure.vectors import Embedder

log = logging.getLogger(__name__)

MODEL = "wordllama l2_supercat 256d"

_lock = threading.Lock()
_loaded: list[tuple["Embedder | None", str | None]] = []
"""The process's one load of the model (it is large: loaded once, when a search first needs it), and why it is off
(None while it is on); filled once, under `_lock`."""
ready = threading.Event()
"""Set once the load ended, whether the model loaded or not (`problem`)."""
_warming = False
"""Whether `warm` started the load (it starts it once)."""


def embedder() -> "Embedder | None":
    """The process's one embedder, loaded at the first call; None (and `problem()` says why) when it cannot load."""
    with _lock:
        if not _loaded:
            try:
                from gateway.middleware.exposure import vectors  # numpy with it: only once a search needs it

                _loaded.append((vectors.load(), None))
            except Exception as exc:  # noqa: BLE001 - any failure to load means: rank lexically, and say why
                problem = f"{MODEL} could not be loaded ({type(exc).__name__}: {exc}); ranking is lexical only"
                log.warning("%s", problem)
                _loaded.append((None, problem))
            ready.set()
        return _loaded[0][0]


def warm() -> None:
    """Load the model in a worker thread, once, ahead of the first search. Most of a cold first find_tools is this load
    (numpy's import and the tokenizer's 61,000 merges: some 0.5 to 1 s on the bench host), not the index build; a
    session just listed `find_tools` as its way to hidden tools searches next, and then pays the build alone. A search
    that comes first waits for the load under `_lock`, as it would have loaded it itself."""
    global _warming
    with _lock:
        if _loaded or _warming:
            return
        _warming = True
    threading.Thread(target=embedder, name="find_tools model", daemon=True).start()


def problem() -> str | None:
    """Why the semantic ranker is off (None while it is on or not yet loaded)."""
    return _loaded[0][1] if _loaded else None


DESCRIPTION_CHARS = 300
"""What of a description is embedded: the purpose comes first; long return-value prose dilutes the mean."""


def document(name_words: list[str], description: str) -> str:
    """The text a tool is embedded as: its name's words, then the start of its description."""
    return f"{' '.join(name_words)}. {description[:DESCRIPTION_CHARS]}"


def describe(rankers: list[str]) -> dict[str, Any]:
    """What answers find_tools, for gateway.status and `gateway tools --find`."""
    on = "semantic" in rankers
    return {
        "rankers": rankers,
        "model": MODEL if on else None,
        "fusion": "scores" if on else None,
        "problem": problem(),
    }
