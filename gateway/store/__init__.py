"""State that outlives one call: spilled outputs (and, behind the same seams, run state and shared caches)."""
