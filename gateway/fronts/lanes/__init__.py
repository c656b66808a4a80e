"""The fast paths: one recognizer of a plain tools/call, one answer shaper, the stdio and HTTP lanes."""
