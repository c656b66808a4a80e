"""The Think engine: YAML workflows turned into deterministic plan → execute → next instructions."""
