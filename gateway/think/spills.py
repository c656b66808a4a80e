"""The spilled captures of one loaded run: whole values read from the store, and new ones waiting to be written.

Templates render synchronously (Jinja) and the store is async, so the two meet at the edges of a change:
`Runs` reads the whole values a change may need before running it, and writes the values it spilled before
saving the state that points at them. A value is kept by its step id: a step's capture and its observation
share one spill.
"""

import gzip
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any


def spill_name(step_id: str) -> str:
    # Step ids carry `[i]` for foreach children; a digest keeps `a[1]` and `a_1_` apart after replacement.
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", step_id)[:80]
    return f"{safe}-{hashlib.sha256(step_id.encode()).hexdigest()[:8]}.json.gz"


def parse(blob: bytes) -> Any:
    """A spilled value from its stored bytes (CPU work: callers run it in a worker thread)."""
    return json.loads(gzip.decompress(blob))


class RunSpills:
    def __init__(self, location: Callable[[str], str] = str) -> None:
        self.location = location
        """Where a spill of this run is kept, by name (a file path, or the Redis hash and field)."""
        self.values: dict[str, Any] = {}
        """step id -> whole value, read from the store or spilled by this change."""
        self.pending: dict[str, bytes] = {}
        """spill name -> gzip JSON not yet written to the store."""

    def keep(self, step_id: str, data: bytes, value: Any) -> str:
        """Spill `value` (`data` is its compact JSON): written with the state's next save; returns its location."""
        name = spill_name(step_id)
        self.pending[name] = gzip.compress(data, compresslevel=6, mtime=0)  # mtime=0: same value, same bytes
        self.values[step_id] = value
        return self.location(name)


PINNED_TEXT = "~workflow"
"""The spill holding the text of the workflow version a run is pinned to (no step id contains `~`)."""
